"""DDP ranks under torch's own launcher: `train --nproc N` (and --nnodes, --rdzv-endpoint).

    python -m torchperf.rank_group           the launcher: one side of the ladder, driven by C++
    python -m torchperf.rank_group --rank    one rank, as torch.distributed.run starts it

The launcher speaks the Python training worker's protocol (torchperf.train_worker: the
python-train-side request, then breakdowns and blocks until train-finish) to the C++ side. It
starts `python -m torch.distributed.run` (the elastic agent, a c10d rendezvous, no restarts)
with this module as each rank, and relays each request to the commanding rank (local rank 0 of
the node whose launcher drives: --node-rank 0) over a loopback socket. That rank broadcasts the
request to every rank (a gloo group of its own, without a timeout: ranks wait there between
requests); each rank runs it as torchperf.train_worker's TrainSide does (wrapped in
DistributedDataParallel, data from a DistributedSampler); the answers are gathered and merged:
a block's throughput is every rank's samples over the slowest rank's time, a breakdown carries
each rank's steps.

Faults: a rank that fails writes its error (kind and message) beside its log and exits with its
kind's code; the agent then stops the other ranks and exits, and the launcher answers with the
first failure the agent observed (its "Root Cause"), naming the rank and its log. DDP's
collectives time out after collective_timeout_s (a rank stuck, the others waiting in an
all-reduce). A rendezvous that cannot open its port, or whose nodes do not all join within
join_timeout_s, is answered as such. The launcher dies with its parent (PR_SET_PDEATHSIG), and
the agent with the launcher, and the ranks with the agent: a killed torchperf leaves no rank.
A node that does not drive (--node-rank > 0) only runs its ranks: its ready answer comes when
they end.
"""

import ctypes
import datetime
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid

from torchperf import worker
from torchperf.error_kinds import ErrorKind
from torchperf.worker import JobError, concise

CONTROL = "TORCHPERF_RANK_CONTROL"   # host:port of the driving launcher's socket (driver only)
LOGS = "TORCHPERF_RANK_LOGS"         # where each rank writes rank-R.log and rank-R.error.json
TIMEOUT = "TORCHPERF_COLLECTIVE_TIMEOUT_S"
LAUNCHER = "TORCHPERF_RANK_LAUNCHER"  # the launcher's pid: its agent dies with it
POLL_S = 0.2


def die_with_parent():
    """In a child before exec: SIGKILL when the parent dies (Linux's PR_SET_PDEATHSIG)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def alive(pid):
    """Whether the process `pid` (text, from the environment) still runs; True when unknown."""
    if not pid or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def error_file(log_dir, rank):
    return os.path.join(log_dir, f"rank-{rank}.error.json")


def rank_log(log_dir, rank):
    return os.path.join(log_dir, f"rank-{rank}.log")


# --- the launcher -------------------------------------------------------------------------------

class World:
    """The ranks of one configuration, started by the agent; requests relayed to the commander."""

    def __init__(self, request):
        from torchperf import train_worker

        s = worker.fields(request, train_worker.PYTHON_TRAIN_SIDE_REQUEST)
        self.s = s
        if s["nproc"] < 1 or s["nnodes"] < 1:
            raise JobError(ErrorKind.USAGE, "--nproc and --nnodes: expected at least 1")
        if not 0 <= s["node_rank"] < s["nnodes"]:
            raise JobError(ErrorKind.USAGE, f"--node-rank {s['node_rank']}: expected 0 .. "
                                            f"{s['nnodes'] - 1} (--nnodes {s['nnodes']})")
        self.logs = s["rank_log_dir"]
        os.makedirs(self.logs, exist_ok=True)
        self.agent_log_path = os.path.join(self.logs, "agent.log")
        self.driver = s["node_rank"] == 0
        self.server = self.conn = None
        env = dict(os.environ)
        env[LOGS] = self.logs
        env[TIMEOUT] = str(s["collective_timeout_s"])
        env[LAUNCHER] = str(os.getpid())  # a rank outlives no launcher (rank_main)
        env["OMP_NUM_THREADS"] = str(max(1, s["threads"]))  # the agent warns and sets 1 otherwise
        env.pop(CONTROL, None)
        if self.driver:
            self.server = socket.create_server(("127.0.0.1", 0))
            self.server.settimeout(POLL_S)
            env[CONTROL] = "127.0.0.1:%d" % self.server.getsockname()[1]
        command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(s["nnodes"]),
                   "--nproc-per-node", str(s["nproc"]), "--max-restarts", "0",
                   "--monitor-interval", "0.2"]
        if s["nnodes"] == 1 and not s["rdzv_endpoint"]:
            command += ["--standalone"]
        else:
            if not s["rdzv_endpoint"]:
                raise JobError(ErrorKind.USAGE, "--nnodes > 1 needs --rdzv-endpoint HOST:PORT "
                                                "(the same on every node)")
            # The driving node hosts the rendezvous store: a port in use is then an error, not
            # a silent wait for a store that is someone else's.
            command += ["--rdzv-backend", "c10d", "--rdzv-endpoint", s["rdzv_endpoint"],
                        "--rdzv-id", "torchperf-" + s["rdzv_endpoint"].replace(":", "-"),
                        "--rdzv-conf", "join_timeout=%d,is_host=%d" % (
                            max(1, round(s["join_timeout_s"])), 1 if self.driver else 0)]
        command += ["-m", "torchperf.rank_group", "--rank"]
        self.agent_log = open(self.agent_log_path, "w")
        self.agent = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                                      stdout=self.agent_log, stderr=subprocess.STDOUT,
                                      preexec_fn=die_with_parent)
        self.started = time.monotonic()
        if not self.driver:
            self.reply = self.follow()
            return
        self.connect()
        self.reply = self.ask(request)

    def follow(self):
        """A node that does not drive: its ranks run until the driver's finish."""
        code = self.agent.wait()
        if code != 0:
            self.raise_failure()
        return {"setup_ms": (time.monotonic() - self.started) * 1e3, "compile_s": -1.0,
                "torch": "", "threads": self.s["threads"], "world_size": 0,
                "unused_parameters": 0, "checkpointed_blocks": 0, "activation_bytes": -1,
                "checkpointed_activation_bytes": -1, "followed": True}

    def connect(self):
        limit = self.s["join_timeout_s"] + 120  # the rendezvous, then torch's import in each rank
        while self.conn is None:
            if self.agent.poll() is not None:
                self.raise_failure()
            if time.monotonic() - self.started > limit:
                self.stop()
                raise JobError(ErrorKind.CLUSTER, f"the ranks did not start within {limit:.0f} s "
                                                  f"(the agent's log: {self.agent_log_path})")
            try:
                conn, _ = self.server.accept()
            except socket.timeout:
                continue
            conn.settimeout(POLL_S)
            self.conn = conn
            self.pending = b""

    def ask(self, request):
        """The commander's answer to request, or the failure that ended the ranks."""
        try:
            self.conn.sendall((json.dumps(request) + "\n").encode())
        except OSError:
            self.raise_failure(wait=True)
        while b"\n" not in self.pending:
            try:
                chunk = self.conn.recv(1 << 16)
            except socket.timeout:
                if self.agent.poll() is not None:
                    self.raise_failure()
                continue
            except OSError:
                chunk = b""
            if not chunk:
                self.raise_failure(wait=True)
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        answer = json.loads(line)
        if not answer.pop("ok"):
            raise JobError(ErrorKind.named(answer["kind"]), answer["message"])
        return answer

    def failed_ranks(self, text):
        """(rank, exit code) of each failure the agent listed."""
        failures, rank = [], None
        for line in text.splitlines():
            m = re.match(r"\s*rank\s*:\s*(\d+)", line)
            if m:
                rank = int(m.group(1))
            m = re.match(r"\s*exitcode\s*:\s*(-?\d+)", line)
            if m and rank is not None:
                failures.append((rank, int(m.group(1))))
                rank = None
        return failures

    def first_failure(self, failures):
        """The failure that ended the ranks: a rank's own error first, then a rank killed by a
        signal the agent did not send, then a collective that failed because another rank had
        (a timeout, a closed connection); the earliest of each."""
        ranked = []
        for rank, code in failures:
            try:
                with open(error_file(self.logs, rank)) as f:
                    e = json.load(f)
                ranked.append((2 if e.get("secondary") else 0, e.get("time", 0), rank, code, e))
            except (OSError, ValueError):
                ranked.append((1 if code not in (-signal.SIGTERM, 0) else 3, 0, rank, code, None))
        return min(ranked, key=lambda r: r[:3]) if ranked else None

    def raise_failure(self, wait=False):
        """Why the ranks ended: the first failure among those the agent observed, named with
        its rank and log, or what the rendezvous said."""
        if wait:
            try:
                self.agent.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.stop()
        self.agent_log.flush()
        with open(self.agent_log_path, errors="replace") as f:
            text = f.read()
        self.stop()
        first = self.first_failure(self.failed_ranks(text))
        if first:
            _, _, rank, code, e = first
            log = rank_log(self.logs, rank)
            if e is not None:
                try:
                    kind = ErrorKind.named(e["kind"])
                except (KeyError, ValueError):
                    kind = ErrorKind.RUNTIME
                raise JobError(kind, f"rank {rank} failed: {e.get('message')} (its log: {log})")
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"signal {-code}"
                raise JobError(ErrorKind.CLUSTER, f"rank {rank} was killed by {name} (its log: {log})")
            raise JobError(ErrorKind.of_exit_code(code),
                           f"rank {rank} exited with code {code} (its log: {log})")
        endpoint = self.s["rdzv_endpoint"]
        if "RendezvousTimeoutError" in text:
            raise JobError(ErrorKind.CLUSTER,
                           f"rendezvous at {endpoint}: the {self.s['nnodes']} nodes did not all join "
                           f"within {self.s['join_timeout_s']:.0f} s (is the other launcher running, "
                           f"with the same --rdzv-endpoint and --nnodes?)")
        if "RendezvousConnectionError" in text or "address already in use" in text.lower() or \
                "EADDRINUSE" in text:
            raise JobError(ErrorKind.CLUSTER,
                           f"rendezvous at {endpoint}: its port is in use by another program "
                           f"(choose a free port for --rdzv-endpoint; the agent's log: "
                           f"{self.agent_log_path})")
        last = [line for line in text.splitlines() if line.strip()][-1:] or ["no output"]
        raise JobError(ErrorKind.CLUSTER, f"the ranks' agent exited with code {self.agent.returncode}: "
                                          f"{last[0].strip()} (its log: {self.agent_log_path})")

    def stop(self):
        if self.agent.poll() is None:
            self.agent.send_signal(signal.SIGTERM)  # the agent stops its ranks on SIGTERM
            try:
                self.agent.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.agent.kill()
                self.agent.wait()

    def ready(self):
        return self.reply

    def finish(self, request):
        answer = self.ask(request)
        try:
            code = self.agent.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.stop()
            code = self.agent.returncode
        if code != 0:
            self.raise_failure()
        return answer


def serve(lines, out):
    world = None

    def open_world(request):
        nonlocal world
        world = World(request)
        return world

    def handle(side, job, request):
        if job == "train-finish":
            return side.finish(request)
        if job in ("train-block", "breakdown"):
            return side.ask(request)
        raise JobError(ErrorKind.PROTOCOL, f"unknown training side job '{job}'")

    try:
        return worker.serve_side(lines, out, "python-train-side", "train-finish", open_world, handle)
    finally:
        if world is not None:
            world.stop()


# --- a rank ------------------------------------------------------------------------------------

def merge(job, answers):
    """The commander's answer from every rank's (ordered by rank)."""
    if job == "python-train-side":
        merged = dict(answers[0])
        merged["unused_parameters"] = max(a["unused_parameters"] for a in answers)
        merged["activation_bytes"] = max(a["activation_bytes"] for a in answers)
        merged["checkpointed_activation_bytes"] = max(a["checkpointed_activation_bytes"] for a in answers)
        merged["setup_ms"] = max(a["setup_ms"] for a in answers)
        merged["compile_s"] = max(a["compile_s"] for a in answers)
        return merged
    if job == "train-block":
        # The step ends when the slowest rank's does: every rank's samples over that time.
        ns = max(a["ns"] for a in answers)
        return {"samples_per_s": sum(a["samples"] for a in answers) / (ns * 1e-9)}
    if job == "breakdown":
        slowest = max(answers, key=lambda a: sum(t["total_ns"] for t in a["steps"]))
        steps = []
        for i, t in enumerate(slowest["steps"]):
            step = dict(t)
            step["samples"] = sum(a["steps"][i]["samples"] for a in answers)
            steps.append(step)
        return {"steps": steps,
                "peak_memory_bytes": max(a["peak_memory_bytes"] for a in answers),
                "memory_capacity_bytes": answers[0]["memory_capacity_bytes"],
                "ranks": [{k: a[k] for k in ("rank", "host", "steps", "peak_memory_bytes")}
                          for a in answers]}
    return {}


def rank_main():
    # The agent's death ends its ranks: asked for before the slow imports, and the parent checked
    # against the one this process started under (an agent killed before the ask left a rank
    # reparented to a subreaper, not always to 1, which outlived a kill -9 once in four, issue 63).
    parent = os.getppid()
    die_with_parent()
    if os.getppid() != parent or parent == 1 or not alive(os.environ.get(LAUNCHER)):
        return 1
    import torch.distributed as dist

    from torchperf import train_worker
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    logs = os.environ[LOGS]
    log = open(rank_log(logs, rank), "w")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log

    def fail(kind, message, secondary=False):
        # secondary: this rank failed because another did (a collective timed out or lost its
        # peer); the launcher names the first failure, not its echoes.
        with open(error_file(logs, rank), "w") as f:
            json.dump({"kind": kind.wire_name, "message": message, "time": time.time(),
                       "secondary": secondary}, f)
        print(f"rank {rank}: {kind.wire_name}: {message}", flush=True)
        os._exit(kind.exit_code)

    try:
        timeout = datetime.timedelta(seconds=float(os.environ.get(TIMEOUT, "60")))
        dist.init_process_group("gloo", timeout=timeout)
        # Ranks wait here between requests, for as long as the supervisor takes.
        control = dist.new_group(backend="gloo", timeout=datetime.timedelta(days=7))
        conn = None
        if os.environ.get(CONTROL) and local_rank == 0:
            host, port = os.environ[CONTROL].rsplit(":", 1)
            conn = socket.create_connection((host, int(port)))
        flags = [None] * world_size
        dist.all_gather_object(flags, conn is not None, group=control)
        commanders = [r for r, f in enumerate(flags) if f]
        if len(commanders) != 1:
            fail(ErrorKind.CLUSTER, f"{len(commanders)} nodes drive these ranks: exactly one "
                                    "launcher has --node-rank 0")
        commander = commanders[0]
        reader = conn.makefile("r") if conn else None
        side = None
        nccl = None
        while True:
            request = [None]
            if rank == commander:
                line = reader.readline()
                request[0] = json.loads(line) if line else {"job": "train-finish"}
            dist.broadcast_object_list(request, src=commander, group=control)
            request = request[0]
            job = request.get("job")
            if job == "python-train-side":
                if request.get("device", "cpu").startswith("cuda") and nccl is None:
                    nccl = dist.new_group(backend="nccl", timeout=timeout)
                ranks = train_worker.Ranks(rank, world_size, local_rank, nccl)
                side = train_worker.TrainSide(request, ranks)
                answer = side.ready()
            elif job == "train-block":
                ns, samples = side.block_times()
                answer = {"ns": ns, "samples": samples}
            elif job == "breakdown":
                answer = side.breakdown(int(request["steps"]))
                answer["rank"] = rank
                answer["host"] = socket.gethostname()
            else:
                answer = {}
            answers = [None] * world_size if rank == commander else None
            dist.gather_object(answer, answers, dst=commander, group=control)
            if rank == commander:
                merged = merge(job, answers)
                merged["ok"] = True
                conn.sendall((json.dumps(merged) + "\n").encode())
            if job == "train-finish":
                break
        # The run is over and answered: a peer that closes its connections first (gloo then
        # raises, or aborts in a destructor) is no failure of it. Every rank waits for the others,
        # then exits without tearing the groups down.
        try:
            dist.barrier(group=control)
        except Exception as e:  # noqa: BLE001
            print(f"rank {rank}: after the finish: {concise(e)}", flush=True)
        log.flush()
        os._exit(0)
    except JobError as e:
        fail(e.kind, str(e))
    except Exception as e:  # noqa: BLE001 (every failure of a rank ends the world, named)
        import traceback

        traceback.print_exc()  # the rank's log keeps where it failed
        text = concise(e)
        lower = text.lower()
        if "timed out" in lower or "timeout" in lower:
            fail(ErrorKind.CLUSTER, f"a collective timed out after {timeout.total_seconds():.0f} s "
                                    f"waiting for the other ranks ({text})", secondary=True)
        if any(m in lower for m in ("connection closed", "connection reset", "broken pipe",
                                    "connection refused", "gloo")):
            fail(ErrorKind.CLUSTER, f"a collective lost another rank ({text})", secondary=True)
        fail(ErrorKind.RESOURCE_LIMIT if worker.is_out_of_memory(e) else ErrorKind.WORKLOAD, text)


def main():
    if sys.argv[1:] == ["--rank"]:
        return rank_main()
    return worker.run(serve, "torchperf.rank_group")


if __name__ == "__main__":
    sys.exit(main())
