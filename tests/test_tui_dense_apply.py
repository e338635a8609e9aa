"""What a dense stream costs per record and per second (issue 36, round two): counted, never timed."""

from __future__ import annotations

from typing import Any

import pytest

import tui.fleet.jobs as jobs_module
from tests.test_costs_flat import Clock, Posts
from tui.fleet import Fleet
from tui.services.redraw import Redraw

JOB = "20261206-000000-0d0e05"


def _metric_records(n: int, extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [
        {
            "seq": i,
            "t": 1000.0 + i / 500,
            "kind": "metric",
            "values": {"step": i, "loss": 2.0 / i, "total_steps": 10**9, **(extra or {})},
        }
        for i in range(1, n + 1)
    ]


def test_a_metric_line_without_throughput_looks_up_no_throughput_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Most lines carry step and loss only: the 11 throughput spellings are not each looked up and
    parsed for every one of them (they were ~15 % of applying a 4 × 500 lines/s stream)."""
    calls = []
    real = jobs_module.finite

    def counted(v: Any) -> float | None:
        calls.append(v)
        return real(v)

    monkeypatch.setattr(jobs_module, "finite", counted)
    fleet = Fleet(clock=lambda: 2000.0)
    fleet.apply_events("h", JOB, "0", _metric_records(200))
    job = fleet.jobs[JOB]
    assert job.step == 200 and job.total_steps == 10**9 and job.last["loss"] == pytest.approx(0.01)
    assert len(calls) <= 3 * 200, len(calls)  # total_steps and step: not 13 a line


@pytest.mark.parametrize(("key", "attr"), [("samples_per_s", "samples_per_sec"), ("tok/s", "tokens_per_sec")])
def test_a_line_with_throughput_still_gives_it(key: str, attr: str) -> None:
    fleet = Fleet(clock=lambda: 2000.0)
    fleet.apply_events("h", JOB, "0", _metric_records(3, {key: 123.5}))
    assert getattr(fleet.jobs[JOB], attr) == 123.5


def test_a_dense_stream_redraws_about_once_a_second() -> None:
    """Telemetry (points, latest values) moves the screens at most once a second, as nvitop and
    k9s refresh: each redraw of the jobs table or of a job's charts costs the same whatever the
    rate, so their count is the TUI's cost under a dense stream."""
    posts, clock = Posts(), Clock()
    redraw = Redraw(posts, clock=clock, schedule=clock.schedule)  # type: ignore[arg-type]
    for _ in range(1000):  # ten drains a second for 100 s
        redraw.publish({"last", "series"})
        clock.advance(0.1)
    assert 90 <= len(posts.tags) <= 101, len(posts.tags)
