"""One story about a job: `ps` (tui/actions' Job) and the TUI's model (JobModel) derive the same
state and the same "why" from the same node objects, for every mix of node states."""

from __future__ import annotations

import itertools

import pytest

from tui.actions.control import JobTarget, stop_wait
from tui.actions.find import Job, pick
from tui.errors import GpudeckError
from tui.fleet import Fleet
from tui.fleet.states import JOB_STATES, job_state, why

JOB = "20261129-213344-a3f9c2"


def node(n: str, state: str, **kw) -> dict:
    ended = state not in ("starting", "running")
    return {
        "id": JOB,
        "name": "ddp",
        "node": n,
        "state": state,
        "pid": 10 + int(n),
        "last_seq": 0,
        "last": {},
        "started_at": 100.0,
        "ended_at": 200.0 if ended else None,
        "exit_code": 1 if state == "failed" else 0 if state == "exited" else None,
        "signal": "SIGKILL" if state == "killed" else None,
        "cause": "NCCL timeout" if state == "failed" else None,
        "reason": "budget reached" if state == "stopped" else None,
        **kw,
    }


@pytest.mark.parametrize("states", list(itertools.product(JOB_STATES, repeat=2)))
def test_cli_and_tui_agree_on_state_and_why(states: tuple[str, str]) -> None:
    objs = [dict(node(str(i), s), host=f"h{i}") for i, s in enumerate(states)]
    cli = Job(JOB, "ddp", objs)
    fleet = Fleet()
    for obj in objs:
        fleet.apply_jobs(obj["host"], [obj])
    tui = fleet.jobs[JOB]
    assert cli.state == tui.state == job_state(states)
    assert cli.why == tui.why


def test_a_lost_node_beats_a_failed_one_and_a_live_node_beats_all() -> None:
    assert job_state(["lost", "failed"]) == "lost"  # part of it may still run
    assert job_state(["failed", "killed", "exited"]) == "failed"
    assert job_state(["exited", "running"]) == "running"


def test_why_says_the_cause_or_the_code_or_who_stopped() -> None:
    assert why("failed", cause="CUDA out of memory") == "CUDA out of memory"
    assert why("failed", exit_code=3) == "exit code 3"
    assert why("failed", signal="SIGSEGV") == "signal SIGSEGV"
    assert why("stopped", reason="user") == "" and why("stopped", reason="budget reached") == "budget reached"
    assert why("running") == ""


def test_names_resolve_to_the_live_job_else_the_newest() -> None:
    def job(id_: str, state: str) -> Job:
        return Job(id_, "train", [dict(node("0", state), id=id_, host="local")])

    old, new = job("20261101-000000-aaaaaa", "exited"), job("20261102-000000-bbbbbb", "failed")
    assert pick([old, new], "train") is new and pick([new, old], "train") is new
    live = job("20261001-000000-cccccc", "lost")  # lost may still run: it is the live one
    assert pick([old, new, live], "train") is live
    with pytest.raises(GpudeckError, match="matches 2 live jobs"):
        pick([live, job("20261003-000000-dddddd", "running")], "train")
    with pytest.raises(GpudeckError, match="ambiguous"):
        pick([old, new], "2026110")


def test_stop_waits_the_jobs_own_grace_plus_the_margin() -> None:
    job = JobTarget.of_job(
        Job(
            JOB,
            "ddp",
            [
                dict(node("0", "running", grace=300.0), host="a"),
                dict(node("1", "running", grace=5.0), host="b"),
            ],
        )
    )
    assert stop_wait(job) == 300.0 + 60.0  # the longest node's grace decides
    assert stop_wait(job, grace=2.0) == 62.0
    fleet = Fleet()
    fleet.apply_jobs("a", [node("0", "running", grace=300.0)])
    assert stop_wait(JobTarget.of_model(fleet.jobs[JOB])) == 360.0  # the TUI waits the same
