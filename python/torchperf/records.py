"""What the Python side reads from the C++ core, as typed records: tune's answer (tune.json),
bench's and guard's answers. Each record's from_json checks the JSON once, naming the field that
is wrong (RecordError), so that code reading a record never meets a KeyError or a wrong type.

The fields are those of docs/results-schema.md and docs/json-schema.md that the Python side uses;
the C++ structs they come from are in src/sweep/tune_records.cpp. Configuration keys
("runtime=python,threads=2") are parsed here and nowhere else: parse_configuration.
"""

import enum
from dataclasses import dataclass, field

MISSING = "missing"  # RecordError's `got` for a required field that is absent


class RecordError(ValueError):
    """A JSON value that is not the record read from it: "FIELD: expected ..., got ..." or
    "FIELD: missing", FIELD its path (points[3].metrics.cosine)."""

    def __init__(self, field_path, expected, got, note=""):
        self.field_path, self.expected, self.got = field_path, expected, got
        said = (f"{field_path}: missing" if got is MISSING else
                f"{field_path}: expected {expected}, got {got}")
        super().__init__(said + (f" ({note})" if note else ""))


# --- the one configuration parser ----------------------------------------------------------------

def parse_configuration(key):
    """"runtime=python,threads=2" -> {"runtime": "python", "threads": "2"}: values are strings,
    and a value may hold "=" (only the first one separates). Parts without "=" are no knob."""
    return dict(part.split("=", 1) for part in key.split(",") if "=" in part)


def configuration_key(configuration):
    """{"runtime": "python", "threads": 2} -> "runtime=python,threads=2" (parse_configuration's
    inverse, as the core's flags take a configuration)."""
    return ",".join(f"{knob}={value}" for knob, value in configuration.items())


# --- reading JSON values --------------------------------------------------------------------------

def json_kind(value):
    """A JSON value's type as an error names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", list: "an array", dict: "an object"}.get(type(value),
                                                                   type(value).__name__)


def is_number(value):
    """A JSON number (null: the core writes a non-finite figure as null)."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def is_interval(value):
    """[low, high], either bound null."""
    return isinstance(value, list) and len(value) == 2 and all(is_number(v) for v in value)


def is_optional_interval(value):
    return value is None or is_interval(value)


def is_string(value):
    return isinstance(value, str)


def is_optional_string(value):
    return value is None or isinstance(value, str)


def is_boolean(value):
    return isinstance(value, bool)


def is_optional_boolean(value):
    return value is None or isinstance(value, bool)


def is_object(value):
    return isinstance(value, dict)


def is_array(value):
    return isinstance(value, list)


def path(where, name):
    return f"{where}.{name}" if where else name


def read(obj, where, name, accepts, expected, default=None, required=False):
    """obj[name] when `accepts` it, `default` when it is absent or null; RecordError naming
    where.name otherwise."""
    if name not in obj:
        if required:
            raise RecordError(path(where, name), expected, MISSING)
        return default
    value = obj[name]
    if not accepts(value):
        raise RecordError(path(where, name), expected, json_kind(value))
    return default if value is None else value


def read_object(value, where, expected="an object"):
    if not isinstance(value, dict):
        raise RecordError(where, expected, json_kind(value))
    return value


def read_enum(enum_type, value, where):
    """A string of the core's as `enum_type`'s member; RecordError listing the values it knows."""
    try:
        return enum_type(value)
    except ValueError:
        names = [f'"{m.value}"' for m in enum_type]
        raise RecordError(where, ", ".join(names[:-1]) + " or " + names[-1],
                          f'"{value}"') from None


def interval(value):
    """[low, high] (or null) as a (low, high) tuple; (None, None) for null."""
    return tuple(value) if value is not None else (None, None)


# --- tune's answer -------------------------------------------------------------------------------

class PointStatus(str, enum.Enum):
    """A point's status in the journal (a str: status == "ok" reads as before)."""
    OK = "ok"
    GUARDED = "guarded"  # measured, refused by the accuracy guard or an invalid result
    FAILED = "failed"  # no measurement


class Verdict(str, enum.Enum):
    """A head-to-head comparison's verdict for its A (the C++ Verdict)."""
    FASTER = "faster"
    INDISTINGUISHABLE = "indistinguishable"
    SLOWER = "slower"
    UNDETERMINED = "undetermined"


@dataclass(frozen=True)
class Metrics:
    """The figures of a measured point (null ones None: the core writes a non-finite figure as
    null)."""
    throughput_samples_per_s: float | None = None
    throughput_ci: tuple = (None, None)
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    cosine: float | None = None
    batch: int | None = None
    peak_memory_bytes: int | None = None
    tokens_per_s: float | None = None  # a stream of lengths (dims=...): useful tokens/s
    padding_share: float | None = None

    NUMBERS = ("throughput_samples_per_s", "latency_p50_ms", "latency_p99_ms", "cosine", "batch",
               "peak_memory_bytes", "tokens_per_s", "padding_share")

    def per_call(self, configuration):
        """The figures of one call at the configuration's batch: {batch, latency_p50_ms,
        latency_p99_ms, pass_p50_ms}. A stream of lengths times a pass over its samples as one
        call (issue 84: batch 512 and 23,389 ms for a configuration at batch 8): its batch is the
        batch knob's, its latencies a pass's spread over its batches (pass_p50_ms the pass's own);
        otherwise they are the measurement's, and pass_p50_ms None."""
        batch = str(configuration.get("batch", "n/a"))
        figures = {"batch": self.batch, "latency_p50_ms": self.latency_p50_ms,
                   "latency_p99_ms": self.latency_p99_ms, "pass_p50_ms": None}
        if self.tokens_per_s is None or not batch.isdigit() or not self.batch or \
                int(batch) >= self.batch:
            return figures
        share = int(batch) / self.batch
        scaled = lambda ms: None if ms is None else ms * share  # noqa: E731
        return {"batch": int(batch), "latency_p50_ms": scaled(self.latency_p50_ms),
                "latency_p99_ms": scaled(self.latency_p99_ms), "pass_p50_ms": self.latency_p50_ms}

    @classmethod
    def from_json(cls, value, where="metrics"):
        m = read_object(value, where, "an object or null")
        numbers = {name: read(m, where, name, is_number, "a number or null")
                   for name in cls.NUMBERS}
        ci = read(m, where, "throughput_ci", is_optional_interval, "[low, high]")
        return cls(throughput_ci=interval(ci), **numbers)


@dataclass(frozen=True)
class Point:
    """One finished point of a tune: its key, the configuration parsed from it, and its figures
    (metrics None when it failed)."""
    key: str
    configuration: dict = field(hash=False)
    status: PointStatus
    reason: str = ""
    stage: str | None = None  # absent from older journals
    brief: bool | None = None
    metrics: Metrics | None = None

    @classmethod
    def from_json(cls, value, where="point"):
        p = read_object(value, where)
        key = read(p, where, "key", is_string, "a string", required=True)
        status = read(p, where, "status", is_string, "a string", required=True)
        metrics = p.get("metrics")
        return cls(key=key, configuration=parse_configuration(key),
                   status=read_enum(PointStatus, status, path(where, "status")),
                   reason=read(p, where, "reason", is_string, "a string", default=""),
                   stage=read(p, where, "stage", is_optional_string, "a string or null"),
                   brief=read(p, where, "brief", is_optional_boolean, "a boolean or null"),
                   metrics=None if metrics is None else
                   Metrics.from_json(metrics, path(where, "metrics")))

    def to_dict(self):
        """The point as TuneResult.points lists it: key, each knob, status, figures, reason."""
        m = self.metrics or Metrics()  # a failed point has none
        low, high = m.throughput_ci
        call = m.per_call(self.configuration)
        return {"key": self.key, **self.configuration, "status": self.status.value,
                "stage": self.stage, "brief": self.brief,
                "throughput": m.throughput_samples_per_s,
                "throughput_low": low, "throughput_high": high,
                "latency_p50_ms": call["latency_p50_ms"], "latency_p99_ms": call["latency_p99_ms"],
                "pass_p50_ms": call["pass_p50_ms"],
                "cosine": m.cosine, "batch": call["batch"], "peak_memory_bytes": m.peak_memory_bytes,
                "tokens_per_s": m.tokens_per_s, "padding_share": m.padding_share,
                "reason": self.reason}


@dataclass(frozen=True)
class HeadToHead:
    """A head-to-head comparison of A against B (vs_as_given: the winner against the model as
    given). A failed one (failure not "") has no ratio, interval or verdict."""
    a: str = ""
    b: str = ""
    ratio: float | None = None
    ci: tuple = (None, None)
    rounds: int = 0
    verdict: Verdict = Verdict.UNDETERMINED
    failure: str = ""

    @classmethod
    def from_json(cls, value, where="head_to_head"):
        h = read_object(value, where, "an object or null")
        failure = read(h, where, "failure", is_string, "a string", default="")
        if failure:  # nothing was measured: its other fields are not read
            return cls(failure=failure)
        ratio = read(h, where, "ratio", is_number, "a number or null")
        ci = read(h, where, "ci", is_interval, "[low, high]", required=True)
        verdict = read(h, where, "verdict", is_string, "a string", required=True)
        return cls(a=read(h, where, "a", is_string, "a string", default=""),
                   b=read(h, where, "b", is_string, "a string", default=""),
                   ratio=ratio, ci=interval(ci),
                   rounds=read(h, where, "rounds", is_number, "a number", default=0),
                   # "" in journals written before verdicts were an enum, as the C++ reads it.
                   verdict=read_enum(Verdict, verdict or "undetermined", path(where, "verdict")),
                   failure=failure)


@dataclass(frozen=True)
class TunePlan:
    """What tune said it would do before its first point, and whether the budget fits the space
    (budget_too_small; fits: the points it pays for; budget_note: why)."""
    summary: str = ""
    points: int = 0
    estimated_s: float = 0.0
    budget_too_small: bool = False
    fits: int = 0
    budget_note: str = ""

    @classmethod
    def from_json(cls, value, where="plan"):
        p = read_object(value, where)
        return cls(summary=read(p, where, "summary", is_string, "a string", default=""),
                   points=read(p, where, "points", is_number, "a number", default=0),
                   estimated_s=read(p, where, "estimated_s", is_number, "a number", default=0.0),
                   budget_too_small=read(p, where, "budget_too_small", is_boolean, "a boolean",
                                         default=False),
                   fits=read(p, where, "fits", is_number, "a number", default=0),
                   budget_note=read(p, where, "budget_note", is_string, "a string", default=""))


@dataclass(frozen=True)
class TuneSummary:
    """tune's answer (`torchperf tune --json`, tune.json) as TuneResult reads it. No winner (None)
    is no error: a tune may have none, and winner_note says why."""
    points: tuple = ()
    winner: str | None = None
    winner_note: str = ""
    as_given: str = ""
    accuracy: str = ""
    vs_as_given: HeadToHead | None = None
    budget_exhausted: bool = False
    plan: TunePlan = TunePlan()
    careful: str = ""
    vs_careful: HeadToHead | None = None
    notes: tuple = ()
    # Other work on the machine while it ran (tune's "machine_load"), or None (not sampled).
    machine_load: dict | None = field(default=None, hash=False)

    @property
    def busy(self):
        """The tune ran while other work took at least half a core."""
        return bool(self.machine_load and self.machine_load.get("busy"))

    @classmethod
    def from_json(cls, value, where=""):
        s = read_object(value, where or "the file", "an object (tune's answer)")
        kind = s.get("kind")
        if "kind" not in s:
            raise RecordError(path(where, "kind"), '"tune"', MISSING,
                              note="tune's answer has \"kind\": \"tune\"")
        if kind != "tune":
            raise RecordError(path(where, "kind"), '"tune"',
                              f'"{kind}"' if isinstance(kind, str) else json_kind(kind))
        strings = {name: read(s, where, name, is_optional_string, "a string", default="")
                   for name in ("winner", "winner_note", "as_given", "accuracy", "careful")}
        points = read(s, where, "points", is_array, "an array", required=True)
        points = tuple(Point.from_json(p, f"{path(where, 'points')}[{i}]")
                       for i, p in enumerate(points))
        h = s.get("vs_as_given")
        careful = s.get("vs_careful")
        notes = read(s, where, "notes", is_array, "an array", default=[])
        load = s.get("machine_load")
        plan = s.get("plan")  # absent from answers of tunes before the plan was typed
        return cls(plan=TunePlan() if plan is None else TunePlan.from_json(plan, path(where, "plan")),
                   points=points, winner=strings.pop("winner") or None, **strings,
                   vs_as_given=None if h is None else
                   HeadToHead.from_json(h, path(where, "vs_as_given")),
                   vs_careful=None if careful is None else
                   HeadToHead.from_json(careful, path(where, "vs_careful")),
                   notes=tuple(str(n) for n in notes),
                   machine_load=load if isinstance(load, dict) else None,
                   budget_exhausted=read(s, where, "budget_exhausted", is_boolean, "a boolean",
                                         default=False))

    @property
    def winner_point(self):
        """The winner's Point; None without a winner (or when the points leave it out)."""
        return next((p for p in self.points if p.key == self.winner), None)

    @property
    def winner_metrics(self):
        """The winner's figures; a Metrics of None each when it has none to show."""
        point = self.winner_point
        return (point.metrics if point else None) or Metrics()

    @property
    def winner_configuration(self):
        return parse_configuration(self.winner) if self.winner else {}


# --- bench's and guard's answers -----------------------------------------------------------------

@dataclass(frozen=True)
class BenchFigures:
    """The figures BenchResult shows of bench's answer (docs/json-schema.md)."""
    throughput: float | None
    throughput_ci: tuple
    latency_ms: dict = field(hash=False)
    batch: int
    valid: bool
    invalid_reason: str = ""

    @classmethod
    def from_json(cls, value, where=""):
        answer = read_object(value, where or "the answer")
        m = read(answer, where, "measurement", is_object, "an object", required=True)
        at = path(where, "measurement")
        throughput = read(m, at, "throughput_samples_per_s", is_number, "a number", required=True)
        batch = read(m, at, "batch", is_number, "a number", required=True)
        ci = read(m, at, "throughput_ci", is_interval, "[low, high]", required=True)
        latency = m.get("latency_ms")
        if not isinstance(latency, dict) or "p50" not in latency or \
                not is_number(latency["p50"]):
            raise RecordError(path(at, "latency_ms"), "an object with p50 (ms)",
                              "an object without it" if isinstance(latency, dict)
                              else json_kind(latency))
        return cls(throughput=throughput, throughput_ci=interval(ci), latency_ms=latency,
                   batch=batch,
                   valid=read(answer, where, "valid", is_boolean, "a boolean", required=True),
                   invalid_reason=read(answer, where, "invalid_reason", is_string, "a string",
                                       default=""))


@dataclass(frozen=True)
class GuardVerdict:
    """`torchperf guard --json`'s verdict on outputs against a reference (docs/cli.md)."""
    passes: bool
    why: str = ""
    cosine: float | None = None
    accuracy: str = ""

    @classmethod
    def from_json(cls, value, where=""):
        v = read_object(value, where or "the answer")
        return cls(passes=read(v, where, "passes", is_boolean, "a boolean",
                               required=True),
                   why=read(v, where, "why", is_string, "a string", default=""),
                   cosine=read(v, where, "cosine", is_number, "a number or null"),
                   accuracy=read(v, where, "accuracy", is_string, "a string", default=""))
