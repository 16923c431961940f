"""The tables and wires the Python side shares with the C++ core, checked against what the core
lists in `torchperf __protocol`: torch.compile's modes, the typed feed, the node job and its outcome, and the Ray
bridge's operations (each direction, every field and its wire type)."""

from test_worker import protocol_schema

from torchperf import compile_modes, engine_graphs, feed, ray_bridge


def test_the_compile_modes_are_the_cores_table():
    listed = protocol_schema()["compile_modes"]
    ours = {m.graph: {"mode": m.mode, "cuda_only": m.cuda_only, "cuda_graphs": m.cuda_graphs,
                      "trains": m.trains, "autotunes": m.autotunes, "dynamic": m.dynamic,
                      "varying_only": m.varying_only} for m in compile_modes.MODES}
    assert ours == listed
    assert set(compile_modes.TRAINING) == {g for g, m in listed.items() if m["trains"]}


def test_the_engine_graphs_are_the_cores_table():
    listed = protocol_schema()["engine_graphs"]
    ours = {g.graph: {"engine": g.engine, "level": g.level, "parallel": g.parallel,
                      "arena": g.arena, "hint": g.hint, "static_shapes": g.static_shapes}
            for g in engine_graphs.GRAPHS}
    assert ours == listed


def test_the_feed_is_read_by_the_fields_the_core_writes():
    listed = protocol_schema()["feed"]
    assert set(feed.FIELDS) == set(listed)
    assert set(feed.FIELDS["inputs"]) == set(listed["inputs"])


def test_the_ray_bridge_speaks_the_operations_the_core_lists():
    listed = protocol_schema()["ray_bridge"]
    assert ray_bridge.TO_DRIVER == listed["to_driver"]
    assert ray_bridge.FROM_DRIVER == listed["from_driver"]
    assert ray_bridge.NODE == listed["node"]
    assert ray_bridge.TASK_RUN == listed["task_run"]


def test_every_answer_the_bridge_writes_has_every_field_of_its_op():
    done = ray_bridge._done("job-1", lost=True, error="node gone")
    assert set(done) - {"op"} == set(ray_bridge.FROM_DRIVER["done"])
    assert set(done["run"]) == set(ray_bridge.TASK_RUN)
    ran = ray_bridge._done("job-2", run=dict(ray_bridge.NO_RUN, rc=0))
    assert ran["ok"] and not ran["lost"]


def test_the_node_job_and_its_outcome_are_listed_with_their_fields():
    schema = protocol_schema()
    assert set(schema["node_job"]) >= {"kind", "executable", "timeout_s", "request", "workload",
                                       "shared"}
    assert schema["node_outcome"] == {"ending": "ending", "response": "message",
                                      "message": "string", "wall_s": "number",
                                      "peak_rss_bytes": "integer"}
    # No job name means two messages.
    assert {"block", "finish", "python-block", "python-finish", "train-block",
            "train-finish"} <= set(schema["jobs"])
