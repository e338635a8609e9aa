"""A steady job's heartbeats and GPU samples are thinned; a change is written at the next interval."""

from __future__ import annotations

from remote_agent.supervision.steady import STEADY_EVERY, Steady

GPU = {
    "uuid": "GPU-1",
    "index": 0,
    "util": 97,
    "mem_used_mib": 70000,
    "mem_total_mib": 81920,
    "temp_c": 70,
    "power_w": 600.0,
}


def test_repeats_wait_for_the_steady_interval_changes_do_not() -> None:
    steady = Steady(heartbeat_every=10.0, gpu_every=10.0)
    assert steady.heartbeat_due(0, 0.0) and steady.gpu_due([GPU], 0.0)  # the first of each is written
    steady.heartbeat_written(0, 0.0)
    steady.gpu_written([GPU], 0.0)
    assert not steady.heartbeat_due(0, 10.0) and steady.heartbeat_due(
        512, 10.0
    )  # output moved: adoption needs it
    # the 5th interval repeats nothing; the 6th is due even when the loop wakes a tick early
    assert not steady.heartbeat_due(0, (STEADY_EVERY - 1) * 10.0) and steady.heartbeat_due(
        0, STEADY_EVERY * 10.0 - 0.05
    )
    warmer = dict(GPU, temp_c=75, power_w=650.0)  # neither cost, rules nor the charts' util/mem see these
    assert not steady.gpu_due([warmer], 10.0)
    assert steady.gpu_due([dict(GPU, util=96)], 10.0) and steady.gpu_due(
        [dict(GPU, mem_used_mib=70001)], 10.0
    )
    assert steady.gpu_due([GPU, dict(GPU, uuid="GPU-2")], 10.0)  # another GPU joined
    assert steady.gpu_due([GPU], STEADY_EVERY * 10.0)
