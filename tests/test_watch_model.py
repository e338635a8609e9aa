"""A watch job in the client's plain model: the Fleet keeps its `watch` (path, pid), the core's
targets carry it, and the rules never see a watched run (gpudeck cannot resize it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.actions.control import JobTarget, end, restart
from tui.errors import GpudeckError
from tui.fleet import Fleet
from tui.policy.from_fleet import Sampler
from tui.policy.rules import parse

RULES = parse(
    '[[rule]]\nname = "b"\nkind = "metric"\njobs = "*"\nmetric = "backlog"\nabove = 1\nfor = "1m"\n'
    "add = 1\nmax = 3\n",
    Path("p.toml"),
)


def fleet_with_watch(pid: int | None) -> Fleet:
    fleet = Fleet(clock=lambda: 10.0)
    fleet.apply_jobs(
        "gpu-a",
        [
            {
                "id": "20261201-000000-aaaaaa",
                "name": "hand",
                "node": "0",
                "state": "running",
                "started_at": 0.0,
                "last_seq": 0,
                "last": {"backlog": 5},
                "watch": {"path": "/runs/train.log", "pid": pid, "pid_start": 7},
            },
            {
                "id": "20261201-000000-bbbbbb",
                "name": "ours",
                "node": "0",
                "state": "running",
                "started_at": 0.0,
                "last_seq": 0,
                "last": {"backlog": 5},
                "watch": None,
            },
        ],
    )
    return fleet


class NoAgents:
    """The core must refuse before asking any host."""

    def request(self, host: str, op: str, **kw: object) -> object:
        raise AssertionError(f"asked {host} for {op}")

    def hosts(self) -> list[str]:
        return []

    def notice(self, text: str) -> None:
        pass


def test_the_fleet_keeps_a_watch_and_the_core_refuses_what_it_cannot_do() -> None:
    fleet = fleet_with_watch(None)
    job = fleet.jobs["20261201-000000-aaaaaa"]
    assert job.watch is not None and job.watch.path == "/runs/train.log" and job.watch.read_only
    assert fleet.jobs["20261201-000000-bbbbbb"].watch is None
    target = JobTarget.of_model(job)
    for call in (lambda: end(NoAgents(), target, "kill"), lambda: restart(NoAgents(), None, target)):
        with pytest.raises(GpudeckError, match="watches /runs/train.log"):
            call()
    with_pid = JobTarget.of_model(fleet_with_watch(4242).jobs["20261201-000000-aaaaaa"])
    assert with_pid.watch is not None and with_pid.watch.pid == 4242 and not with_pid.watch.read_only
    with pytest.raises(GpudeckError, match="restart is not offered"):
        restart(NoAgents(), None, with_pid)


def test_rules_never_see_a_watched_run() -> None:
    views = Sampler(RULES).sample(fleet_with_watch(None), 10.0)
    assert [v.name for v in views] == ["ours"]


def test_logs_f_of_a_watched_run_that_ended_by_itself_exits_0() -> None:
    from tui.commands.logs import job_exit_code

    # `exited` means code 0 by the states' contract; a watched pid's own code is unknown (null).
    assert job_exit_code({"state": "exited", "exit_code": None, "signal": None}) == 0
    assert job_exit_code({"state": "stopped", "exit_code": None, "signal": None}) == 143
