"""A Ray cluster on loopback for the cluster tests: a head and further nodes, each a `ray start
--block` of its own (its own process group), each with one torchperf_slot, all on 127.0.0.1.
A node is killed the way a machine dies (SIGKILL to its whole group); stop() ends every process
it started, whatever state they are in."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

RAY = os.path.join(os.path.dirname(sys.executable), "ray")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalRayCluster:
    def __init__(self, nodes=2, cpus_per_node=1, slots=1):
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        # Ray Client's server on the head (ray[client]): `tune --cluster ray://...` connects there.
        self.client_port = _free_port()
        self.client_address = f"ray://127.0.0.1:{self.client_port}"
        # Short: Ray's socket paths live under it (108 bytes at most).
        self.temp_dir = tempfile.mkdtemp(prefix="tpray-", dir="/tmp")
        self.nodes = []  # Popen of each `ray start --block`, the head first
        self.logs = []
        self.cpus, self.slots = cpus_per_node, slots
        try:
            self._start(head=True)
            for _ in range(nodes - 1):
                self._start(head=False)
            self._wait_for(nodes)
        except BaseException:
            self.stop()
            raise

    def add_node(self, prefix=(), slots=None):
        """One more node: its `ray start` run under `prefix` (e.g. taskset), with `slots`
        torchperf_slot resources (0: none)."""
        self._start(head=False, prefix=prefix, slots=slots)
        self._wait_for(len(self.nodes))

    def _start(self, head, prefix=(), slots=None):
        slots = self.slots if slots is None else slots
        resources = {"torchperf_slot": slots} if slots else {}
        common = ["--node-ip-address=127.0.0.1", f"--num-cpus={self.cpus}",
                  f"--resources={json.dumps(resources)}", "--block", "--disable-usage-stats"]
        if head:
            args = ["--head", f"--port={self.port}", "--include-dashboard=false",
                    f"--temp-dir={self.temp_dir}", f"--ray-client-server-port={self.client_port}"]
        else:
            args = [f"--address={self.address}"]
        log = open(os.path.join(self.temp_dir, f"node-{len(self.nodes)}.log"), "w")
        self.logs.append(log)
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
        self.nodes.append(subprocess.Popen([*prefix, RAY, "start", *args, *common], stdout=log,
                                           stderr=subprocess.STDOUT, start_new_session=True,
                                           env=env))
        if head:
            deadline = time.monotonic() + 120
            while True:
                try:
                    socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                    return
                except OSError:
                    if time.monotonic() > deadline or self.nodes[0].poll() is not None:
                        raise RuntimeError("the Ray head did not start: " + self.log(0))
                    time.sleep(0.1)

    def _wait_for(self, count):
        """Until `count` nodes are alive (asked in a child: this process never joins Ray)."""
        probe = ("import ray,sys; ray.init(address=sys.argv[1], logging_level='ERROR');"
                 "print(sum(1 for n in ray.nodes() if n['Alive']))")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            out = subprocess.run([sys.executable, "-c", probe, self.address], capture_output=True,
                                 text=True, timeout=120)
            if out.stdout.strip() == str(count):
                return
            time.sleep(0.5)
        raise RuntimeError(f"{count} Ray nodes did not come up: " + self.log(0))

    def log(self, i):
        with open(os.path.join(self.temp_dir, f"node-{i}.log")) as f:
            return f.read()[-3000:]

    def kill_node(self, i):
        """The node dies as a machine does: every process of its group at once."""
        try:
            os.killpg(self.nodes[i].pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.nodes[i].wait()

    def stop(self):
        for i in reversed(range(len(self.nodes))):
            self.kill_node(i)
        # Workers Ray started in sessions of their own: whatever still names this cluster's
        # temp folder or port.
        subprocess.run(["pkill", "-9", "-f", self.temp_dir], check=False)
        for log in self.logs:
            log.close()
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
