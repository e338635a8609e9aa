"""`gpudeck export prometheus`: /metrics in the text format, read back by prometheus_client's parser."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from remote_agent.exporter.exposition import render
from remote_agent.exporter.snapshot import Gpu, Host, JobPoint, Snapshot
from tests.conftest import gpudeck
from tests.support.exporting import (  # noqa: F401 - fixtures
    GPU,
    exporter_fixture,
    fake_gpu_fixture,
    ps_all,
    start_job,
)
from tests.support.waiting import wait_for
from tui.export.gather import gather
from tui.session import Session


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample by name, as Prometheus' own client library parses the text (it raises on bad text)."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        assert family.documentation, f"{family.name} has no HELP"
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def test_render_parses_with_escaped_labels_and_dcgm_names() -> None:
    awkward = 'a "quoted" \\ name\nwith a line feed'
    snap = Snapshot(
        [
            Host("gpu1", True, [Gpu(0, "GPU-1", "NVIDIA A100", 91.0, 1000.0, 81920.0, 66.0, 301.5)]),
            Host("down", False),
        ],
        [JobPoint("j1", awkward, "gpu1", "running", 0.125, 40, 512.5, 3e-4, 2.5, "EUR", 7200)],
    )
    got = samples(render(snap))
    [(labels, util)] = got["DCGM_FI_DEV_GPU_UTIL"]
    assert util == 91.0
    assert labels == {
        "gpu": "0",
        "UUID": "GPU-1",
        "device": "nvidia0",
        "modelName": "NVIDIA A100",
        "Hostname": "gpu1",
    }
    assert got["DCGM_FI_DEV_FB_FREE"][0][1] == 81920 - 1000
    assert got["DCGM_FI_DEV_POWER_USAGE"][0][1] == 301.5
    assert sorted((lab["host"], v) for lab, v in got["gpudeck_host_up"]) == [("down", 0), ("gpu1", 1)]
    [(labels, loss)] = got["gpudeck_job_loss"]
    assert loss == 0.125 and labels["job_name"] == awkward and labels["job_id"] == "j1"
    [(labels, cost)] = got["gpudeck_job_cost_total"]
    assert (cost, labels["currency"]) == (2.5, "EUR")
    assert got["gpudeck_job_gpu_seconds_total"][0][1] == 7200
    assert got["gpudeck_job_samples_per_second"][0][1] == 512.5
    assert got["gpudeck_job_state"][0][0]["state"] == "running"
    # Prometheus renames a scraped `job` label to `exported_job`: none of ours is called that
    assert all("job" not in labels for series in got.values() for labels, _ in series)


def test_unknown_values_leave_no_sample() -> None:
    snap = Snapshot(
        [Host("h", True, [Gpu(1, "G", "", None, None, None, None, None)])],
        [JobPoint("j", "n", "h", "queued")],
    )
    got = samples(render(snap))
    assert "DCGM_FI_DEV_GPU_UTIL" not in got and "gpudeck_job_loss" not in got
    assert got["gpudeck_job_state"] == [({"job_id": "j", "job_name": "n", "host": "h", "state": "queued"}, 1)]


@pytest.mark.slow  # a job and a CLI run: a few seconds
def test_once_prints_a_running_jobs_loss_and_its_gpu(
    gpudeck_home: Path, workdir: Path, fake_gpu: None
) -> None:
    job_id = start_job(workdir, "echo 'step 7 loss 0.625'; sleep 120", "--price-per-hour", "3.6")
    out = gpudeck("export", "prometheus", "--once", cwd=workdir)
    assert out.returncode == 0, out.stderr
    got = samples(out.stdout)
    assert [v for lab, v in got["gpudeck_job_loss"] if lab["job_id"] == job_id] == [0.625]
    assert [v for lab, v in got["gpudeck_job_step"] if lab["job_id"] == job_id] == [7]
    [(labels, util)] = got["DCGM_FI_DEV_GPU_UTIL"]
    assert util == GPU["util"] and labels["UUID"] == GPU["uuid"] and labels["Hostname"] == "local"
    [(labels, cost)] = [s for s in got["gpudeck_job_cost_total"] if s[0]["job_id"] == job_id]
    assert cost > 0 and labels["currency"] == "USD"
    assert [v for lab, v in got["gpudeck_job_gpu_seconds_total"] if lab["job_id"] == job_id][0] > 0


@pytest.mark.slow  # a job and a CLI run: a few seconds
def test_ended_jobs_leave_after_keep_ended(gpudeck_home: Path, workdir: Path) -> None:
    job_id = start_job(workdir, "echo 'step 1 loss 2.5'")
    wait_for(lambda: [j for j in ps_all(workdir) if j["id"] == job_id and j["ended_at"]], what="its end")
    [job] = [j for j in ps_all(workdir) if j["id"] == job_id]
    ended = float(job["ended_at"])  # type: ignore[arg-type]
    session = Session()
    try:
        kept = gather(session, keep_ended_s=60, now=ended + 30)
        gone = gather(session, keep_ended_s=60, now=ended + 90)
    finally:
        session.close()
    assert [j.loss for j in kept.jobs if j.id == job_id] == [2.5]
    assert [j for j in gone.jobs if j.id == job_id] == []


def test_bad_listen_is_one_usage_line(gpudeck_home: Path) -> None:
    out = gpudeck("export", "prometheus", "--listen", "nowhere")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "--listen 'nowhere'" in out.stderr


@pytest.mark.slow  # a job and a CLI run: a few seconds
def test_server_answers_metrics_and_404(exporter: str, workdir: Path) -> None:
    job_id = start_job(workdir, "echo 'step 3 loss 1.5'; sleep 120")
    with urllib.request.urlopen(exporter, timeout=30) as r:
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        got = samples(r.read().decode())
    assert [v for lab, v in got["gpudeck_job_loss"] if lab["job_id"] == job_id] == [1.5]
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(exporter.replace("/metrics", "/other"), timeout=30)
    assert err.value.code == 404
