"""What a point costs through Ray against the same point measured where tune runs (issue 44).

    python bench/cluster_overhead.py TORCHPERF [ROUNDS]

Starts a one-node Ray cluster on loopback (tests/python/local_ray_cluster.py: a head with one
torchperf_slot; one node, so no point shares the machine with another), then runs the same
exhaustive tune of the built-in MLP here and on the cluster, alternating which goes first, ROUNDS
times. Each point's wall time (the driver's, from its job's start to its answer) is paired with the
same point's wall time in the local tune of that round; the difference is what the cluster adds:
Ray's task, `torchperf __node-job` starting on the node, the answer's way back. The journal's own
`dispatch_s` (the driver's wall less the node's) is printed beside it. Prints one JSON line,
then the same in words.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from local_ray_cluster import LocalRayCluster  # noqa: E402

SPACE = "runtime=cpp;batch=2,8;mode=eval;graph=eager,frozen-opt;threads=1;grad=no_grad;precision=fp32"


def walls(out):
    with open(os.path.join(out, "results.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return {r["key"]: r for r in records if r.get("record") == "point" and r["status"] == "ok"}


def tune(torchperf, out, env, cluster):
    args = [torchperf, "tune", "builtin:mlp", "--space", SPACE, "--time", "0.5", "--search",
            "exhaustive", "--leaders", "1", "--budget", "0", "--out", out, "--quiet"]
    if cluster:
        args += ["--cluster", "ray"]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"tune {'on the cluster' if cluster else 'here'} failed: {done.stderr}")
    return walls(out)


def main(argv):
    torchperf = os.path.abspath(argv[1])
    rounds = int(argv[2]) if len(argv) > 2 else 3
    extra, dispatch, local = [], [], []
    with tempfile.TemporaryDirectory(prefix="tp-overhead-") as work, LocalRayCluster(nodes=1) as c:
        env = dict(os.environ, RAY_ADDRESS=c.address)
        for r in range(rounds):
            order = [False, True] if r % 2 == 0 else [True, False]
            got = {}
            for on_cluster in order:
                got[on_cluster] = tune(torchperf, os.path.join(work, f"r{r}-{on_cluster}"), env,
                                       on_cluster)
            for key, point in got[True].items():
                if key in got[False]:
                    extra.append(point["wall_s"] - got[False][key]["wall_s"])
                    dispatch.append(point["dispatch_s"])
                    local.append(got[False][key]["wall_s"])
    quartiles = statistics.quantiles(extra, n=4) if len(extra) >= 2 else [extra[0]] * 3
    r = {"pairs": len(extra), "rounds": rounds,
         "local_point_wall_s_median": statistics.median(local),
         "extra_s_median": statistics.median(extra), "extra_s_q1": quartiles[0],
         "extra_s_q3": quartiles[2], "extra_s_max": max(extra),
         "dispatch_s_median": statistics.median(dispatch), "dispatch_s_max": max(dispatch)}
    print(json.dumps(r))
    print(f"  {r['pairs']} pairs over {rounds} rounds: a point here takes "
          f"{r['local_point_wall_s_median']:.2f} s (median); through Ray "
          f"{r['extra_s_median']:+.3f} s more (median; quartiles {r['extra_s_q1']:+.3f} to "
          f"{r['extra_s_q3']:+.3f}, worst {r['extra_s_max']:+.3f}); the journal's dispatch_s "
          f"median {r['dispatch_s_median']:.3f} s, worst {r['dispatch_s_max']:.3f} s")


if __name__ == "__main__":
    main(sys.argv)
