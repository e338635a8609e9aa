"""Issue 33: a launch with a price or an idle rule asks the host only for what its share needs: the
host's GPUs (hello) and, on a host without GPUs, how many jobs run there (`live_jobs`, counted by
the supervisors' locks), never the full job listing that reads every journal. Counted by recording
the requests a real local agent gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.jobs import launch, wait_state
from tui.actions.node_spec import cost_fields
from tui.actions.options import LaunchOptions
from tui.remote.client import AgentClient


class Recorded:
    """The Agents protocol over one real agent client, noting each op asked."""

    def __init__(self, client: AgentClient) -> None:
        self.client = client
        self.ops: list[str] = []

    def hosts(self) -> list[str]:
        return ["local"]

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        self.ops.append(op)
        return self.client.request(op, timeout=timeout, **args)


def test_a_priced_launch_counts_the_live_jobs_without_listing_them(
    client: AgentClient, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    jobs = [launch(client, workdir, ["sleep", "600"]) for _ in range(2)]
    ended = launch(client, workdir, ["true"])
    try:
        for j in jobs:
            wait_state(client, j["id"], {"running"})
        wait_state(client, ended["id"], {"exited"})
        agents = Recorded(client)
        opts = LaunchOptions(("true",), price_per_hour=3.0)
        fields = cost_fields(agents, "local", opts, {}, {})
        assert fields["price"].share == pytest.approx(1 / 3)  # beside the two running, not the ended one
        assert "jobs" not in agents.ops and agents.ops.count("live_jobs") == 1
    finally:
        for j in jobs:
            client.request("kill", job=j["id"], node="0", timeout=60)


class TwoGpus:
    """A host with two GPUs, answering only `hello` (anything else asked fails the test)."""

    def __init__(self) -> None:
        self.ops: list[str] = []

    def hosts(self) -> list[str]:
        return ["gpu-box"]

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        self.ops.append(op)
        assert op == "hello", op
        return {"gpu": {"gpus": [{"index": 0}, {"index": 1}]}}


def test_on_a_host_with_gpus_the_share_needs_no_count_of_jobs() -> None:
    agents = TwoGpus()
    opts = LaunchOptions(("true",), price_per_hour=3.0, idle_stop="30m@10%")
    fields = cost_fields(agents, "gpu-box", opts, {"CUDA_VISIBLE_DEVICES": "1"}, {})
    assert fields["price"].share == 0.5 and agents.ops == ["hello"]
