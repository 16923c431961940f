"""The error table: each kind of failure with its name (as the worker protocol says it) and its
exit code (as the CLI and the Python children exit with it).

The C++ side holds the same table (include/torchperf/error.h) and prints it in
`torchperf __protocol`; tests/python/test_error_kinds.py fails when the two differ."""

import enum


class ErrorKind(enum.Enum):
    RUNTIME = ("runtime", 1)
    PROTOCOL = ("protocol", 1)
    USAGE = ("usage", 2)
    CONFIG = ("config", 2)
    INVALID_RESULT = ("invalid-result", 3)
    MODEL = ("model", 4)
    WORKLOAD = ("workload", 5)
    RESULTS = ("results", 6)
    DIVERGED = ("diverged", 7)
    TRACE = ("trace", 8)
    RESOURCE_LIMIT = ("out-of-memory", 9)
    COMPILE = ("compile", 10)
    CLUSTER = ("cluster", 11)
    INTERRUPTED = ("interrupted", 130)
    TERMINATED = ("terminated", 143)

    @property
    def wire_name(self):
        """The kind's name in an error reply: {"kind": NAME, "message": ...}."""
        return self.value[0]

    @property
    def exit_code(self):
        return self.value[1]

    @classmethod
    def named(cls, name):
        for kind in cls:
            if kind.wire_name == name:
                return kind
        raise ValueError(f"no error kind named {name!r}")

    @classmethod
    def of_exit_code(cls, code):
        """The kind an exit code says (the first with it), or RUNTIME for a code not in the table."""
        for kind in cls:
            if kind.exit_code == code:
                return kind
        return cls.RUNTIME
