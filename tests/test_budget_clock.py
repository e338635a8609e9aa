"""Issue 29, finding 6: a wall-clock step changes nothing in a budget or an idle stop (durations run
on monotonic time); journal timestamps stay wall time. The step is the agent's injectable clock
(GPUDECK_CLOCK_STEP_FILE), read by a real supervisor."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from remote_agent.supervision.autostop import AutoStop
from tests.support.jobs import launch
from tests.support.node_journals import events, final, records
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport

COUNTING = [
    sys.executable,
    "-c",
    "import itertools, time\nfor i in itertools.count():\n    print('step=%d loss=%.3f' % (i, 1 / (i + 1)), flush=True)\n    time.sleep(0.1)",
]


@pytest.mark.slow  # a job that must outlive a +1 h step by a few seconds
def test_a_wall_clock_step_of_an_hour_does_not_stop_a_budget_job(
    agent_dir: Path, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = tmp_path / "clock-step"
    step.write_text("0")
    monkeypatch.setenv("GPUDECK_CLOCK_STEP_FILE", str(step))
    client = AgentClient(LocalTransport(agent_dir))
    client.connect()
    try:  # 3600 USD/h: 1 USD/s, a 60 USD budget lasts a minute of real time
        job = launch(client, workdir, COUNTING, price={"per_hour": 3600.0, "share": 1.0}, budget=60, grace=1)[
            "id"
        ]
    finally:
        client.close()
    wait_for(lambda: len(records(agent_dir, job)) > 5, what="the job's first points")
    step.write_text("3600")  # the host's clock jumps an hour ahead
    stepped = wait_for(
        lambda: [r for r in records(agent_dir, job) if r["t"] > time.time() + 3000],
        what="a record stamped with the stepped clock",
    )
    first = stepped[0]["seq"]
    # 30 more points (3 s, three budget checks) after the step, or the job's end
    wait_for(
        lambda: final(records(agent_dir, job)) or records(agent_dir, job)[-1]["seq"] >= first + 30,
        what="3 s of output after the step",
    )
    recs = records(agent_dir, job)
    assert not events(recs, "autostop") and final(recs) is None, [
        r for r in recs if r["kind"] in ("event", "state")
    ]


class Journal:
    def __init__(self) -> None:
        self.records: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, **fields: Any) -> None:
        self.records.append((kind, fields))


@pytest.mark.parametrize("jump", [3600.0, -3600.0], ids=["ahead", "back"])
def test_the_idle_stop_counts_real_seconds_whatever_the_wall_clock_does(jump: float) -> None:
    wall, mono = [1_000_000.0], [50.0]
    spec = {"idle_stop": {"below_pct": 5.0, "minutes": 1.0, "grace_minutes": 0.0}}
    auto = AutoStop(spec, Journal(), clock=lambda: wall[0], mono=lambda: mono[0])
    auto.on_gpus([0.0])  # idle from now
    wall[0] += jump  # the clock steps, 12 s of real time pass
    mono[0] += 12
    wall[0] += 12
    assert auto.check() is None  # +1 h: no stop after 12 s
    mono[0] += 47
    wall[0] += 47
    assert auto.check() is None  # 59 s of real idle: not yet
    mono[0] += 1
    wall[0] += 1
    reason = auto.check()  # −1 h: the stop still fires at its minute
    assert reason is not None and "for 1 min" in reason
