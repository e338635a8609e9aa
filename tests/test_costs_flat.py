"""Costs that stay flat (issue 36, findings 6 and 7), without the TUI: an ended node's cost comes
whole from the agent's `cost_summary` (the same figures as its journal from seq 1, which is then not
needed), the counters keep a bounded window of steps however long a job prints, and the redraw
throttle turns a dense stream into a few redraws a second (an injected clock, no sleeps)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from remote_agent.jobstate import JobView
from tests.support.long_job import write_files
from tui.cost.runs import RATE_WINDOW_S, NodeRun, apply, steps_per_second
from tui.cost.settings import host_price
from tui.cost.tracker import CostTracker
from tui.services.redraw import MIN_REDRAW, TELEMETRY_REDRAW, Redraw

JOB = "20261206-000000-c0570f"
GPU_A, GPU_B = "GPU-aaaa", "GPU-bbbb"


def journal(start: float) -> list[dict[str, Any]]:
    """A node that ran 1,000 s on GPU_A of two: busy, idle, N/A and busy again (a sample every 5 s),
    printing steps, with a budget warning, stopped by the user."""
    recs: list[dict[str, Any]] = [
        {"kind": "state", "state": "starting", "supervisor_pid": 1, "t": start},
        {"kind": "state", "state": "running", "pid": 2, "t": start + 3},
    ]
    for i in range(200):
        t = start + 3 + 5 * i
        util = 95.0 if i < 60 or i >= 150 else (2.0 if i < 120 else None)
        gpu = {"uuid": GPU_A, "index": 0, "mem_used_mib": 100}
        if util is not None:
            gpu["util"] = util
        recs.append({"kind": "gpu", "gpus": [gpu], "t": t})
        recs.append({"kind": "metric", "values": {"step": i, "loss": 1.0 / (i + 1)}, "t": t + 1})
    recs.append({"kind": "event", "event": "budget_warning", "data": {"budget": 5.0}, "t": start + 500})
    recs.append({"kind": "state", "state": "stopped", "reason": "user", "exit_code": None, "t": start + 1003})
    return [dict(r, seq=i + 1) for i, r in enumerate(recs)]


def tracker() -> CostTracker:
    t = CostTracker()
    hello = {"gpu": {"gpus": [{"uuid": GPU_A}, {"uuid": GPU_B}]}}
    t.set_host("local", host_price({"price_per_hour": 7.2}), hello, 0.0, 0.0)
    return t


def figures(t: CostTracker) -> dict[str, Any]:
    (job,) = [j for j in t.report()["jobs"] if j["id"] == JOB]
    return {k: job[k] for k in ("accrued_usd", "idle_usd", "burn_usd_per_hour", "projected_usd", "state")}


def test_an_ended_nodes_summary_prices_it_as_its_whole_journal_does(agent_dir: Path) -> None:
    directory = agent_dir / "jobs" / JOB / "0"
    directory.mkdir(parents=True)
    write_files(directory, JOB, "summed", agent_dir, 0, None, 1)
    records = journal(1_000_000.0)
    (directory / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    obj = JobView(JOB, "0", directory).refresh()
    summary = obj["cost_summary"]
    assert summary["gpus"] == [GPU_A] and summary["end"] == records[-1]["t"]
    assert len(summary["samples"]) == 4  # busy, idle, N/A, busy: the crossings, not 200 samples

    from_journal = tracker()
    from_journal.on_records("local", JOB, "0", records)
    assert from_journal.on_job("local", dict(obj, cost_summary=None))  # fed from seq 1: known
    from_summary = tracker()
    assert from_summary.on_job("local", obj)  # known without one record
    expected = figures(from_journal)
    assert expected["accrued_usd"] > expected["idle_usd"] > 0  # the idle stretch priced
    assert figures(from_summary) == expected
    from_summary.on_records("local", JOB, "0", records)  # a view opened and read the journal
    assert figures(from_summary) == expected  # nothing counted twice


def test_the_counters_keep_a_bounded_window_of_steps_and_the_same_rate() -> None:
    run = NodeRun(job=JOB, node="0", host="local")
    every: list[tuple[float, float]] = []
    n, per_s = 60_000, 100.0  # ten minutes at 100 steps a second, slowing down at the end
    for i in range(n):
        t = 1000.0 + i / per_s + (0.02 * (i - 50_000) if i > 50_000 else 0.0)
        apply(run, [{"kind": "metric", "values": {"step": i}, "t": t}])
        every.append((t, float(i)))
    assert len(run.steps) <= RATE_WINDOW_S * per_s + 2 and run.step_count == n
    window = [p for p in every if p[0] >= every[-1][0] - RATE_WINDOW_S]  # the rule over every point
    (t0, s0), (t1, s1) = window[0], window[-1]
    assert steps_per_second(run) == (s1 - s0) / (t1 - t0)


class Posts:
    def __init__(self) -> None:
        self.tags: list[frozenset[str]] = []

    def post_message(self, message: Any) -> None:
        self.tags.append(message.tags)


class Clock:
    """A fake time and a fake loop: scheduled callbacks run when the clock passes their time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.due: list[tuple[float, Any]] = []

    def __call__(self) -> float:
        return self.now

    def schedule(self, delay: float, fn: Any) -> Any:
        entry = [self.now + delay, fn, False]
        self.due.append(entry)  # type: ignore[arg-type]

        class Handle:
            def cancel(self) -> None:
                entry[2] = True

        return Handle()

    def advance(self, dt: float) -> None:
        self.now += dt
        for entry in [e for e in self.due if e[0] <= self.now]:
            self.due.remove(entry)
            if not entry[2]:
                entry[1]()


def test_a_dense_stream_is_a_few_redraws_a_second_and_a_new_job_shows_at_once() -> None:
    posts, clock = Posts(), Clock()
    redraw = Redraw(posts, clock=clock, schedule=clock.schedule)  # type: ignore[arg-type]
    for _ in range(2000):  # 2,000 drains' worth of points over 10 s
        redraw.publish({"last", "series"})
        clock.advance(0.005)
    assert len(posts.tags) <= 10 / TELEMETRY_REDRAW + 1
    assert all(t == {"last", "series"} for t in posts.tags)
    before = len(posts.tags)
    clock.advance(0.01)
    redraw.publish({"job"})  # a new job: within MIN_REDRAW, not the telemetry's wait
    clock.advance(MIN_REDRAW)
    assert len(posts.tags) == before + 1 and "job" in posts.tags[-1]


def test_a_fold_cached_before_summaries_is_kept_and_says_partial(agent_dir: Path) -> None:
    """An agent upgrade must not refold every long journal: the old cache stands, and the summary
    it cannot have says `partial` (the client then reads that journal, as before)."""
    from remote_agent.jobstate import CACHE_NAME

    directory = agent_dir / "jobs" / JOB / "0"
    directory.mkdir(parents=True)
    write_files(directory, JOB, "old", agent_dir, 0, None, 1)
    records = journal(1_000_000.0)
    (directory / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    JobView(JOB, "0", directory).refresh()  # folds and caches (ended)
    cache = json.loads((directory / CACHE_NAME).read_text())
    del cache["fields"]["cost_summary"]  # as an agent before this one wrote it
    cache["fields"]["last"] = {"loss": -1.0}  # a value only the cache holds: kept means not refolded
    (directory / CACHE_NAME).write_text(json.dumps(cache))
    obj = JobView(JOB, "0", directory).refresh()
    assert obj["last"] == {"loss": -1.0} and obj["state"] == "stopped"
    assert obj["cost_summary"]["partial"] is True
    assert not tracker().on_job("local", obj)  # not known from it: its journal is read instead


def test_a_summary_survives_records_of_any_shape() -> None:
    # A journal is read totally (jobstate counts a malformed record and goes on): the summary must
    # too — a state or event that is a list was a TypeError that took `ps` down with "internal error".
    from remote_agent import costsummary

    summary = costsummary.empty()
    for record in (
        {"seq": 1, "t": 1.0, "kind": "state", "state": "running"},
        {"seq": 2, "t": 2.0, "kind": "state", "state": ["exited"]},
        {"seq": 3, "t": 3.0, "kind": "event", "event": ["budget_stop"]},
        {"seq": 4, "t": 4.0, "kind": "gpu", "gpus": "many"},
        {"seq": 5, "t": 5.0, "kind": "state", "state": "exited"},
    ):
        costsummary.fold(summary, record, 5.0)
    assert summary["start"] == 1.0 and summary["end"] == 5.0 and summary["state"] == "exited"
