"""A tune's result in Python: its points, its winner with the speedup over the model as given,
apply(model), and save/load of one folder that a deployment applies without tuning again.

A result folder (tune's out, or what save writes) holds tune.json (the core's answer), the
journal, model.pt2, the example inputs and the model's own outputs on them (apply's guard),
environment.json (where the winner was measured) and, after save, the winner's artifacts.
"""

import json
import os
import platform
import shutil
import warnings

from torchperf.error_kinds import ErrorKind
from torchperf.errors import TorchperfError
from torchperf.records import PointStatus, RecordError, TuneSummary, Verdict, json_kind
from torchperf.saved import ARTIFACTS, RESULTS_ERROR

EXPECTED = "expected a folder written by result.save or by torchperf.tune (its out)"
# Exit codes (docs/cli.md): 3 a run without a winner, 6 a results file or folder that is missing,
# damaged or foreign.
NO_WINNER = ErrorKind.INVALID_RESULT.exit_code  # a run that completed without a winner


def current_environment():
    import torch

    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    isa = sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "f16c", "sse4")))
    return {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "machine": platform.machine(), "cpu_isa": isa,
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else ""}


def elsewhere(measured, here):
    """Why `measured` (an environment.json) is not this machine's, or "" when it is."""
    reasons = []
    if measured.get("torch") != here["torch"]:
        reasons.append(f"torch {measured.get('torch')} there, {here['torch']} here")
    if measured.get("machine") != here["machine"] or \
            measured.get("cpu_capability") != here["cpu_capability"] or \
            measured.get("cpu_isa") != here["cpu_isa"]:
        reasons.append(f"CPU {measured.get('machine')} {measured.get('cpu_capability')} there, "
                       f"{here['machine']} {here['cpu_capability']} here"
                       + ("" if measured.get("cpu_capability") != here["cpu_capability"] else
                          " (other instruction sets)"))
    if measured.get("cuda", "") != here["cuda"]:
        reasons.append(f"GPU '{measured.get('cuda', '')}' there, '{here['cuda']}' here")
    return "; ".join(reasons)


def human(value):
    """808,830 above a thousand, four significant digits below: as the core's report writes it."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def head_to_head_text(h):
    """A head-to-head as a summary line: its ratio and interval with the verdict, a ratio of too
    few rounds for an interval as such, or why nothing was measured."""
    if h is None:
        return "not measured"
    if h.failure or h.ratio is None:
        return f"not measured ({h.failure or 'no rounds'})"
    low, high = h.ci
    if None in (low, high):
        return f"{h.ratio:.3f}x (no interval: {h.rounds} round(s)), {h.verdict.value}"
    return f"{h.ratio:.3f}x ({low:.3f}-{high:.3f}), {h.verdict.value}"


def read_json(path):
    """A result folder's JSON file; TorchperfError (exit 6) naming it when it cannot be read."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise TorchperfError(f"load: '{path}' is missing; {EXPECTED}",
                             exit_code=RESULTS_ERROR) from None
    except OSError as e:
        raise TorchperfError(f"load: '{path}' cannot be read ({e.strerror or e}); {EXPECTED}",
                             exit_code=RESULTS_ERROR) from None
    except ValueError as e:  # not JSON, or not text
        raise TorchperfError(f"load: '{path}' is damaged: not JSON ({e})",
                             exit_code=RESULTS_ERROR) from None


class TuneResult:
    """What tune found. `points` (records; `dataframe()` with pandas), `winner`, `speedup` and
    `speedup_ci` over the model as given, `journal`, `report`, `apply(model)`, `save(path)`."""

    def __init__(self, folder, summary, environment, record=None):
        self.folder = folder
        self.summary = summary  # the JSON as the core wrote it (tune.json, copied as is by save)
        # The same answer as typed records, read everywhere below.
        self.record = record if record is not None else TuneSummary.from_json(summary)
        self.environment = environment
        here = current_environment()
        self.measured_elsewhere = elsewhere(environment, here) if environment else ""
        self._cache_artifacts = None  # torch.compile's, after apply compiled in this process
        # What apply measured in this process (apply.AppliedCheck): the winner against the
        # careful baseline and the model as given, and against what tune stated.
        self.applied_check = None

    @classmethod
    def from_folder(cls, folder):
        """The result in `folder`, its files' shape checked: TorchperfError (exit 6) naming the
        file and the field when it is not a torchperf result."""
        folder = os.path.abspath(folder)
        if not os.path.exists(folder):
            raise TorchperfError(f"load: '{folder}' does not exist; {EXPECTED}",
                                 exit_code=RESULTS_ERROR)
        if not os.path.isdir(folder):
            raise TorchperfError(f"load: '{folder}' is a file, not a torchperf result; {EXPECTED}",
                                 exit_code=RESULTS_ERROR)
        summary_file = os.path.join(folder, "tune.json")
        if not os.path.exists(summary_file):
            journal = (": it holds a journal, which `torchperf report` reads (an interrupted tune "
                       "goes on with resume=True)"
                       if os.path.exists(os.path.join(folder, "results.jsonl")) else "")
            raise TorchperfError(f"load: '{folder}' is not a torchperf result (no tune.json); "
                                 f"{EXPECTED}{journal}", exit_code=RESULTS_ERROR)
        summary = read_json(summary_file)
        try:
            record = TuneSummary.from_json(summary)
        except RecordError as e:
            raise TorchperfError(f"load: '{summary_file}' is not tune's answer as result.save "
                                 f"writes it ({e})", exit_code=RESULTS_ERROR) from None
        environment_file = os.path.join(folder, "environment.json")
        if os.path.exists(environment_file):
            environment = read_json(environment_file)
            if not isinstance(environment, dict):
                raise TorchperfError(f"load: '{environment_file}' is damaged: expected an object "
                                     f"(where the winner was measured), got "
                                     f"{json_kind(environment)}", exit_code=RESULTS_ERROR)
        else:
            environment = current_environment()
            try:
                with open(environment_file, "w") as f:
                    json.dump(environment, f, indent=1)
            except OSError:  # a folder this process cannot write to: loaded all the same
                pass
        return cls(folder, summary, environment, record)

    # --- what was measured ---------------------------------------------------------------

    @property
    def points(self):
        """Every finished point as a record: its configuration, status and figures."""
        # Dicts (a DataFrame's rows); the typed Points are self.record.points.
        return [p.to_dict() for p in self.record.points]

    def dataframe(self):
        try:
            import pandas
        except ImportError:
            raise ImportError("TuneResult.dataframe() needs pandas (pip install pandas); "
                              "TuneResult.points has the same records") from None
        return pandas.DataFrame(self.points)

    def no_winner(self, what):
        """The error of `what` (apply, ...) on a result without a winner: exit 3, with why."""
        why = self.record.winner_note or "tune.json names none"
        return TorchperfError(f"{what}: the result in '{self.folder}' has no winner ({why}); "
                              f"see {self.journal}", exit_code=NO_WINNER)

    @property
    def winner(self):
        """The winner: its configuration, figures and speedup over the model as given.
        TorchperfError (exit 3) when the tune found none."""
        key = self.record.winner
        if not key:
            raise self.no_winner("winner")
        m = self.record.winner_metrics
        call = m.per_call(self.record.winner_configuration)
        return {"key": key, "configuration": self.record.winner_configuration,
                "throughput": m.throughput_samples_per_s, "throughput_ci": m.throughput_ci,
                "latency_p50_ms": call["latency_p50_ms"], "batch": call["batch"],
                "pass_p50_ms": call["pass_p50_ms"], "tokens_per_s": m.tokens_per_s,
                "speedup": self.speedup, "speedup_ci": self.speedup_ci,
                "verdict": self.verdict, "note": self.record.winner_note}

    @property
    def as_given(self):
        return self.record.as_given

    @property
    def _vs_as_given(self):
        # Without a winner, nothing was measured against the model as given that counts.
        return self.record.vs_as_given if self.record.winner else None

    @property
    def speedup(self):
        """The winner over the model as given, head to head at the winner's batch (1.0 when the
        winner is the model as given)."""
        h = self._vs_as_given
        return h.ratio if h and not h.failure else (1.0 if self.is_as_given else None)

    @property
    def speedup_ci(self):
        h = self._vs_as_given
        return h.ci if h and not h.failure else (None, None)

    @property
    def verdict(self):
        """faster | indistinguishable | slower | undetermined, or "as given"."""
        if self.is_as_given:
            return "as given"
        h = self._vs_as_given
        return h.verdict.value if h and not h.failure else Verdict.UNDETERMINED.value

    @property
    def is_as_given(self):
        return bool(self.record.winner) and self._vs_as_given is None and \
            self.as_given == self.record.winner

    @property
    def speedup_is_known(self):
        """The winner was measured against the model as given with an interval (or is it): a
        comparison of too few rounds for one says nothing either way."""
        return self.is_as_given or (self.speedup is not None and None not in self.speedup_ci)

    @property
    def beats_as_given(self):
        """Faster than the model as given by more than the noise (the interval is above 1)."""
        return self.verdict == Verdict.FASTER.value

    @property
    def journal(self):
        return os.path.join(self.folder, "results.jsonl")

    @property
    def report(self):
        return os.path.join(self.folder, "report.html")

    def winner_package(self):
        """The AOTInductor package the winner ran (a C++-runtime winner), from the journal."""
        saved = os.path.join(self.folder, ARTIFACTS, "package.pt2")
        if os.path.exists(saved):
            return saved
        key = self.record.winner
        if not key:
            raise self.no_winner("winner_package")
        try:
            with open(self.journal) as f:
                lines = f.readlines()
        except (OSError, ValueError):  # no journal, or not text: it names no package
            return None
        # Read leniently, by key: a damaged or foreign line is skipped, not an error.
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict) or entry.get("key") != key:
                continue
            measurement = entry.get("measurement")
            compiled = measurement.get("compile") if isinstance(measurement, dict) else None
            package = compiled.get("package") if isinstance(compiled, dict) else None
            if package and isinstance(package, str):
                return package
        return None

    # --- the winner applied --------------------------------------------------------------

    def apply(self, model):
        """A callable running the winner's settings in this process, its output checked against
        the model's own on the example inputs with tune's guard. The model itself, unchanged,
        when nothing beat it by more than the noise."""
        from torchperf import apply as applying

        return applying.apply(self, model)

    def save(self, path):
        """One folder to load() elsewhere: the winner's configuration and everything apply needs
        (the program, the AOTInductor package, torch.compile's cache artifacts once apply has
        compiled in this process)."""
        path = os.path.abspath(path)
        if os.path.exists(path) and os.listdir(path):
            raise FileExistsError(f"save: '{path}' exists and is not empty: choose another folder")
        os.makedirs(os.path.join(path, ARTIFACTS), exist_ok=True)
        for name in ("tune.json", "environment.json", "results.jsonl", "report.html", "model.pt2",
                     "module.pt", "example_inputs.pt", "example_outputs.pt", "calibration.pt",
                     "source.json"):
            source = os.path.join(self.folder, name)
            if os.path.exists(source):
                shutil.copy2(source, os.path.join(path, name))
        self._save_winner_file(path)
        from torchperf import runtimes

        winner = runtimes.of_configuration(self.record.winner_configuration) \
            if self.record.winner else None
        if winner is not None and winner.kind == runtimes.PACKAGE:
            package = self.winner_package()
            if package and os.path.exists(package):
                shutil.copy2(package, os.path.join(path, ARTIFACTS, "package.pt2"))
        engine = os.path.join(self.folder, ARTIFACTS, "engine")  # an engine's conversion
        if os.path.isdir(engine):
            shutil.copytree(engine, os.path.join(path, ARTIFACTS, "engine"))
        else:
            self._convert_engine_winner(os.path.join(path, ARTIFACTS, "engine"))
        kept = os.path.join(self.folder, ARTIFACTS, "compile_cache.bin")
        if self._cache_artifacts:
            with open(os.path.join(path, ARTIFACTS, "compile_cache.bin"), "wb") as f:
                f.write(self._cache_artifacts)
        elif os.path.exists(kept):  # what tune's worker compiled for the winner
            shutil.copy2(kept, os.path.join(path, ARTIFACTS, "compile_cache.bin"))
        return path

    def _save_winner_file(self, path):
        """winner.json for `torchperf serve SAVED` (issue 84: the saved folder had none): the
        tune's, its files named relative to the folder, so that it serves wherever the folder
        goes."""
        source = os.path.join(self.folder, "winner.json")
        if not os.path.exists(source):
            return
        winner = read_json(source)
        for key, name in (("model", "model.pt2"), ("python_module", "module.pt"),
                          ("calibration_file", "calibration.pt"), ("source", "results.jsonl")):
            if winner.get(key) and os.path.exists(os.path.join(path, name)):
                winner[key] = name
        with open(os.path.join(path, "winner.json"), "w") as f:
            json.dump(winner, f, indent=2)

    def _convert_engine_winner(self, folder):
        """An engine's winner converted into the saved folder now (issue 84: the first apply after
        load converted again, 9.6 s, and wrote into the folder it read)."""
        from torchperf import apply as applying
        from torchperf import engine_graphs, runtimes

        if not self.record.winner:
            return
        configuration = self.record.winner_configuration
        if runtimes.of_configuration(configuration).kind != runtimes.ENGINE or \
                not os.path.exists(os.path.join(self.folder, "model.pt2")):
            return
        graph = engine_graphs.graph_of(configuration)
        import torch

        inputs = applying.example_inputs(self)
        applying.engine_prepared(self, configuration, graph, torch.device("cpu"), inputs, folder)

    # --- display -------------------------------------------------------------------------

    def _rows(self):
        if not self.record.winner:
            # Printing never raises: a result without a winner says so, and why when tune said.
            points = self.record.points
            passed = sum(1 for p in points if p.status is PointStatus.OK)
            note = self.record.winner_note
            rows = [("winner", "none" + (f": {note}" if note else "")),
                    ("points", f"{passed} of {len(points)} passed"),
                    ("journal", self.journal), ("report", self.report)]
            if self.measured_elsewhere:
                rows.append(("measured elsewhere", self.measured_elsewhere))
            return rows
        m = self.record.winner_metrics
        low, high = m.throughput_ci
        speedup = ("the model as given" if self.is_as_given else
                   "not measured: the budget ran out before its head-to-head (apply checks the "
                   "winner against it in this process)" if self._vs_as_given is None else
                   head_to_head_text(self._vs_as_given))
        throughput = m.throughput_samples_per_s
        throughput = ("?" if throughput is None else
                      f"{human(throughput)} samples/s ({human(low)}-{human(high)})"
                      if None not in (low, high)
                      else f"{human(throughput)} samples/s (measured briefly: no interval)")
        careful = self.record.vs_careful
        careful = ("the winner is the careful configuration itself" if careful is None else
                   head_to_head_text(careful))
        # The batch the winner runs at (its knob): a stream's measurement counts a pass's samples.
        batch = self.record.winner_configuration.get("batch", "n/a")
        batch = batch if str(batch).isdigit() else m.batch
        rows = [("winner", self.record.winner), ("throughput", f"{throughput}, batch {batch}"),
                ("over eval()+inference_mode", careful),
                ("over the model as given", speedup), ("note", self.record.winner_note)]
        # One row: the load, then what the crowning did about it, each said once (issue 63).
        busy = list(dict.fromkeys(n.removeprefix("a busy machine: ") for n in self.record.notes
                                  if n.startswith("a busy machine")))
        if busy:
            rows.append(("busy machine", "; ".join(busy)))
        if self.applied_check is not None:
            rows.append(("applied here", self.applied_check.text()))
        rows.append(("report", self.report))
        if self.measured_elsewhere:
            rows.append(("measured elsewhere", self.measured_elsewhere))
        return rows

    def __repr__(self):
        return "TuneResult(\n" + "".join(f"  {k}: {v}\n" for k, v in self._rows()) + ")"

    def _repr_html_(self):
        import html

        cells = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                        f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
                        for k, v in self._rows())
        return f"<table>{cells}</table>"


def load(path):
    """A result saved by TuneResult.save (or a tune's out folder). A result measured under
    another torch or on another CPU loads with a warning saying so (`measured_elsewhere`)."""
    result = TuneResult.from_folder(path)
    result.loaded = True  # apply never writes into the folder it read
    if result.measured_elsewhere:
        warnings.warn(f"torchperf.load('{path}'): the winner was measured elsewhere "
                      f"({result.measured_elsewhere}); it may not be the fastest here: tune "
                      "again to be sure", stacklevel=2)
    return result
