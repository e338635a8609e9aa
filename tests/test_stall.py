"""Issue 34, a hang is no progress: a job that stops stepping while it spins a CPU (a stand-in for a
collective that never completes) is `stalled` within its bound, with why, in `ps` and the journal;
a job that pauses to checkpoint (and came back from such pauses before) is never stalled; `--stall-
action stop` ends it. The judgement is unit-tested on an injected clock."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from remote_agent.supervision.stall import StallWatch
from tests.conftest import gpudeck
from tests.support.jobs import journal
from tests.support.waiting import wait_for


def step(n: int) -> list[tuple[str, dict]]:
    return [("metric", {"values": {"step": n, "loss": 1.0}})]


def test_auto_learns_the_jobs_pace_and_its_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDECK_STALL_FLOOR", "5")
    w = StallWatch({})
    t = 0.0
    for n in range(20):  # a step a second
        w.saw(step(n), t)
        t += 1.0
    back = t + 8.0  # the last step came at t - 1: a 9 s checkpoint, and back
    w.saw(step(20), back)
    assert w.limit() == pytest.approx(13.5)  # 1.5 × the longest pause it came back from > 10 × 1 s
    assert w.check(back + 13.0) is None
    found = w.check(back + 14.0)
    assert found is not None and found["why"].startswith("no step for 14 s; median step 1.0 s")
    assert w.check(back + 20.0) is None  # once per stall
    assert w.saw(step(21), back + 21.0) == "progress again after 7 s" and w.stalled_since is None


def test_a_job_with_no_output_yet_is_not_judged_and_off_is_off() -> None:
    assert StallWatch({}).check(1e9) is None
    off = StallWatch({"stall": {"after": 0, "action": "notify"}})
    off.saw(step(1), 0.0)
    assert off.check(1e9) is None


@pytest.mark.parametrize(("flag", "said"), [("3x", "--stall '3x'"), ("0", "--stall '0'")])
def test_bad_stall_is_one_usage_line(gpudeck_home: Path, workdir: Path, flag: str, said: str) -> None:
    r = gpudeck("run", "--stall", flag, "--", "true", cwd=workdir)
    assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1


SPINS = (
    "import time, sys\n"
    "for i in range(15):\n"
    "    print(f'step={i} loss={1/(i+1):.4f}', flush=True)\n"
    "    time.sleep(0.1)\n"
    "while True:\n"  # a collective that never completes: busy, silent, no progress
    "    sum(range(10000))\n"
)


@pytest.mark.slow  # a real job that hangs
@pytest.mark.timeout(90)
def test_a_job_that_stops_stepping_is_stalled_in_ps_and_stopped_when_asked(
    gpudeck_home: Path, agent_dir: Path, workdir: Path
) -> None:
    job = gpudeck(
        "run", "--name", "hangs", "--stall", "2s", "--stall-action", "stop", "--grace", "1",
        "--", sys.executable, "-c", SPINS,
        cwd=workdir,
    ).stdout.strip()  # fmt: skip
    [stalled] = wait_for(
        lambda: [r for r in journal(agent_dir, job) if r.get("event") == "stalled"],
        timeout=60,
        what="stalled",
    )
    assert stalled["data"]["why"].startswith("no step for") and stalled["data"]["limit_s"] == 2.0
    end = wait_for(
        lambda: next((r for r in journal(agent_dir, job) if r.get("state") == "stopped"), None),
        timeout=30,
        what="stopped by the stall",
    )
    assert end["reason"].startswith("stalled: no step for")


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_ps_shows_a_stalled_job_and_a_pausing_job_is_never_stalled(
    gpudeck_home: Path, agent_dir: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUDECK_STALL_FLOOR", "2")  # auto's floor, for a test's seconds
    pauses = (
        "import time\n"
        "for i in range(60):\n"
        "    print(f'step={i} loss=0.5', flush=True)\n"
        "    time.sleep(1.5 if i % 10 == 9 else 0.05)\n"  # a 1.5 s checkpoint every 10 steps
    )
    hang = gpudeck("run", "--name", "hangs", "--", sys.executable, "-c", SPINS, cwd=workdir).stdout.strip()
    calm = gpudeck("run", "--name", "pauses", "--", sys.executable, "-c", pauses, cwd=workdir).stdout.strip()
    try:
        wait_for(
            lambda: any(
                j["id"] == hang and j.get("stalled")
                for j in json.loads(gpudeck("ps", "--json", cwd=workdir).stdout)
            ),
            timeout=60,
            what="ps shows it stalled",
        )
        row = next(line for line in gpudeck("ps", cwd=workdir).stdout.splitlines() if line.startswith(hang))
        assert "running (stalled)" in row and "no step for" in row
        wait_for(
            lambda: any(r.get("state") == "exited" for r in journal(agent_dir, calm)),
            timeout=60,
            what="the calm job's end",
        )
        assert not [
            r for r in journal(agent_dir, calm) if r.get("event") == "stalled"
        ]  # its pauses were learnt
    finally:
        gpudeck("kill", hang, cwd=workdir)


def test_a_chunks_steps_are_counted_as_one_by_one() -> None:
    """saw() counts a chunk's steps at once (issue 33); what it learns is what a loop over each
    entry learned: the interval since the last step, then a 0 for each further step of the chunk."""
    import random
    from collections import deque

    rnd = random.Random(5)
    watch = StallWatch({})
    intervals: deque[float] = deque(maxlen=200)
    longest, last_step = 0.0, None
    t = 0.0
    for _ in range(300):
        t += rnd.choice([0.0, 0.5, 2.0, 30.0])
        chunk = [
            rnd.choice(
                [
                    ("metric", {"values": {"step": 1, "loss": 0.5}}),
                    ("metric", {"values": {"loss": 0.5}}),
                    ("metric", {"values": {"step": "x"}}),
                    ("event", {"event": "e", "data": {"step": 1}}),
                ]
            )
            for _ in range(rnd.choice([0, 1, 3, 250]))
        ]
        for kind, body in chunk:  # the loop saw() ran before
            values = body.get("values") if kind == "metric" else None
            if isinstance(values, dict) and isinstance(values.get("step"), (int, float)):
                if last_step is not None:
                    intervals.append(t - last_step)
                    longest = max(longest, t - last_step)
                last_step = t
        watch.saw(chunk, t)
        assert list(watch.intervals) == list(intervals) and watch.last_step == last_step
        assert watch.longest >= longest  # (it also learns output gaps before the first step)
