"""The agent's own /metrics (opt-in per host: hosts.toml `metrics_listen` → the `metrics_listen` op
→ the detached `metrics-serve` daemon), read back by prometheus_client's parser."""

from __future__ import annotations

import json
import os
import signal
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.exporting import GPU, fake_gpu_fixture, start_job  # noqa: F401 - fixtures
from tests.support.sshd import free_port
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient, AgentError


@pytest.fixture
def daemon_gone(agent_dir: Path) -> Iterator[None]:
    """Ends the metrics daemon a test started (by its pid in metrics.json)."""
    yield
    try:
        pid = json.loads((agent_dir / "metrics.json").read_text())["pid"]
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, KeyError):
        pass


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]] | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return None
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


@pytest.mark.slow  # a job, a CLI run and a daemon: seconds
def test_hosts_toml_metrics_listen_serves_the_hosts_own_metrics(
    gpudeck_home: Path, workdir: Path, agent_dir: Path, fake_gpu: None, daemon_gone: None
) -> None:
    port = free_port()
    (gpudeck_home / "hosts.toml").write_text(f'[hosts.local]\nmetrics_listen = "127.0.0.1:{port}"\n')
    job_id = start_job(workdir, "echo 'step 4 loss 0.875'; sleep 120")  # any connection starts it
    url = f"http://127.0.0.1:{port}/metrics"

    def loss() -> list[float] | None:
        got = scrape(url)
        return got and [v for lab, v in got.get("gpudeck_job_loss", []) if lab["job_id"] == job_id]

    assert wait_for(loss, timeout=30, what="the job's loss on the host's /metrics") == [0.875]
    got = scrape(url)
    assert got is not None
    [(labels, util)] = got["DCGM_FI_DEV_GPU_UTIL"]
    assert util == GPU["util"] and labels["Hostname"] == socket.gethostname()
    state = json.loads((agent_dir / "metrics.json").read_text())
    assert state["listen"] == f"127.0.0.1:{port}"
    assert (agent_dir / "metrics.json").stat().st_mode & 0o777 == 0o600


def test_metrics_listen_refuses_a_bad_address_and_stops_on_null(
    client: AgentClient, agent_dir: Path, daemon_gone: None
) -> None:
    with pytest.raises(AgentError, match="listen"):
        client.request("metrics_listen", listen="nowhere")
    port = free_port()
    serving = client.request("metrics_listen", listen=f"127.0.0.1:{port}")["serving"]
    assert serving["listen"] == f"127.0.0.1:{port}"
    # asked again: the same daemon, not a second one
    assert client.request("metrics_listen", listen=f"127.0.0.1:{port}")["serving"]["pid"] == serving["pid"]
    assert wait_for(lambda: scrape(f"http://127.0.0.1:{port}/metrics") is not None, what="it to answer")
    assert client.request("metrics_listen", listen=None)["serving"] is None
    assert scrape(f"http://127.0.0.1:{port}/metrics") is None
