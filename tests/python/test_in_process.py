"""Callables raced in the caller's process (python/torchperf/in_process.py), on a scripted clock."""

from torchperf import in_process


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_each_side_is_timed_in_its_rounds_after_the_others_threads_went_quiet():
    clock = Clock()
    events = []

    def side(name, seconds):
        def call(*inputs):
            clock.now += seconds
            events.append(name)
        return call

    race = in_process.Race({"fast": side("fast", 0.001), "slow": side("slow", 0.002)}, (1,), 8,
                           rounds=3, block_s=0.01, warmup_s=0.005, clock=clock,
                           settle=lambda: events.append("settle"))
    race.run()
    # Fast takes half of slow's time a call: twice its samples/s, in every round.
    assert abs(race.throughput("fast") - 8000) < 1e-6
    assert abs(race.throughput("slow") - 4000) < 1e-6
    ratio = race.ratio("fast", "slow")
    assert ratio.rounds == 3 and all(abs(r - 2) < 1e-9 for r in (ratio.median, ratio.low, ratio.high))
    # Every timed block follows a settle (issue 84: an engine's threads spin after its calls).
    timed = events[events.index("settle"):]
    blocks = [i for i, e in enumerate(timed) if e == "settle"]
    assert len(blocks) == 6
    for start in blocks:
        assert timed[start + 1] in ("fast", "slow")
    # The side that starts a round moves on each round.
    firsts = [timed[start + 1] for start in blocks[::2]]
    assert firsts == ["fast", "slow", "fast"]
