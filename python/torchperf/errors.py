"""The API's own error: the C++ core failed, with its one-line message and exit code.

Arguments of the wrong kind are TypeError, of the wrong value ValueError, as in Python itself.
"""


class TorchperfError(RuntimeError):
    """A run of the core that failed: `message` is its one line, `exit_code` its kind
    (docs/cli.md lists them: 4 the model, 5 the inputs, 9 a resource limit, 10 a compile, ...)."""

    def __init__(self, message, exit_code=1, command=None):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.command = command


class UsageError(TorchperfError, ValueError):
    """The core refused an argument (a knob, a value, a space): exit code 2."""
