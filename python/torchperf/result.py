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

ARTIFACTS = "artifacts"  # in a saved folder: the AOTInductor package, torch.compile's cache


def parse_key(key):
    """"runtime=python,threads=2" -> {"runtime": "python", "threads": "2"}."""
    return dict(part.split("=", 1) for part in key.split(",") if "=" in part)


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


class TuneResult:
    """What tune found. `points` (records; `dataframe()` with pandas), `winner`, `speedup` and
    `speedup_ci` over the model as given, `journal`, `report`, `apply(model)`, `save(path)`."""

    def __init__(self, folder, summary, environment):
        self.folder = folder
        self.summary = summary
        self.environment = environment
        here = current_environment()
        self.measured_elsewhere = elsewhere(environment, here) if environment else ""
        self._cache_artifacts = None  # torch.compile's, after apply compiled in this process

    @classmethod
    def from_folder(cls, folder):
        folder = os.path.abspath(folder)
        try:
            with open(os.path.join(folder, "tune.json")) as f:
                summary = json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(f"'{folder}': not a torchperf result (no tune.json; a folder "
                                    "that tune or result.save wrote)") from None
        except ValueError as e:
            raise ValueError(f"'{folder}/tune.json': damaged ({e})") from None
        environment_file = os.path.join(folder, "environment.json")
        if os.path.exists(environment_file):
            with open(environment_file) as f:
                environment = json.load(f)
        else:
            environment = current_environment()
            with open(environment_file, "w") as f:
                json.dump(environment, f, indent=1)
        return cls(folder, summary, environment)

    # --- what was measured ---------------------------------------------------------------

    @property
    def points(self):
        """Every finished point as a record: its configuration, status and figures."""
        records = []
        for p in self.summary.get("points", []):
            m = p.get("metrics") or {}  # a failed point has none
            ci = m.get("throughput_ci") or [None, None]
            records.append({"key": p["key"], **parse_key(p["key"]), "status": p["status"],
                            "stage": p.get("stage"), "brief": p.get("brief"),
                            "throughput": m.get("throughput_samples_per_s"),
                            "throughput_low": ci[0], "throughput_high": ci[1],
                            "latency_p50_ms": m.get("latency_p50_ms"),
                            "latency_p99_ms": m.get("latency_p99_ms"),
                            "cosine": m.get("cosine"), "batch": m.get("batch"),
                            "peak_memory_bytes": m.get("peak_memory_bytes"),
                            "reason": p.get("reason", "")})
        return records

    def dataframe(self):
        try:
            import pandas
        except ImportError:
            raise ImportError("TuneResult.dataframe() needs pandas (pip install pandas); "
                              "TuneResult.points has the same records") from None
        return pandas.DataFrame(self.points)

    @property
    def winner(self):
        """The winner: its configuration, figures and speedup over the model as given."""
        key = self.summary["winner"]
        point = next((p for p in self.points if p["key"] == key), {})
        return {"key": key, "configuration": parse_key(key),
                "throughput": point.get("throughput"),
                "throughput_ci": (point.get("throughput_low"), point.get("throughput_high")),
                "latency_p50_ms": point.get("latency_p50_ms"), "batch": point.get("batch"),
                "speedup": self.speedup, "speedup_ci": self.speedup_ci,
                "verdict": self.verdict, "note": self.summary.get("winner_note", "")}

    @property
    def as_given(self):
        return self.summary.get("as_given", "")

    @property
    def _vs_as_given(self):
        return self.summary.get("vs_as_given") or None

    @property
    def speedup(self):
        """The winner over the model as given, head to head at the winner's batch (1.0 when the
        winner is the model as given)."""
        h = self._vs_as_given
        return h["ratio"] if h and not h.get("failure") else (1.0 if self.is_as_given else None)

    @property
    def speedup_ci(self):
        h = self._vs_as_given
        return tuple(h["ci"]) if h and not h.get("failure") else (None, None)

    @property
    def verdict(self):
        """faster | indistinguishable | slower | undetermined, or "as given"."""
        if self.is_as_given:
            return "as given"
        h = self._vs_as_given
        return h["verdict"] if h and not h.get("failure") else "undetermined"

    @property
    def is_as_given(self):
        return self._vs_as_given is None and self.as_given == self.summary.get("winner")

    @property
    def beats_as_given(self):
        """Faster than the model as given by more than the noise (the interval is above 1)."""
        return self.verdict == "faster"

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
        key = self.summary["winner"]
        with open(self.journal) as f:
            for line in f:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if record.get("key") != key:
                    continue
                package = ((record.get("measurement") or {}).get("compile") or {}).get("package")
                if package:
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
                     "example_inputs.pt", "example_outputs.pt", "source.json"):
            source = os.path.join(self.folder, name)
            if os.path.exists(source):
                shutil.copy2(source, os.path.join(path, name))
        if self.summary["winner"] and parse_key(self.summary["winner"]).get("runtime", "cpp") == "cpp":
            package = self.winner_package()
            if package and os.path.exists(package):
                shutil.copy2(package, os.path.join(path, ARTIFACTS, "package.pt2"))
        if self._cache_artifacts:
            with open(os.path.join(path, ARTIFACTS, "compile_cache.bin"), "wb") as f:
                f.write(self._cache_artifacts)
        return path

    # --- display -------------------------------------------------------------------------

    def _rows(self):
        w = self.winner
        low, high = w["throughput_ci"]
        s_low, s_high = w["speedup_ci"]
        speedup = ("the model as given" if self.is_as_given else
                   f"{w['speedup']:.3f}x ({s_low:.3f}-{s_high:.3f}), {w['verdict']}"
                   if w["speedup"] is not None and s_low is not None else "not measured")
        throughput = ("?" if w["throughput"] is None else
                      f"{w['throughput']:.4g} samples/s ({low:.4g}-{high:.4g})" if low is not None
                      else f"{w['throughput']:.4g} samples/s (measured briefly: no interval)")
        rows = [("winner", w["key"]), ("throughput", f"{throughput}, batch {w['batch']}"),
                ("over the model as given", speedup), ("note", w["note"]),
                ("report", self.report)]
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
    if result.measured_elsewhere:
        warnings.warn(f"torchperf.load('{path}'): the winner was measured elsewhere "
                      f"({result.measured_elsewhere}); it may not be the fastest here: tune "
                      "again to be sure", stacklevel=2)
    return result
