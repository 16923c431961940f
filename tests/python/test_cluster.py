"""`tune --cluster ray` against a real Ray cluster on loopback (tests/python/local_ray_cluster.py):
a head and a second node, each with one torchperf_slot; the real CLI, the real workers, real
kills. Every cluster is stopped, with every process it started, whatever the test did.

$TORCHPERF_CLI is the build's CLI. The nodes share this 2-core machine, so the timings here rank
nothing: the tests check where points ran, that each is journalled once, and what survives a
node or the driver being killed."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from local_ray_cluster import LocalRayCluster  # noqa: E402

CLI = os.environ.get("TORCHPERF_CLI", "build/torchperf")
# Four points of the MLP, each ~1 s on a node: cheap enough for a loaded 2-core machine.
SPACE = "runtime=cpp;batch=2,8;mode=eval;graph=eager,frozen-opt;threads=1;grad=no_grad;precision=fp32"
# Eight points for the tests that kill something mid-sweep: long enough to kill into.
LONG_SPACE = ("runtime=cpp;batch=1,2,4,8;mode=eval;graph=eager,frozen-opt;threads=1;"
              "grad=no_grad;precision=fp32")


def tune_args(out, space=SPACE, time_s="0.3", cluster="ray", leaders="2"):
    return [CLI, "tune", "builtin:mlp", "--space", space, "--time", time_s, "--search",
            "exhaustive", "--leaders", leaders, "--budget", "0", "--out", str(out), "--quiet",
            "--cluster", cluster]


def env_for(cluster):
    env = dict(os.environ, RAY_ADDRESS=cluster.address)
    env.pop("RAY_CLIENT_MODE", None)
    return env


def journal(out):
    with open(os.path.join(out, "results.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def points(records):
    return [r for r in records if r.get("record") == "point"]


def node_jobs():
    """The torchperf node jobs running on this machine (any cluster's)."""
    found = subprocess.run(["pgrep", "-f", "__node-job"], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split()]


def wait_until(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds} s: {what}")


@pytest.fixture(scope="module")
def cluster():
    with LocalRayCluster(nodes=2) as c:
        yield c


def test_a_tune_spreads_over_both_nodes_and_journals_each_point_once_with_its_node(cluster,
                                                                                    tmp_path):
    out = tmp_path / "run"
    # Ray Client's address, as a cluster's users give it from another machine.
    done = subprocess.run(tune_args(out, cluster=cluster.client_address), env=env_for(cluster),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    records = journal(out)
    session = next(r for r in records if r.get("record") == "session")
    assert session["cluster"]["address"] == cluster.client_address
    assert len(session["cluster"]["nodes"]) == 2
    measured = points(records)
    keys = [p["key"] for p in measured]
    assert len(keys) == 4 and len(set(keys)) == 4, keys
    assert {p["node"] for p in measured} == set(session["cluster"]["nodes"]), \
        "both nodes measured points"
    for p in measured:
        assert p["status"] == "ok", p
        assert p["machine_class"] == session["machine_class"]
        assert 0 < p["dispatch_s"] < p["wall_s"], p
    comparisons = [r for r in records if r.get("record") == "head_to_head"]
    assert comparisons and all(c["node"] in session["cluster"]["nodes"] for c in comparisons)
    # The report ranks what the cluster measured, as it ranks a local tune's points.
    report = subprocess.run([CLI, "report", str(out)], capture_output=True,
                            text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    best = max((p for p in measured), key=lambda p: p["score"])
    assert best["key"] in report.stdout


def test_the_smart_search_keeps_both_nodes_busy_and_measures_each_point_once_per_stage(
        cluster, tmp_path):
    out = tmp_path / "run"
    args = tune_args(out, space=LONG_SPACE)
    args[args.index("exhaustive")] = "smart"
    done = subprocess.run(args, env=env_for(cluster), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    measured = points(journal(out))
    pairs = [(p["key"], p["brief"]) for p in measured]
    assert len(pairs) == len(set(pairs)), "a point once briefly, a finalist once in full"
    assert {p["stage"] for p in measured} >= {"screen", "final"}
    assert len({p["node"] for p in measured}) == 2


def test_a_node_killed_mid_point_is_measured_again_on_the_other(tmp_path):
    out = tmp_path / "run"
    with LocalRayCluster(nodes=2) as c:
        tune = subprocess.Popen(tune_args(out, space=LONG_SPACE, time_s="1", leaders="1"), env=env_for(c),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # The second node's session holds the node job it is running: killed mid-point.
            victim = c.nodes[1].pid

            def second_node_measures():
                return any(os.getsid(p) == victim for p in node_jobs() if _alive(p))

            # Points, not the describe and reference jobs before them (NodePool retries those
            # too, but they are not journalled).
            wait_until(lambda: (out / "results.jsonl").exists() and len(points(journal(out))) >= 1,
                       180, "the sweep's first point")
            wait_until(second_node_measures, 120, "the second node runs a point")
            c.kill_node(1)
            stdout, stderr = tune.communicate(timeout=300)
        finally:
            if tune.poll() is None:
                tune.kill()
        assert tune.returncode == 0, stderr
        measured = points(journal(out))
        keys = [p["key"] for p in measured]
        assert len(keys) == 8 and len(set(keys)) == 8, keys
        # The point it was measuring, and any given to it before the driver knew it dead: each
        # measured again on the head's node, the reason kept.
        retried = [p for p in measured if p["node_lost"]]
        assert retried, measured
        nodes = next(r for r in journal(out) if r.get("record") == "session")["cluster"]["nodes"]
        for p in retried:
            lost_on = p["node_lost"].split(": ")[0]
            assert lost_on in nodes and p["node"] in nodes and p["node"] != lost_on, p
        assert all(p["status"] == "ok" for p in measured), measured
        assert not [p for p in node_jobs() if _alive(p) and os.getsid(p) == victim], \
            "nothing of the dead node still measures"


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def test_a_killed_driver_loses_nothing_and_resume_finishes_on_the_cluster(cluster, tmp_path):
    out = tmp_path / "run"
    tune = subprocess.Popen(tune_args(out, space=LONG_SPACE, time_s="1", leaders="1"), env=env_for(cluster),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: (out / "results.jsonl").exists() and len(points(journal(out))) >= 2,
                   180, "two points in the journal")
        tune.kill()  # SIGKILL: no handler runs
        tune.wait()
    finally:
        if tune.poll() is None:
            tune.kill()
    before = points(journal(out))
    # Its Ray driver dies with it, and Ray stops the tasks of a driver that is gone.
    wait_until(lambda: not [p for p in node_jobs() if _alive(p)], 60,
               "the killed driver's node jobs stopped")
    done = subprocess.run([CLI, "tune", "--resume", str(out), "--cluster", "ray", "--quiet"],
                          env=env_for(cluster), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    after = points(journal(out))
    keys = [p["key"] for p in after]
    assert len(keys) == 8 and len(set(keys)) == 8, keys
    assert [p["key"] for p in after[:len(before)]] == [p["key"] for p in before], \
        "the first session's points are kept, not measured again"


def test_ctrl_c_stops_the_ray_tasks_it_started_and_says_how_to_resume(cluster, tmp_path):
    out = tmp_path / "run"
    tune = subprocess.Popen(tune_args(out, space=LONG_SPACE, time_s="1", leaders="1"), env=env_for(cluster),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (out / "results.jsonl").exists() and len(points(journal(out))) >= 1,
                   180, "a point in the journal")
        wait_until(lambda: len([p for p in node_jobs() if _alive(p)]) >= 1, 120,
                   "a point runs on a node")
        tune.send_signal(signal.SIGINT)
        _, stderr = tune.communicate(timeout=120)
    finally:
        if tune.poll() is None:
            tune.kill()
    assert tune.returncode == 130, stderr
    assert "--resume" in stderr
    wait_until(lambda: not [p for p in node_jobs() if _alive(p)], 30, "its node jobs stopped")


def test_nodes_of_another_class_or_without_a_slot_are_left_out_and_said_in_the_plan(tmp_path):
    out = tmp_path / "run"
    # The second node sees one core of two (taskset, as a container's share would): another
    # class. The third has no torchperf_slot: not for tune.
    with LocalRayCluster(nodes=1) as c:
        c.add_node(prefix=["taskset", "-c", "0"])
        c.add_node(slots=0)
        done = subprocess.run(tune_args(out)[:-2] + ["--cluster", "ray"], env=env_for(c),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    records = journal(out)
    session = next(r for r in records if r.get("record") == "session")
    assert len(session["cluster"]["nodes"]) == 1
    left_out = " ".join(session["cluster"]["left_out"])
    # One node of each class: the tie goes to the class Ray lists first, either of the two.
    assert ("another machine class ('cores 2 of 2' against 'cores 1 of 2')" in left_out
            or "another machine class ('cores 1 of 2' against 'cores 2 of 2')" in left_out), \
        left_out
    assert "no torchperf_slot resource" in left_out, left_out
    assert {p["node"] for p in points(records)} == set(session["cluster"]["nodes"])


def test_without_a_cluster_the_error_says_how_to_start_one(tmp_path):
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(tune_args(tmp_path / "run"), env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stderr
    assert "set RAY_ADDRESS" in done.stderr and "ray start --head" in done.stderr
    assert not (tmp_path / "run").exists()


def test_an_address_where_nothing_answers_is_a_cluster_error_at_once(tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    done = subprocess.run(tune_args(tmp_path / "run", cluster=f"ray:127.0.0.1:{port}"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 11, done.stderr
    assert f"cannot connect to the Ray cluster at '127.0.0.1:{port}': nothing answers there" \
        in done.stderr
    assert time.monotonic() - started < 60
    assert not (tmp_path / "run").exists(), "a run that never started leaves no folder"


def test_points_of_the_python_runtime_are_timed_on_the_nodes(cluster, tmp_path):
    """The Python runtime's points: the Python worker started and timed block by block on the
    node (torchperf.tune(..., cluster=) passes --cluster to this same command)."""
    out = tmp_path / "run"
    args = tune_args(out, space="runtime=python;graph=eager;batch=8;threads=1;precision=fp32;"
                                "grad=no_grad,inference")
    args[args.index("--leaders") + 1] = "1"
    done = subprocess.run(args, env=env_for(cluster), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    records = journal(out)
    session = next(r for r in records if r.get("record") == "session")
    measured = points(records)
    assert len(measured) == 2 and all(p["status"] == "ok" for p in measured), measured
    assert all(p["node"] in session["cluster"]["nodes"] for p in measured)
    assert all("python" in p["key"] for p in measured)
