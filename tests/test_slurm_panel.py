"""The cluster panel's words (issue 30), without a cluster: a Slurm host's `slurm` report in the
fleet model becomes lines of its host panel; an unchanged report does not redraw it."""

from __future__ import annotations

from tui.fleet import Fleet
from tui.widgets.host_panel import render_host

REPORT = {
    "version": "22.05.8",
    "user": "ann",
    "partitions": [
        {
            "name": "gpu",
            "default": True,
            "state": "UP",
            "total_nodes": 3,
            "gpus": {"total": 6, "idle": 2, "allocated": 4, "down": 0},
        }
    ],
    "queue": [{"job_id": "17", "state": "PENDING", "reason": "Resources", "start": "2026-12-06T01:00:00"}],
}


def test_a_slurm_report_becomes_the_hosts_cluster_lines() -> None:
    fleet = Fleet(clock=lambda: 1000.0)
    fleet.set_host_status("cl", "connected")
    assert fleet.apply_slurm("cl", REPORT) == {"hosts"}
    version = fleet.hosts["cl"].version
    text = render_host(fleet.hosts["cl"], fleet, 1000.0, 120).plain
    assert "partition gpu* UP: 3 nodes, GPUs 6: 2 idle, 4 allocated, 0 down" in text, text
    assert "17 PENDING (Resources), expected start 2026-12-06T01:00:00" in text, text
    fleet.apply_slurm("cl", dict(REPORT))
    assert fleet.hosts["cl"].version == version  # the same report: nothing to redraw
    assert fleet.apply_slurm("cl", "garbage") == set() and fleet.bad_records == 1  # type: ignore[arg-type]
