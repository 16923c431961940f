"""tune's link to a Ray cluster: the one Ray driver of a `tune --cluster ray` run.

    python -m torchperf.ray_bridge ADDRESS

The C++ supervisor starts this as a child and stays the tune's driver: it chooses the points,
their nodes, and writes the journal. Here each job becomes a Ray task placed on the node named
(node affinity, never elsewhere) that needs that node's one `torchperf_slot` resource, so Ray
itself never runs two jobs (of this tune or of another) on one node at once. A task runs
`torchperf __node-job` on its node, which runs the point with the same worker, protocol and
limits as a local tune, and the task returns what that printed.

Messages are JSON lines, requests on stdin, answers on stdout (Ray's own output goes to stderr),
each with every field its op lists (TO_DRIVER, FROM_DRIVER below; the C++ side's are in
include/torchperf/cluster/ray_bridge_messages.h, and tests/python/test_protocol.py checks the two
against `torchperf __protocol`):
  "ready"    once connected (Ray's version); "error" when it cannot connect (then exit code 2)
  "nodes"    -> "nodes": each alive node with its torchperf_slot count and what the probe
             printed on it (probed, probe) or why it did not run (probe_error)
  "submit"   -> later "done": ok with what the task printed (run), or lost (the node or the
             task's Ray worker died before it answered) or cancelled, with error
  "cancel"   -> "cancelled": every task still running is cancelled (its process tree dies)
The end of stdin cancels what still runs and disconnects.
"""

import json
import os
import queue
import socket
import sys
import threading
import time

SLOT = "torchperf_slot"

# Each operation's fields and their wire types, by direction.
TASK_RUN = {"rc": "integer", "stdout": "string", "stderr": "string", "wall_s": "number",
            "node": "string", "hostname": "string"}
NODE = {"id": "string", "address": "string", "hostname": "string", "slots": "number",
        "probed": "boolean", "probe": "task-run", "probe_error": "string"}
TO_DRIVER = {"nodes": {"probe": "array"},
             "submit": {"id": "string", "node": "string", "argv": "array", "stdin": "string"},
             "cancel": {}}
FROM_DRIVER = {"ready": {"ray": "string"}, "error": {"message": "string"},
               "nodes": {"nodes": "array"},
               "done": {"id": "string", "ok": "boolean", "lost": "boolean", "cancelled": "boolean",
                        "error": "string", "run": "task-run"},
               "cancelled": {"tasks": "integer"}}
NO_RUN = {"rc": -1, "stdout": "", "stderr": "", "wall_s": 0.0, "node": "", "hostname": ""}


def _done(job, run=None, lost=False, cancelled=False, error=""):
    return {"op": "done", "id": job, "ok": run is not None, "lost": lost, "cancelled": cancelled,
            "error": error, "run": run if run is not None else NO_RUN}

_out_lock = threading.Lock()


def _say(message):
    with _out_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def _run_on_node(argv, stdin_text, env):
    """The Ray task: the node job as a child of this Ray worker, which dies with it (a cancelled
    or lost task leaves no process measuring on the node)."""
    import ctypes
    import signal
    import socket
    import subprocess

    import ray

    def die_with_parent():
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    child_env = dict(os.environ)
    child_env.update(env)
    started = time.monotonic()
    try:
        done = subprocess.run(argv, input=stdin_text, capture_output=True, text=True,
                              env=child_env, preexec_fn=die_with_parent)
        rc, stdout, stderr = done.returncode, done.stdout, done.stderr
    except OSError as e:  # the binary is not there on this node
        rc, stdout, stderr = 127, "", f"{argv[0]}: {e}"
    return {"rc": int(rc), "stdout": stdout, "stderr": stderr[-4000:],
            "wall_s": time.monotonic() - started,
            "node": ray.get_runtime_context().get_node_id(), "hostname": socket.gethostname()}


class Bridge:
    def __init__(self, ray):
        self.ray = ray
        self.remote = ray.remote(num_cpus=0, max_retries=0)(_run_on_node)
        self.running = {}  # ObjectRef -> id
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.stopping = False

    def task(self, node, argv, stdin_text, env):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        return self.remote.options(
            resources={SLOT: 1},
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False),
        ).remote(argv, stdin_text, env)

    def nodes(self, probe):
        alive = [n for n in self.ray.nodes() if n.get("Alive")]
        listed, probes = [], {}
        for n in alive:
            slots = n.get("Resources", {}).get(SLOT, 0)
            entry = {"id": n["NodeID"], "address": n.get("NodeManagerAddress", ""),
                     "hostname": n.get("NodeManagerHostname", ""), "slots": float(slots),
                     "probed": False, "probe": NO_RUN, "probe_error": ""}
            if slots >= 1 and probe:
                probes[n["NodeID"]] = self.task(n["NodeID"], probe, "", _forwarded_env())
            listed.append(entry)
        for entry in listed:
            ref = probes.get(entry["id"])
            if ref is None:
                continue
            try:
                entry["probe"] = self.ray.get(ref, timeout=120)
                entry["probed"] = True
            except Exception as e:  # noqa: BLE001 - any Ray failure is this node's
                entry["probe_error"] = _one_line(e)
        return listed

    def submit(self, message):
        ref = self.task(message["node"], message["argv"], message["stdin"], _forwarded_env())
        with self.lock:
            self.running[ref] = message["id"]
        self.wake.set()

    def cancel(self):
        with self.lock:
            refs = list(self.running)
        for ref in refs:
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - already finished or its node gone
                pass
        return len(refs)

    def collect(self):
        """Answers each job as it ends, in the order they end."""
        ray = self.ray
        while not self.stopping:
            with self.lock:
                refs = list(self.running)
            if not refs:
                self.wake.wait(0.2)
                self.wake.clear()
                continue
            ready, _ = ray.wait(refs, num_returns=1, timeout=0.2)
            for ref in ready:
                with self.lock:
                    job = self.running.pop(ref, None)
                if job is None:
                    continue
                try:
                    _say(_done(job, run=ray.get(ref)))
                except ray.exceptions.TaskCancelledError:
                    _say(_done(job, cancelled=True, error="cancelled"))
                except Exception as e:  # noqa: BLE001 - the node, its raylet or worker died
                    _say(_done(job, lost=True, error=_one_line(e)))


def _one_line(error):
    text = f"{type(error).__name__}: {error}".strip()
    first = text.splitlines()[0] if text else type(error).__name__
    return first[:400]


def _forwarded_env():
    """The driver's own torchperf settings (its cache, its Python side) reach the node jobs: the
    nodes see the same paths (docs/cluster.md)."""
    keep = ("TORCHPERF_", "TORCHINDUCTOR_")
    return {k: v for k, v in os.environ.items() if k.startswith(keep)}


def main(argv):
    if len(argv) != 2:
        _say({"op": "error", "message": "usage: python -m torchperf.ray_bridge ADDRESS"})
        return 2
    address = argv[1]
    # Ray's own prints (its connection banner) must not reach the protocol on stdout.
    protocol_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = protocol_out
    try:
        import logging

        import ray
    except ImportError as e:
        _say({"op": "error", "message": f"Ray is not installed beside this Python ({e}): "
                                        "`make venv` installs the pinned ray"})
        return 2
    # ray.init waits minutes for a head that is not there: a closed port is said at once.
    where = address[len("ray://"):] if address.startswith("ray://") else address
    host, _, port = where.rpartition(":")
    if host and port.isdigit():
        try:
            socket.create_connection((host, int(port)), timeout=10).close()
        except OSError as e:
            _say({"op": "error", "message": f"cannot connect to the Ray cluster at '{address}': "
                                            f"nothing answers there ({e.strerror or e}); start "
                                            "its head with `ray start --head` (docs/cluster.md)"})
            return 2
    # Ray Client's server starts a process per client; on a busy head that start can miss its
    # deadline ("Initialization failure from server"): a second try finds it warm.
    attempts = 3 if address.startswith("ray://") else 1
    for attempt in range(attempts):
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR,
                     namespace="torchperf")
            break
        except ConnectionAbortedError as e:
            if attempt + 1 < attempts:
                continue
            failure = e
        except Exception as e:  # noqa: BLE001 - whatever ray.init raises, the address is at fault
            failure = e
        _say({"op": "error", "message": f"cannot connect to the Ray cluster at '{address}': "
                                        f"{_one_line(failure)}"})
        return 2
    bridge = Bridge(ray)
    _say({"op": "ready", "ray": ray.__version__})
    collector = threading.Thread(target=bridge.collect, daemon=True)
    collector.start()
    requests = queue.Queue()

    def read_stdin():
        for line in sys.stdin:
            requests.put(line)
        requests.put(None)

    threading.Thread(target=read_stdin, daemon=True).start()
    while True:
        line = requests.get()
        if line is None:
            break
        if not line.strip():
            continue
        message = json.loads(line)
        op = message.get("op")
        if op == "nodes":
            _say({"op": "nodes", "nodes": bridge.nodes(message["probe"])})
        elif op == "submit":
            try:
                bridge.submit(message)
            except Exception as e:  # noqa: BLE001 - e.g. the node named is gone
                _say(_done(message["id"], lost=True, error=_one_line(e)))
        elif op == "cancel":
            _say({"op": "cancelled", "tasks": bridge.cancel()})
    bridge.cancel()
    bridge.stopping = True
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
