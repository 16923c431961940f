"""The API's own error: the C++ core failed, with its one-line message and exit code.

Arguments of the wrong kind are TypeError, of the wrong value ValueError, as in Python itself.
"""

from torchperf.error_kinds import ErrorKind


class TorchperfError(RuntimeError):
    """A run of the core that failed: `message` is its one line, `exit_code` its kind's code in
    the error table (error_kinds.py; docs/cli.md lists them: 4 the model, 5 the inputs, 6 a results
    folder, 9 a resource limit, 10 a compile, ...) and `kind` that kind."""

    def __init__(self, message, exit_code=ErrorKind.RUNTIME.exit_code, command=None):
        if isinstance(exit_code, ErrorKind):
            exit_code = exit_code.exit_code
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.command = command

    @property
    def kind(self):
        return ErrorKind.of_exit_code(self.exit_code)


class UsageError(TorchperfError, ValueError):
    """The core refused an argument (a knob, a value, a space): exit code 2."""
