"""Elastic jobs' bookkeeping on the host: the node printing rank 0 journals a `resized` record at each regroup (why from
the client's note, or a sibling node that failed), and a node whose own workers fail is told apart
from one whose peer went away."""

from __future__ import annotations

import json
from pathlib import Path

from remote_agent.supervision.elastic_failure import own_failure
from remote_agent.supervision.elastic_resize import ElasticResizes, read_resize_note

ELASTIC = {"node": "0", "multinode": {"elastic": [1, 3], "nproc_per_node": 2}}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def metric(step: int) -> tuple[str, dict]:
    return "metric", {"values": {"loss": 1.0, "step": step}}


def changed(before: int, after: int) -> tuple[str, dict]:
    return "event", {
        "event": "world_size_changed",
        "data": {"previous": before, "world_size": after, "step": 7},
    }


def test_a_regroup_is_recorded_before_its_first_step_with_the_clients_why(tmp_path: Path) -> None:
    clock = Clock()
    notes = ElasticResizes(ELASTIC, tmp_path, clock)
    assert notes.mark([metric(6), metric(7)]) == [metric(6), metric(7)]  # no regroup: nothing added
    notes.arm({"from": 2, "to": 3, "why": "scale +1"})
    clock.now = 112.5
    out = notes.mark([("event", {"event": "resumed", "data": {}}), changed(4, 6), metric(8)])
    assert [body.get("event") for _, body in out] == ["resumed", "world_size_changed", "resized", None]
    data = out[2][1]["data"]
    assert data == {"from": 2, "to": 3, "world_size": 6, "why": "scale +1", "step": 8, "pause_s": 12.5}
    assert notes.mark([metric(9)]) == [metric(9)]  # once per regroup


def test_a_trainer_without_the_event_is_seen_going_back_to_its_checkpoint(tmp_path: Path) -> None:
    notes = ElasticResizes(ELASTIC, tmp_path, Clock())
    notes.mark([metric(10)])
    notes.arm({"from": 3, "to": 2, "why": "scale -1"})
    out = notes.mark([metric(9)])
    assert (
        out[0][1]["event"] == "resized"
        and out[0][1]["data"]["to"] == 2
        and out[0][1]["data"]["world_size"] == 4
    )


def test_a_non_elastic_job_never_records() -> None:
    spec = {"node": "0", "multinode": {"elastic": None}}
    assert ElasticResizes(spec).mark([changed(2, 1), metric(3)]) == [changed(2, 1), metric(3)]


def test_the_node_whose_output_carries_rank_0_records_whichever_node_it_is(tmp_path: Path) -> None:
    """Issue 29, finding 13: torchrun's rendezvous put rank 0 on node 2 at a join; its output has the
    regroup, and before, only node 0 recorded one, so the resize had no record and no chart marker."""
    spec = {"node": "2", "multinode": {"elastic": [1, 3], "nproc_per_node": 1}}
    notes = ElasticResizes(spec, tmp_path, Clock())
    notes.arm({"from": 2, "to": 3, "why": "scale +1"})
    out = notes.mark([changed(2, 3), metric(251)])
    assert [body.get("event") for _, body in out] == ["world_size_changed", "resized", None]
    assert out[1][1]["data"]["why"] == "scale +1" and out[1][1]["data"]["step"] == 251


def test_a_note_left_from_another_regroup_gives_no_why(tmp_path: Path) -> None:
    """Every node is told why a resize happens; one that was not rank 0 then keeps its note: a later
    regroup to another size must not take that why."""
    notes = ElasticResizes(ELASTIC, tmp_path, Clock())
    notes.arm({"from": 2, "to": 3, "why": "scale +1"})
    out = notes.mark([changed(6, 2), metric(40)])  # 3 nodes → 1 (2 processes each)
    assert out[1][1]["event"] == "resized" and out[1][1]["data"]["why"] is None


def test_a_shrink_without_a_note_names_the_sibling_node_that_failed(tmp_path: Path) -> None:
    job = tmp_path / "job"
    (job / "1").mkdir(parents=True)
    (job / "1" / "spec.json").write_text(json.dumps({"multinode": {"host": "local", "rank": 1}}))
    (job / "1" / "events.jsonl").write_text(
        json.dumps(
            {
                "seq": 4,
                "t": 1.0,
                "kind": "event",
                "event": "node_failed",
                "data": {"exit_code": 3, "cause": "RuntimeError: bad GPU"},
            }
        )
        + "\n"
    )
    notes = ElasticResizes({"node": "0", "multinode": {"elastic": [1, 2], "nproc_per_node": 1}}, job, Clock())
    notes.mark([metric(5)])
    out = notes.mark([changed(2, 1), metric(6)])
    assert out[1][1]["data"]["why"] == "node 1 on local failed: RuntimeError: bad GPU"
    out = notes.mark([changed(2, 1), metric(7)])  # said once: a later shrink is not blamed on it
    assert out[1][1]["data"]["why"] is None


def test_the_clients_note_is_read_totally(tmp_path: Path) -> None:
    path = tmp_path / "resize.json"
    assert read_resize_note(path) is None
    path.write_text('{"from": 2, "to": true, "why": 5}')
    assert read_resize_note(path) == {"from": 2, "to": None, "why": None}
    path.write_text("[1, 2]")
    assert read_resize_note(path) is None


FAILED = (
    "E1201 07:33:00.123000 1234 torch/distributed/elastic/multiprocessing/api.py:1003] failed (exitcode: 1) "
    "local_rank: 0 (pid: 4242) of binary: /usr/bin/python3"
)


def test_a_workers_own_failure_is_told_from_a_peers_loss_a_signal_and_a_regroup() -> None:
    own = [
        "Traceback (most recent call last):",
        '  File "x.py", line 3, in <module>',
        "RuntimeError: bad GPU",
    ]
    assert own_failure(FAILED, own + [FAILED]) == (1, "RuntimeError: bad GPU")
    peer = [
        "Traceback (most recent call last):",
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:1",
    ]
    assert own_failure(FAILED, peer + [FAILED]) is None
    assert (
        own_failure(FAILED.replace("exitcode: 1", "exitcode: 75"), own) is None
    )  # the trainer's regroup exit
    assert own_failure(FAILED.replace("exitcode: 1", "exitcode: -15"), own) is None  # torchrun stopped it
    assert own_failure("RuntimeError: bad GPU", own) is None  # only torchrun's line says a worker ended
    assert own_failure(FAILED, [FAILED]) == (1, "exited with code 1")


def test_a_multi_node_job_shows_the_node_that_failed_on_its_own_not_its_peers_lost_connection() -> None:
    from tui.actions.find import Job
    from tui.fleet.states import cause_order

    peer = "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:1"
    assert [cause_order(c) for c in ("NCCL timeout: a rank stalled", CAUSE_OWN, peer, None)] == [0, 1, 2, 2]
    nodes = [
        {"host": "a", "node": "0", "state": "failed", "cause": peer, "exit_code": 1},
        {"host": "b", "node": "1", "state": "failed", "cause": CAUSE_OWN, "exit_code": 1},
    ]
    job = Job("j", "j", nodes)
    assert job.ending_node["node"] == "1" and CAUSE_OWN in job.why


CAUSE_OWN = "RuntimeError: bad GPU"


TORCHRUN_REPORT = """Traceback (most recent call last):
  File "/venv/bin/torchrun", line 8, in <module>
    sys.exit(main())
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
trainer FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  exitcode  : 1 (pid: 1234)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================""".splitlines()


def test_a_workers_exception_is_the_cause_behind_torchruns_report() -> None:
    from remote_agent.supervision.failure import LastException, failure_cause

    seen = LastException()
    worker = [
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "loop.py", line 9, in run',
        "[rank1]:     step()",
        "[rank1]: RuntimeError: bad GPU",
        FAILED,
    ]  # torch's prefix on a worker's lines
    for line in worker + TORCHRUN_REPORT:
        seen.feed(line)
    assert seen.last == "RuntimeError: bad GPU"  # torchrun's ChildFailedError is its wrapper, not the cause
    tail = TORCHRUN_REPORT[-12:]  # the worker's traceback scrolled out of the last lines
    assert failure_cause(1, None, tail) == "exited with code 1"
    assert failure_cause(1, None, tail, last_exception=seen.last) == "RuntimeError: bad GPU"
    assert failure_cause(0, None, tail, last_exception=seen.last) is None  # a clean exit has no cause


def test_a_node_that_dropped_itself_does_not_end_the_job_that_ran_on() -> None:
    from tui.actions.control import final_state
    from tui.actions.find import Job
    from tui.fleet import JobModel

    dropped = {
        "host": "b",
        "node": "1",
        "state": "failed",
        "exit_code": 1,
        "cause": CAUSE_OWN,
        "reason": "node failed: " + CAUSE_OWN,
    }
    stayed = {"host": "a", "node": "0", "state": "stopped", "exit_code": 0, "reason": "user"}
    job = Job("j", "j", [stayed, dropped])
    assert job.state == "stopped" and job.ending_node["node"] == "0" and CAUSE_OWN not in job.why
    assert final_state([stayed, dropped]) == "stopped"
    assert Job("j", "j", [dropped]).state == "failed"  # none stayed: the job is what its nodes are
    model = JobModel(id="j")
    for obj in (stayed, dropped):
        model.apply_object(dict(obj, id="j", name="j"), obj["host"])
    assert model.state == "stopped"


def test_a_siblings_journal_is_read_totally(tmp_path: Path) -> None:
    from remote_agent.supervision.elastic_resize import _dropped_cause

    journal = tmp_path / "events.jsonl"
    good = {"seq": 3, "t": 1.0, "kind": "event", "event": "node_failed", "data": {"cause": "CUDA error"}}
    journal.write_text(
        "\n".join(
            [json.dumps(good), '["node_failed"]', '"node_failed"', '{"node_failed": 1}', "42 node_failed", ""]
        )
    )
    assert _dropped_cause(journal) == "CUDA error"  # the garbage after it neither raises nor hides it
