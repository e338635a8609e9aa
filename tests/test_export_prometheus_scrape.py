"""The Done-when: a real Prometheus scrapes `gpudeck export prometheus` while a job runs, and PromQL
returns the job's loss and its GPU's utilisation."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.exporting import GPU, exporter_fixture, fake_gpu_fixture, start_job  # noqa: F401 - fixtures
from tests.support.sshd import free_port
from tests.support.waiting import wait_for

PROMETHEUS = shutil.which("prometheus")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (apt-get install prometheus)"),
]


@pytest.fixture
def prometheus(exporter: str, tmp_path: Path) -> Iterator[str]:
    """Prometheus scraping the exporter every second, on free ports of 127.0.0.1; yields its API URL."""
    target = urllib.parse.urlsplit(exporter).netloc
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"scrape_configs:\n  - job_name: gpudeck\n    static_configs:\n      - targets: ['{target}']\n"
    )
    web = f"127.0.0.1:{free_port()}"
    assert PROMETHEUS is not None
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address={web}",
            "--log.level=warn",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "prometheus.log").open("w"),
    )
    try:
        yield f"http://{web}/api/v1/query"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def query(api: str, promql: str) -> list[dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"{api}?{urllib.parse.urlencode({'query': promql})}", timeout=10) as r:
            answer = json.loads(r.read())
    except OSError:  # not listening yet
        return []
    assert answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def test_promql_returns_the_running_jobs_loss_and_gpu_util(prometheus: str, workdir: Path) -> None:
    job_id = start_job(workdir, "echo 'step 12 loss 0.4375'; sleep 300")
    [loss] = wait_for(
        lambda: query(prometheus, f'gpudeck_job_loss{{job_id="{job_id}"}}'),
        timeout=90,
        what="the loss in Prometheus",
    )
    assert float(loss["value"][1]) == 0.4375
    assert loss["metric"]["job"] == "gpudeck"  # Prometheus' own job label; ours stays job_id
    state = wait_for(
        lambda: query(prometheus, f'gpudeck_job_state{{job_id="{job_id}",state="running"}}'), timeout=30
    )
    assert float(state[0]["value"][1]) == 1
    [util] = wait_for(
        lambda: query(prometheus, f'DCGM_FI_DEV_GPU_UTIL{{UUID="{GPU["uuid"]}",Hostname="local"}}'),
        timeout=30,
        what="the GPU util in Prometheus",
    )
    assert float(util["value"][1]) == GPU["util"]
    assert util["metric"]["modelName"] == GPU["name"]
