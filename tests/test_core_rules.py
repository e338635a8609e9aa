"""The small rules the core and the agent live by, each pinned (written against the survivors of
bench/mutants.py): id prefixes, names, option ranges, states and why, metric names, the idle stop
while paused, torn journal lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remote_agent.metrics import parse_line
from remote_agent.names import is_job_name
from remote_agent.storage.journal import JournalReader, JournalWriter
from remote_agent.supervision.autostop import AutoStop
from tui.actions.control import JobTarget, NodeTarget, end, stop_wait
from tui.actions.find import Job, pick
from tui.actions.node_spec import cost_fields
from tui.actions.options import LaunchOptions, check, parse_budget, parse_env
from tui.errors import GpudeckError
from tui.fleet.states import job_state, why

ID = "20261201-101500-a1b2c3"


def job(id_: str, name: str, state: str = "exited") -> Job:
    return Job(id_, name, [{"id": id_, "name": name, "node": "0", "state": state, "host": "local"}])


def test_an_id_prefix_needs_four_characters() -> None:
    target = job(ID, "train")
    assert pick([target], ID[:4]) is target
    named = job("20251111-000000-ffffff", "202")  # a job named like the start of an id
    assert pick([target, named], "202") is named


@pytest.mark.parametrize(
    ("opts", "ok"),
    [
        (LaunchOptions(("true",), grace=0), True),
        (LaunchOptions(("true",), budget=0), False),
        (LaunchOptions(("true",), budget=-1), False),
        (LaunchOptions(("true",), budget=float("nan")), False),
        (LaunchOptions(("true",), grace=float("inf")), False),
        (LaunchOptions(("true",), price_per_hour=0), True),
        (LaunchOptions(("true",), price_per_hour=-0.5), False),
        (LaunchOptions(("true",), name="a" * 64), True),
        (LaunchOptions(("true",), name="a" * 65), False),
        (LaunchOptions(("true",), name="a/../../x"), False),
    ],
)
def test_launch_option_ranges(opts: LaunchOptions, ok: bool) -> None:
    if ok:
        assert check(opts) is opts
    else:
        with pytest.raises(GpudeckError) as err:
            check(opts)
        assert err.value.code == 2  # a usage error


def test_form_budget_and_env_names() -> None:
    assert parse_budget("$1,250.5") == 1250.5 and parse_budget("  ") is None
    for bad in ("0", "-3", "nan", "lots"):
        with pytest.raises(GpudeckError, match="budget"):
            parse_budget(bad)
    with pytest.raises(GpudeckError, match="not a variable name"):
        parse_env(["A-B=1"])
    assert parse_env(["A_1=x=y"]) == (("A_1", "x=y"),)


def test_job_names_are_path_safe() -> None:
    assert is_job_name("a" * 64) and not is_job_name("a" * 65)
    assert not is_job_name("a/../../x") and not is_job_name("../x") and not is_job_name("")


def test_states_and_why_edges() -> None:
    assert job_state(["starting", "running"]) == "running"
    assert why("lost", cause="host rebooted") == "host rebooted"
    assert why("failed", exit_code=0) == "exit code 0"
    # An adopted job's end: its exit code is unknowable, and the why says so.
    unknown = "exit code unknown: its supervisor was lost at 2026-12-01 04:00:00 UTC"
    assert why("exited", cause=unknown) == unknown and why("exited", exit_code=0) == ""


def test_a_node_without_a_known_grace_waits_the_default() -> None:
    target = JobTarget(ID, "x", "running", (NodeTarget("local", "0", None),))
    assert stop_wait(target) == 60.0 + 60.0


class Recorder:
    """The Agents protocol, recording what an action asks of each host."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, float, dict[str, Any]]] = []

    def hosts(self) -> list[str]:
        return ["a", "b"]

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        self.asked.append((host, op, timeout, args))
        return {"state": "stopped"}


def test_stop_asks_every_node_with_the_grace_given_and_waits_for_it() -> None:
    target = JobTarget(ID, "x", "running", (NodeTarget("a", "0", 5.0), NodeTarget("b", "1", 5.0)))
    agents = Recorder()
    end(agents, target, "stop", grace=300.0, reason="budget")
    assert [(h, op, t, a) for h, op, t, a in agents.asked] == [
        # first the job-level mark on its first node's host: a resize under way does not relaunch
        ("a", "transition", 30.0, {"job": ID, "act": "stop"}),
        ("a", "stop", 360.0, {"job": ID, "node": "0", "grace": 300.0, "reason": "budget"}),
        ("b", "stop", 360.0, {"job": ID, "node": "1", "grace": 300.0, "reason": "budget"}),
    ]
    agents.asked.clear()
    end(agents, target, "kill")
    assert [(op, t, a) for _, op, t, a in agents.asked] == [
        ("transition", 30.0, {"job": ID, "act": "stop"}),
        ("kill", 60.0, {"job": ID, "node": "0"}),
        ("kill", 60.0, {"job": ID, "node": "1"}),
    ]


class HostAnswers:
    """The Agents protocol answered from fixed host facts (what the launch share is computed from)."""

    def __init__(self, gpus: int, jobs: list[dict[str, Any]]) -> None:
        self.gpus, self.jobs = gpus, jobs

    def hosts(self) -> list[str]:
        return ["local"]

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        if op == "hello":
            return {"gpu": {"gpus": [{"index": i} for i in range(self.gpus)]}}
        assert op == "live_jobs"
        return {"live": sum(1 for j in self.jobs if j["state"] in ("starting", "running"))}


def test_a_launch_share_counts_live_jobs_and_the_jobs_own_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    opts = LaunchOptions(("true",), price_per_hour=4.0)
    ended = [{"state": "exited"}, {"state": "failed"}]
    assert (
        cost_fields(HostAnswers(0, ended), opts.host, opts, {}, {})["price"].share == 1.0
    )  # ended jobs hold nothing
    assert cost_fields(HostAnswers(0, [{"state": "running"}]), opts.host, opts, {}, {})["price"].share == 0.5
    share = cost_fields(HostAnswers(4, []), opts.host, opts, {"CUDA_VISIBLE_DEVICES": "0"}, {})["price"].share
    assert share == 0.25  # the job's own CUDA_VISIBLE_DEVICES, not the launcher's


@pytest.mark.parametrize(
    ("line", "loss"),
    [
        ("box_loss=1.5 step=4", None),  # one part of a detector's loss is not the loss
        ("loss_epoch=0.3", 0.3),
        ("d_loss: 0.7 g_loss: 1.2", None),  # a GAN has no single training loss
        ("step=3 loss=0.5", 0.5),
    ],
)
def test_which_number_is_the_loss(line: str, loss: float | None) -> None:
    assert (parse_line(line) or {}).get("loss") == loss


def test_a_fraction_is_not_a_metric() -> None:
    assert parse_line("files: 3/10") is None
    assert parse_line("loss=0.5 files=3/10") == {"loss": 0.5}  # a count of things, not a metric
    assert parse_line("Epoch 3/100 loss 0.5") == {"epoch": 3, "loss": 0.5}  # an index keeps its value


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_paused_idle_stop_never_fires_and_resumes_counting_afresh() -> None:
    clock = Clock()
    rule = AutoStop(
        {"idle_stop": {"below_pct": 10, "minutes": 1, "grace_minutes": 0}}, lambda *a, **k: None, clock
    )
    rule.set_paused(True)
    rule.on_gpus([1.0])
    clock.now += 600
    assert rule.check() is None
    rule.set_paused(False)
    rule.on_gpus([1.0])
    clock.now += 30
    assert rule.check() is None  # counting starts at the resume
    clock.now += 31
    assert rule.check() and "idle" in rule.check()
    busy = AutoStop(
        {"idle_stop": {"below_pct": 10, "minutes": 1, "grace_minutes": 0}}, lambda *a, **k: None, clock
    )
    busy.on_gpus([10.0])  # exactly at the threshold counts as busy
    clock.now += 600
    assert busy.check() is None


def test_a_reader_never_returns_a_torn_line_and_returns_it_once_complete(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    writer = JournalWriter(path)
    for _ in range(3):
        writer.append("heartbeat")
    writer.close()
    reader = JournalReader(path)
    assert [r["seq"] for r in reader.read_new()] == [1, 2, 3]
    with open(path, "ab") as f:
        f.write(b'{"seq":4,"t":1,"kind":"heart')
    assert reader.read_new() == [] and reader.last_seq == 3
    raw = JournalReader(path)
    assert len(raw.read_new_raw()) == 3 and raw.last_seq == 3  # the raw reader (serve's) stops there too
    with open(path, "ab") as f:
        f.write(b'beat"}\n')
    assert [r["seq"] for r in reader.read_new()] == [4] and reader.read_new() == []
    assert raw.read_new_raw() == [b'{"seq":4,"t":1,"kind":"heartbeat"}'] and raw.last_seq == 4


def test_job_ids_sort_in_the_order_they_were_made_even_within_a_second() -> None:
    from remote_agent.names import is_job_id, new_job_id

    made = [new_job_id(1764583200.0 + i / 50) for i in range(50)]  # 50 ids in one second
    assert all(is_job_id(i) for i in made) and sorted(made) == made and len(set(made)) == 50
