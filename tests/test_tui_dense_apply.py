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


def test_spilling_points_into_history_picks_once_a_bucket_not_once_a_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long job's points leave the recent window in chunks: each bucket's min and max is picked
    over its share at once (one pick per point was a quarter of applying a dense stream)."""
    import tui.fleet.series as series_module

    picks = []
    real = series_module._pick

    def counted(xs: Any, ys: Any, lo: int, hi: int) -> tuple[int, int]:
        picks.append(hi - lo)
        return real(xs, ys, lo, hi)

    s = series_module.Series(recent=64, buckets=8)
    for i in range(5000):  # the history fills and merges: buckets of many points
        s.add(i, float(i % 97))
    monkeypatch.setattr(series_module, "_pick", counted)
    for i in range(5000, 10000):
        s.add(i, float(i % 97) if i != 7777 else 1e6)
    assert len(picks) <= 5000 / 20, len(picks)
    assert s.max == 1e6 and (7777.0, 1e6) in s.downsample(10_000)  # the spike survives the buckets


def test_a_gpu_sample_is_telemetry_unless_the_hosts_gpus_changed() -> None:
    """Each host's `gpus` poll (every second) is numbers that move: it waits for the telemetry
    redraw instead of asking for one 0.1 s later, which doubled the redraws under a dense stream.
    A host's first sample, or a GPU come or gone, still redraws at once."""
    from tui.services.redraw import TELEMETRY

    def sample(n: int, util: int) -> dict[str, Any]:
        return {"available": True, "gpus": [{"index": i, "uuid": f"GPU-{i}", "util": util} for i in range(n)]}

    fleet = Fleet(clock=lambda: 2000.0)
    assert not fleet.apply_gpus("a", sample(2, 10)) <= TELEMETRY  # the first: structural
    assert fleet.apply_gpus("a", sample(2, 90)) <= TELEMETRY  # numbers only
    assert fleet.hosts["a"].gpus[0].util == 90
    assert not fleet.apply_gpus("a", sample(3, 90)) <= TELEMETRY  # a GPU came
