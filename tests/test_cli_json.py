"""JSON with one type per field (#25, finding 17): unknown is null (never the word "unknown", never an
empty string), every entry of a list has every field, and every acting verb answers --json with one
object."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck

SLEEP = [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"]


def _json(*argv: str, cwd: Path | None = None) -> object:
    result = gpudeck(*argv, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_an_unknown_price_is_null_in_prices_and_cost(gpudeck_home: Path) -> None:
    prices = _json("prices", "--json")
    assert prices["hosts"][0]["per_hour"] is None  # type: ignore[index]
    assert any(e["on_demand_usd_per_hour"] is None for e in prices["catalog"])  # type: ignore[index]
    cost = _json("cost", "--json")
    assert cost["hosts"][0]["price"]["per_hour"] is None  # type: ignore[index]


def test_hosts_json_gives_every_entry_every_field(gpudeck_home: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (gpudeck_home / "hosts.toml").write_text(f'[hosts.down]\ntarget = "127.0.0.1:{port}"\n')
    result = gpudeck("hosts", "--json")
    entries = {e["name"]: e for e in json.loads(result.stdout)}
    assert set(entries["down"]) == set(entries["local"]), (entries["down"], entries["local"])
    assert entries["down"]["reachable"] is False and entries["down"]["agent_version"] is None
    assert entries["local"]["error"] is None and isinstance(entries["local"]["gpus"], list)


@pytest.mark.slow
def test_every_acting_verb_answers_json_and_why_is_null_when_empty(gpudeck_home: Path, workdir: Path) -> None:
    ran = _json("run", "--json", "--name", "quick", "--", sys.executable, "-c", "pass", cwd=workdir)
    assert (
        set(ran) == {"id", "name", "state", "hosts"} and ran["name"] == "quick" and ran["hosts"] == ["local"]
    )  # type: ignore[index]
    assert gpudeck("logs", "-f", ran["id"], cwd=workdir).returncode == 0  # type: ignore[index]
    listed = _json("ps", "--all", "--json", cwd=workdir)
    assert listed[0]["state"] == "exited" and listed[0]["why"] is None and listed[0]["cause"] is None  # type: ignore[index]
    removed = _json("rm", "--json", ran["id"], cwd=workdir)  # type: ignore[index]
    assert removed == {"id": ran["id"], "removed": True}  # type: ignore[index]

    live = _json("run", "--json", "--", *SLEEP, cwd=workdir)
    stopped = _json("stop", "--json", "--grace", "5", live["id"], cwd=workdir)  # type: ignore[index]
    assert stopped["id"] == live["id"] and stopped["state"] == "stopped" and stopped["run_touched"] is True  # type: ignore[index]
    assert isinstance(stopped["seconds"], float) and stopped["pid"] is None  # type: ignore[index]
    live = _json("run", "--json", "--", *SLEEP, cwd=workdir)
    killed = _json("kill", "--json", live["id"], cwd=workdir)  # type: ignore[index]
    assert killed["state"] == "killed"  # type: ignore[index]

    log = workdir / "train.log"
    log.write_text("step=1 loss=2.0\n")
    watched = _json("watch", "--json", str(log), cwd=workdir)
    assert set(watched) == {"id", "name", "state", "hosts"}  # type: ignore[arg-type]
    ended = _json("stop", "--json", watched["id"], cwd=workdir)  # type: ignore[index]
    assert ended["state"] is None and ended["run_touched"] is False  # type: ignore[index]


@pytest.mark.slow
def test_scale_answers_json(gpudeck_home: Path, workdir: Path) -> None:
    (workdir / "ck").mkdir()  # scale resumes from a checkpoint dir: it must exist
    job = _json(
        "run",
        "--json",
        "--nodes",
        "2",
        "--launcher",
        "none",
        "--grace",
        "5",
        "--",
        *SLEEP,
        "--checkpoint-dir",
        str(workdir / "ck"),
        cwd=workdir,
    )
    scaled = _json("scale", "--json", job["id"], "+1", cwd=workdir)  # type: ignore[index]
    assert scaled["previous"] == job["id"] and scaled["nodes_before"] == 2 and scaled["nodes"] == 3  # type: ignore[index]
    assert scaled["dropped"] is None and scaled["elastic"] is None  # type: ignore[index]
    assert gpudeck("kill", scaled["id"], cwd=workdir).returncode == 0  # type: ignore[index]
