"""Counters from hand-built journals: shares, idle waste, projection, two hosts, the host's clock.

Prices are picked so the per-second rate is round: $3.60/h = $0.001/s.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from tui.cost.billing import PricePeriod
from tui.cost.collect import HostSnapshot
from tui.cost.counters import HostInput, host_costs, job_totals
from tui.cost.report import CostContext, build
from tui.cost.runs import NodeRun, fold, idle_intervals, steps_per_second
from tui.cost.settings import HostPrice

FLAT = [PricePeriod(-math.inf, None, 3.6)]
T0 = 1_800_000_000.0


def journal(
    start: float,
    end: float | None = None,
    gpus: list[tuple[float, list[tuple[str, float]]]] = (),
    steps: list[tuple[float, int, int]] = (),
    reason: str | None = None,
) -> list[dict[str, Any]]:
    recs: list[dict[str, Any]] = [
        {"kind": "state", "state": "starting", "t": start - 0.5},
        {"kind": "state", "state": "running", "t": start},
    ]
    for t, readings in gpus:
        recs.append({"kind": "gpu", "t": t, "gpus": [{"uuid": u, "util": util} for u, util in readings]})
    for t, step, total in steps:
        recs.append({"kind": "metric", "t": t, "values": {"step": step, "total_steps": total}})
    if end is not None:
        recs.append({"kind": "state", "state": "stopped" if reason else "exited", "t": end, "reason": reason})
    recs.sort(key=lambda r: r["t"])
    return [dict(r, seq=i + 1) for i, r in enumerate(recs)]


def run_of(host: str, job: str, records: list[dict[str, Any]], state: str = "running") -> NodeRun:
    return fold(host, {"id": job, "node": "0", "name": job, "state": state}, records)


def host(gpus: list[str], now: float, **kw: Any) -> HostInput:
    return HostInput("h", kw.pop("periods", FLAT), gpus, now, **kw)


def by_job(cost: Any) -> dict[str, Any]:
    return {j.key[1]: j for j in cost.jobs}


def test_two_jobs_split_one_gpu() -> None:
    # A runs 0..3600 alone until B joins at 1800 on the same GPU: each then pays half.
    a = run_of("h", "A", journal(T0, T0 + 3600, gpus=[(T0 + 10, [("G0", 90)])]))
    b = run_of("h", "B", journal(T0 + 1800, T0 + 3600, gpus=[(T0 + 1810, [("G0", 90)])]))
    jobs = by_job(host_costs(host(["G0"], T0 + 4000), [a, b]))
    # A: 1800 s × 0.001 + 1800 s × 0.001 × ½ = 1.80 + 0.90 = $2.70; B: 1800 × 0.001 × ½ = $0.90
    assert jobs["A"].accrued.get() == pytest.approx(2.70)
    assert jobs["B"].accrued.get() == pytest.approx(0.90)


def test_gpu_share_is_its_gpus_over_the_hosts() -> None:
    # 4 GPUs. A uses G0,G1 (seen in its gpu records); B has no CUDA_VISIBLE_DEVICES: all four.
    # Per GPU 1/4 of the host; G0,G1 shared by A and B (1/8 each), G2,G3 only B.
    # A = 2/8 = 0.25; B = 2/8 + 2/4 = 0.75. Over 1000 s: A $0.25, B $0.75.
    gpus = ["G0", "G1", "G2", "G3"]
    a = run_of("h", "A", journal(T0, T0 + 1000, gpus=[(T0 + 1, [("G0", 50), ("G1", 50)])]))
    b = run_of("h", "B", journal(T0, T0 + 1000))
    cost = host_costs(host(gpus, T0 + 1000), [a, b])
    jobs = by_job(cost)
    assert jobs["A"].accrued.get() == pytest.approx(0.25)
    assert jobs["B"].accrued.get() == pytest.approx(0.75)


def test_no_gpu_host_lone_job_pays_all_concurrent_jobs_split() -> None:
    lone = run_of("h", "L", journal(T0, T0 + 1000))
    assert by_job(host_costs(host([], T0 + 5000), [lone]))["L"].accrued.get() == pytest.approx(1.0)
    # Two at once for 1000 s, then A alone for 500 s: A = 0.5 + 0.5 = $1.00, B = $0.50.
    a = run_of("h", "A", journal(T0, T0 + 1500))
    b = run_of("h", "B", journal(T0, T0 + 1000))
    jobs = by_job(host_costs(host([], T0 + 5000), [a, b]))
    assert jobs["A"].accrued.get() == pytest.approx(1.0) and jobs["B"].accrued.get() == pytest.approx(0.5)


def test_idle_waste_from_gpu_records_under_threshold() -> None:
    # Samples hold until the next: 0-600 busy, 600-1800 under 10 % (5 %, then 3 % and 9 % on its
    # two GPUs), 1800-2400 busy. Idle = 1200 s × $0.001 = $1.20 of $2.40 accrued.
    samples = [
        (T0, [("G0", 50), ("G1", 40)]),
        (T0 + 600, [("G0", 5), ("G1", 2)]),
        (T0 + 1200, [("G0", 3), ("G1", 9)]),
        (T0 + 1800, [("G0", 80), ("G1", 4)]),
    ]
    r = run_of("h", "A", journal(T0, T0 + 2400, gpus=samples))
    assert idle_intervals(r, T0 + 9999) == [(T0 + 600, T0 + 1800)]
    job = by_job(host_costs(host(["G0", "G1"], T0 + 3000), [r]))["A"]
    assert job.accrued.get() == pytest.approx(2.40) and job.idle.get() == pytest.approx(1.20)


def test_projected_cost_from_total_steps_and_rate() -> None:
    # 1 step/s for 100 s of 1000 steps; now = the last point: 900 s left at $3.60/h = $0.90,
    # plus $0.10 accrued = $1.00.
    steps = [(T0 + s, s, 1000) for s in range(0, 101, 10)]
    r = run_of("h", "A", journal(T0, None, steps=steps))
    assert steps_per_second(r) == pytest.approx(1.0)
    job = by_job(host_costs(host([], T0 + 100), [r]))["A"]
    assert job.accrued.get() == pytest.approx(0.10)
    assert job.burn.get() == pytest.approx(3.6)
    assert job.projected.get() == pytest.approx(1.00)
    # Finished: projected = accrued. Unknown total: no projection.
    done = run_of("h", "D", journal(T0, T0 + 50, steps=[(T0 + 10, 10, 1000), (T0 + 20, 20, 1000)]), "exited")
    assert by_job(host_costs(host([], T0 + 100), [done]))["D"].projected.get() == pytest.approx(0.05)
    unknown = run_of("h", "U", journal(T0, None, steps=[(T0 + 10, 10, 0), (T0 + 20, 20, 0)]))
    assert by_job(host_costs(host([], T0 + 100), [unknown]))["U"].projected is None


def test_job_on_two_hosts_at_two_prices_and_currencies() -> None:
    # Node 0 on a $3.60/h host, node 1 on a ¥7.20/h host, 1000 s each: $1.00 and ¥2.00.
    h1 = host_costs(HostInput("h1", FLAT, [], T0 + 2000), [run_of("h1", "J", journal(T0, T0 + 1000))])
    cny = [PricePeriod(-math.inf, None, 7.2, "CNY")]
    h2 = host_costs(HostInput("h2", cny, [], T0 + 2000), [run_of("h2", "J", journal(T0, T0 + 1000))])
    [total] = job_totals([h1, h2])
    assert total.hosts == ["h1", "h2"] and total.accrued.rounded() == {"CNY": 2.0, "USD": 1.0}


def test_host_accrued_uses_instance_start_minimum_and_today() -> None:
    # An AWS instance up 20 s is billed 60 s: $0.06. Today counts from midnight (host clock).
    cost = host_costs(
        host([], T0 + 20, instance_start=T0, start_source="boot", minimum_s=60), [], day_start=T0 + 10
    )
    assert cost.accrued.get() == pytest.approx(0.06) and cost.today.get() == pytest.approx(0.01)
    assert cost.burn.get() == 3.6
    unknown = host_costs(host([], T0 + 20), [])
    assert unknown.accrued is None and unknown.today is None


def test_lost_job_is_billed_until_its_last_record() -> None:
    recs = journal(T0, None) + [{"kind": "heartbeat", "t": T0 + 300, "seq": 99}]
    r = fold("h", {"id": "L", "node": "0", "state": "lost"}, recs)
    job = by_job(host_costs(host([], T0 + 5000), [r]))["L"]
    assert job.accrued.get() == pytest.approx(0.30) and job.burn.amounts == {}


def test_host_clock_offset_and_since_window() -> None:
    """The host's clock runs an hour ahead: every figure is computed on it, `since` is shifted."""
    import time

    offset = 3600.0
    host_now = time.time() + offset
    recs = journal(host_now - 100, None)  # running for 100 s by the host's clock
    snap = HostSnapshot(
        "h",
        offset,
        host_now,
        [],
        None,
        [{"id": "J", "node": "0", "name": "j", "state": "running"}],
        {("J", "0"): recs},
    )
    prices = {"h": HostPrice(3.6, "USD", "on-demand", "test")}
    report = build([snap], prices, CostContext())
    [job] = report["jobs"]
    assert job["accrued_usd"] == pytest.approx(0.10, abs=0.002) and job["burn_usd_per_hour"] == 3.6
    # Since 40 s ago on *our* clock = 40 s ago on the host's: $0.04, not 0 (the host is ahead).
    report = build([snap], prices, CostContext(), since=time.time() - 40)
    assert report["jobs"][0]["accrued_usd"] == pytest.approx(0.04, abs=0.002)
    assert report["hosts"][0]["since_source"] == "first_job"


def test_tracker_fed_in_batches_agrees_with_the_whole_journal() -> None:
    """The TUI's incremental counters and `cost --json` must show the same figures."""
    import time

    from tui.cost.tracker import CostTracker

    host_now = time.time()
    samples = [(host_now - 300 + 30 * i, [("G0", 50 if i < 5 else 2)]) for i in range(10)]
    recs = journal(
        host_now - 300, None, gpus=samples, steps=[(host_now - 300 + 30 * i, 30 * i, 1000) for i in range(10)]
    )
    job = {"id": "J", "node": "0", "name": "j", "state": "running"}
    price = HostPrice(3.6, "USD", "on-demand", "test")
    hello = {"gpu": {"gpus": [{"uuid": "G0", "index": 0}]}}
    tracker = CostTracker()
    tracker.set_host("h", price, hello)
    tracker.on_job("h", job)
    for i in range(0, len(recs), 3):  # pushes arrive in small batches
        tracker.on_records("h", "J", "0", recs[i : i + 3])
    live = tracker.report()
    whole = build(
        [HostSnapshot("h", 0.0, time.time(), ["G0"], None, [job], {("J", "0"): recs})],
        {"h": price},
        CostContext(),
    )
    for field in ("accrued_usd", "idle_usd", "burn_usd_per_hour", "projected_usd"):
        assert live["jobs"][0][field] == pytest.approx(whole["jobs"][0][field], abs=0.001), field
    # 300 s at $0.001/s; idle from the 6th sample (150 s ago): $0.15 of $0.30
    assert live["jobs"][0]["accrued_usd"] == pytest.approx(0.30, abs=0.002)
    assert live["jobs"][0]["idle_usd"] == pytest.approx(0.15, abs=0.002)
