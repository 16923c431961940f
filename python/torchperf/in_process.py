"""Callables timed against each other in the caller's own process, as apply checks its winner:
each side warmed up, then timed in blocks of calls, the sides alternated round by round so that
a machine that slows down slows every side alike. Ratios are read per round.
"""

import statistics
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Ratio:
    """a over b: the median of the per-round ratios, and their range."""

    median: float
    low: float
    high: float
    rounds: int

    def text(self):
        return f"{self.median:.3f}x ({self.low:.3f}-{self.high:.3f} over {self.rounds} rounds)"


class Race:
    """Throughput (samples/s) of each side per round; sides run on the same inputs."""

    def __init__(self, sides, inputs, batch, *, rounds=7, block_s=0.1, warmup_s=0.2,
                 clock=time.perf_counter, sync=None, settle=None):
        self.sides = dict(sides)
        self.inputs = tuple(inputs)
        self.batch = batch
        self.rounds = rounds
        self.block_s = block_s
        self.warmup_s = warmup_s
        self.clock = clock
        self.sync = sync or (lambda: None)
        self.per_round = {name: [] for name in self.sides}
        # 20 ms between sides, untimed (a test gives its own).
        self.settle = settle or (lambda: time.sleep(0.02))

    def _time(self, fn, calls):
        inputs, sync, clock = self.inputs, self.sync, self.clock
        sync()
        start = clock()
        for _ in range(calls):
            fn(*inputs)
        sync()
        return clock() - start

    def _calls_per_block(self, fn):
        # Warm-up until warmup_s has passed (at least 3 calls), which also prices one call.
        calls, spent = 0, 0.0
        while calls < 3 or spent < self.warmup_s:
            spent += self._time(fn, 1)
            calls += 1
        return max(1, int(self.block_s / max(spent / calls, 1e-9)))

    def run(self):
        names = list(self.sides)
        calls = {name: self._calls_per_block(self.sides[name]) for name in names}
        for r in range(self.rounds):
            # Each round starts one side further on, so that no side always runs first.
            for name in names[r % len(names):] + names[:r % len(names)]:
                # A side's thread pool goes quiet before the next is timed: an engine's threads
                # spin for a while after its last call, on the cores the next side's would use.
                self.settle()
                seconds = self._time(self.sides[name], calls[name])
                self.per_round[name].append(self.batch * calls[name] / max(seconds, 1e-12))
        return self

    def throughput(self, name):
        return statistics.median(self.per_round[name])

    def ratio(self, a, b):
        ratios = [x / y for x, y in zip(self.per_round[a], self.per_round[b])]
        return Ratio(statistics.median(ratios), min(ratios), max(ratios), len(ratios))
