"""Instance rules (`instance_idle_stop`) against the local Aliyun endpoint: only an opted-in idle
instance is stopped; every decision is journaled with its inputs; a dry run stops nothing."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.aliyun import AliyunServer, serving
from tui import cli
from tui.cloud.rules import journal_path, read_journal
from tui.hosts_file import HostEntry, add_host, load_hosts, set_host_fields


@pytest.fixture
def aliyun(gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:
        yield server


def gpudeck(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.run(list(args))
    return code, out.getvalue(), err.getvalue()


def cloud_host(name: str, instance_id: str, rule: str | None) -> None:
    add_host(HostEntry(name=name, target=f"root@127.0.0.1:2{len(name)}"))
    set_host_fields(name, {"provider": "aliyun", "instance_id": instance_id})
    if rule is not None:
        code, _out, err = gpudeck("hosts", "set", name, f"instance_idle_stop={rule}")
        assert code == 0, err


def test_only_opted_in_idle_instances_are_stopped_and_every_decision_is_journaled(
    aliyun: AliyunServer,
) -> None:
    now = time.time()
    acc = aliyun.account
    managed = {"gpudeck-managed": "true"}
    idle = acc.add(name="idle", tags=managed, started=now - 7200)
    theirs = acc.add(name="theirs", started=now - 7200)  # idle too, but the user never opted it in
    busy = acc.add(name="busy", tags=managed, started=now - 7200)
    young = acc.add(name="young", tags=managed, started=now - 600)  # idle since its start 10 minutes ago
    for iid in (idle, theirs, young):
        acc.metrics[iid] = [(now - 60 * k, 1.0) for k in range(40)]
    acc.metrics[busy] = [(now - 60 * k, 88.0) for k in range(40)]
    cloud_host("h-idle", idle, "30m@5%")
    cloud_host("h-theirs", theirs, "30m@5%")
    cloud_host("h-busy", busy, "30m@5%")
    cloud_host("h-young", young, "30m@5%+15m")
    cloud_host("h-norule", idle, None)

    code, out, err = gpudeck("cloud", "enforce", "--dry-run")
    assert code == 0, err
    assert (
        "h-idle" in out
        and "would stop (dry run)" in out
        and all(acc.status(i) == "Running" for i in (idle, theirs))
    )

    code, out, err = gpudeck("cloud", "enforce", "--json")
    assert code == 0, err
    by_host = {d["host"]: d for d in json.loads(out)}
    assert set(by_host) == {"h-idle", "h-theirs", "h-busy", "h-young"}
    assert by_host["h-idle"]["outcome"] == "stopped" and acc.status(idle) == "Stopped"
    assert by_host["h-theirs"]["action"] == "refuse" and "not opted in" in by_host["h-theirs"]["reason"]
    assert acc.status(theirs) == acc.status(busy) == acc.status(young) == "Running"
    assert by_host["h-busy"]["action"] == "keep" and "avg 88.0%" in by_host["h-busy"]["reason"]
    assert "within 15 min of its start" in by_host["h-young"]["reason"]

    records = read_journal()
    assert [r["outcome"] for r in records if r["host"] == "h-idle"] == ["would stop (dry run)", "stopped"]
    stopped = next(r for r in records if r["outcome"] == "stopped")
    inputs = stopped["inputs"]
    assert inputs["rule"] == {"minutes": 30.0, "below_pct": 5.0, "grace_minutes": 15.0}
    assert inputs["opted_in"] is True and inputs["gpu_util_window_avg"] == pytest.approx(1.0)
    assert inputs["price_per_hour"] == 10.8 and inputs["idle_since"] <= now - 29 * 60
    assert stat.S_IMODE(os.stat(journal_path()).st_mode) == 0o600


def test_a_bad_rule_is_refused_when_set(aliyun: AliyunServer) -> None:
    add_host(HostEntry(name="box", target="root@127.0.0.1:22"))
    code, _out, err = gpudeck("hosts", "set", "box", "instance_idle_stop=soon")
    assert code == 2 and "instance_idle_stop 'soon'" in err
    assert "instance_idle_stop" not in load_hosts()["box"].extra
