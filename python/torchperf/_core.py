"""Runs the C++ core (the `torchperf` CLI) for the API: its JSON answer, its progress lines shown
as a bar, its errors raised with its one line, and Ctrl-C passed on so that it stops cleanly.
"""

import json
import signal
import subprocess
import sys
import threading

from torchperf import _binary
from torchperf.errors import TorchperfError, UsageError


class _Progress:
    """tqdm (tqdm.auto: a widget in Jupyter) when installed, else a line per finished point."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.bar = None
        self.last = None
        if enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            self.tqdm = tqdm

    def update(self, p):
        if not self.enabled:
            return
        text = f"{p['phase']}" + (f", best {p['best']}" if p.get("best") else "")
        if self.tqdm:
            if self.bar is None:
                self.bar = self.tqdm(total=p["planned"] or None, unit="point", desc="tune")
            if p["planned"] and self.bar.total != p["planned"]:
                self.bar.total = p["planned"]
            self.bar.n = p["done"]
            self.bar.set_postfix_str(text, refresh=False)
            self.bar.refresh()
        elif (p["phase"], p["done"]) != self.last:
            self.last = (p["phase"], p["done"])
            sys.stderr.write(f"tune: {p['done']}/{p['planned']} points, {p['failed']} failed, "
                             f"{text}, about {p['eta_s'] / 60:.1f} min left\n")

    def write(self, line):
        if self.enabled and self.bar is not None:
            self.tqdm.write(line, file=sys.stderr)
        elif self.enabled:
            sys.stderr.write(line + "\n")

    def close(self):
        if self.bar is not None:
            self.bar.close()


def run(args, progress=True, resume_hint=None, allow_exit=()):
    """(stdout, stderr lines) of `torchperf ARGS`; TorchperfError on a failure (its last line),
    KeyboardInterrupt after the core has stopped on Ctrl-C."""
    path = _binary.executable()
    # Its own session: Ctrl-C reaches this process only, which passes one SIGINT on and waits for
    # the core to keep what finished (a second SIGINT would be the core's "stop now").
    proc = subprocess.Popen([path, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=_binary.environment(), text=True,
                            start_new_session=True)
    chunks = []
    reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()), daemon=True)
    reader.start()
    bar = _Progress(progress is not None and progress is not False)
    lines = []
    interrupted = False
    try:
        while True:
            try:
                line = proc.stderr.readline()
            except KeyboardInterrupt:
                if not interrupted:
                    interrupted = True
                    proc.send_signal(signal.SIGINT)
                    bar.write("torchperf: stopping (the journal keeps every finished point)...")
                    continue
                proc.kill()
                raise
            if not line:
                break
            line = line.rstrip("\n")
            if line.startswith('{"progress"'):
                try:
                    bar.update(json.loads(line)["progress"])
                    continue
                except (ValueError, KeyError):
                    pass
            lines.append(line)
            bar.write(line)
        proc.wait()
    finally:
        bar.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join()
    stdout = chunks[0] if chunks else ""
    if interrupted or proc.returncode in (130, 143):
        hint = (f"; tune(..., out={resume_hint!r}, resume=True) goes on from it" if resume_hint
                else "")
        sys.stderr.write(f"torchperf: interrupted: every finished point is kept{hint}\n")
        raise KeyboardInterrupt
    # An allowed exit (a result that is not a success) still answers; one with no answer failed.
    if proc.returncode != 0 and (proc.returncode not in allow_exit or not stdout.strip()):
        message = next((l for l in reversed(lines) if l.strip()), f"exit {proc.returncode}")
        kind = UsageError if proc.returncode == 2 else TorchperfError
        raise kind(message.removeprefix("torchperf: error: "), proc.returncode,
                   command=[path, *args])
    return stdout, lines
