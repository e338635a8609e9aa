"""Aliyun through the real SDK against the local endpoint (tests/support/aliyun.py, which cites the
documented response shapes): listing, CloudMonitor's JSON-in-JSON metric, the idle finder,
throttling/5xx retries, stop with confirmation, credentials from ~/.aliyun/config.json."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.aliyun import AliyunServer, serving
from tui import cli
from tui.cloud.aliyun import AliyunProvider
from tui.cloud.aliyun_auth import credentials
from tui.cloud.fleet import NO_METRIC, snapshot
from tui.cloud.model import CloudError, RetryableError
from tui.cloud.retry import RetryPolicy
from tui.settings import Settings

FAST = RetryPolicy(attempts=4, first=0.01, cap=0.02)


@pytest.fixture
def aliyun(monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:
        yield server


@dataclass
class Said:
    returncode: int
    stdout: str
    stderr: str


def answering(answers: str, *args: str) -> Said:
    """The CLI's own entry point in this process, the user's answers on stdin (a fresh interpreter
    per call costs ~2 s of imports here; test_cloud_idle_json_has_the_issue_fields runs one)."""
    stdin, out, err = sys.stdin, io.StringIO(), io.StringIO()
    sys.stdin = io.StringIO(answers)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.run(list(args))
    finally:
        sys.stdin = stdin
    return Said(code, out.getvalue(), err.getvalue())


def minutes(now: float, count: int, value: float, until: float = 0.0) -> list[tuple[float, float]]:
    """One point a minute for `count` minutes, ending `until` seconds before now."""
    return [(now - until - 60 * k, value) for k in range(count)]


def test_lists_gpu_instances_with_addresses_tags_and_market(aliyun: AliyunServer) -> None:
    acc = aliyun.account
    gpu = acc.add(name="trainer", spot=True, tags={"gpudeck-managed": "true"})
    acc.add("ecs.g7.large", gpus=0)  # no GPU: not shown
    found = AliyunProvider("cn-hangzhou", retry=FAST).list()
    assert [i.id for i in found] == [gpu]
    i = found[0]
    assert (i.name, i.type, i.state, i.lifecycle, i.zone, i.gpus, i.gpu_model) == (
        "trainer",
        "ecs.gn7i-c8g1.2xlarge",
        "running",
        "spot",
        "cn-hangzhou-h",
        1,
        "NVIDIA A10",
    )
    assert (i.public_address, i.private_address, i.opted_in) == ("127.0.0.1", "172.17.0.9", True)
    call = acc.calls[0]
    assert (
        call["Action"] == "DescribeInstances"
        and call["Version"] == "2014-05-26"
        and call["RegionId"] == "cn-hangzhou"
    )


def test_metric_json_inside_json_is_read(aliyun: AliyunServer) -> None:
    now = time.time()
    iid = aliyun.account.add()
    aliyun.account.metrics[iid] = minutes(now, 10, 42.0)
    p = AliyunProvider("cn-hangzhou", retry=FAST)
    points = p.gpu_util(p.get(iid), now - 3600, now)  # type: ignore[arg-type]
    assert len(points) == 10 and {v for _t, v in points} == {42.0}
    call = next(c for c in aliyun.account.calls if c["Action"] == "DescribeMetricList")
    assert (
        call["Namespace"] == "acs_ecs_dashboard" and call["MetricName"] == "instance_gpu_gpu_usedutilization"
    )
    assert json.loads(call["Dimensions"]) == [{"instanceId": iid}] and call["Version"] == "2019-01-01"


def test_idle_finder_is_exact(aliyun: AliyunServer) -> None:
    """Idle (under 5 % for 40 min), busy, idle only lately, no data, stopped: only the first is offered."""
    now = time.time()
    acc = aliyun.account
    idle = acc.add(name="idle")
    busy = acc.add(name="busy")
    lately = acc.add(name="lately")  # idle 10 minutes only
    nodata = acc.add(name="nodata")
    stale = acc.add(name="stale")  # idle points, but the agent stopped reporting an hour ago
    stopped = acc.add(name="stopped", status="Stopped")
    acc.metrics[idle] = minutes(now, 40, 2.0)
    acc.metrics[busy] = minutes(now, 40, 80.0)
    acc.metrics[lately] = minutes(now, 10, 1.0) + minutes(now, 30, 90.0, until=600)
    acc.metrics[stale] = minutes(now, 40, 1.0, until=3600)
    acc.metrics[stopped] = minutes(now, 40, 0.0)
    snap = snapshot(Settings(), "aliyun", window=1800, below=5.0, now=now)
    assert snap.errors == []
    assert [v.instance.id for v in snap.idle()] == [idle]
    views = {v.instance.id: v for v in snap.views}
    v = views[idle]
    assert v.price.per_hour == 10.8 and v.price.currency == "CNY" and "DescribePrice" in v.price.source
    assert v.waste_per_hour == 10.8 and v.util.window_avg == pytest.approx(2.0)
    assert v.util.idle_since == pytest.approx(now - 39 * 60)
    assert v.waste_since_idle == pytest.approx(10.8 * 39 / 60)
    assert views[nodata].util_source == NO_METRIC and views[nodata].util.now is None
    assert views[stale].util.now is None and not views[stale].util.idle
    assert views[lately].util.idle_since == pytest.approx(now - 9 * 60) and not views[lately].util.idle


@pytest.mark.slow
def test_cloud_idle_json_has_the_issue_fields(aliyun: AliyunServer, gpudeck_home: Path) -> None:
    now = time.time()
    acc = aliyun.account
    idle = acc.add(name="idle")
    acc.add(name="nodata")
    acc.metrics[idle] = minutes(now, 40, 3.0)
    out = gpudeck("cloud", "idle", "--below", "5%", "--for", "30m", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["id"] for r in rows] == [idle]
    r = rows[0]
    assert {
        "id",
        "provider",
        "region",
        "type",
        "state",
        "price_per_hour",
        "gpu_util",
        "idle_since",
        "waste_usd_per_hour",
    } <= set(r)
    assert (r["provider"], r["region"], r["state"], r["price_per_hour"]) == (
        "aliyun",
        "cn-hangzhou",
        "running",
        10.8,
    )
    assert r["gpu_util"] == pytest.approx(3.0) and r["waste_usd_per_hour"] is None  # CNY: not called dollars
    text = gpudeck("cloud", "idle")
    assert idle in text.stdout and "nodata" not in text.stdout
    assert f"{NO_METRIC}" in text.stderr  # the unjudged one is named, not offered
    ls = gpudeck("cloud", "ls", "--json")
    by_name = {r["name"]: r for r in json.loads(ls.stdout)}
    assert by_name["nodata"]["gpu_util_now"] is None and by_name["nodata"]["gpu_util_source"] == NO_METRIC


@pytest.mark.parametrize("fault", ["throttle", "503"])
def test_throttling_and_5xx_are_retried(aliyun: AliyunServer, fault: str) -> None:
    acc = aliyun.account
    iid = acc.add()
    acc.faults += [("DescribeInstances", fault), ("DescribeInstances", fault)]
    assert [i.id for i in AliyunProvider("cn-hangzhou", retry=FAST).list()] == [iid]
    assert [c["Action"] for c in acc.calls] == ["DescribeInstances"] * 3
    acc.faults += [("DescribeInstances", fault)] * 4
    with pytest.raises(RetryableError, match="Throttling.User|ServiceUnavailable"):
        AliyunProvider("cn-hangzhou", retry=FAST).list()


def test_a_refusal_is_not_retried(aliyun: AliyunServer) -> None:
    p = AliyunProvider("cn-hangzhou", retry=FAST)
    from tui.cloud.model import Instance

    with pytest.raises(CloudError, match="InvalidInstanceId.NotFound"):
        p.stop(Instance("i-nope", "aliyun", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", "running"))
    assert len(aliyun.account.calls) == 1


def test_stop_asks_naming_the_instance_and_price(aliyun: AliyunServer, gpudeck_home: Path) -> None:
    iid = aliyun.account.add(name="trainer")
    no = answering("n\n", "cloud", "stop", iid)
    assert no.returncode == 1 and aliyun.account.status(iid) == "Running"
    assert iid in no.stderr and "trainer" in no.stderr and "CNY 10.80/h" in no.stderr
    closed = answering("", "cloud", "stop", iid)  # no answer at all is a no
    assert closed.returncode == 1 and aliyun.account.status(iid) == "Running"
    yes = answering("y\n", "cloud", "stop", iid)
    assert yes.returncode == 0, yes.stderr
    assert aliyun.account.status(iid) == "Stopped" and f"{iid}: stopping" in yes.stdout
    # issue 32, item 6: stopping it again is done already, not a failure (it exited 1); no question asked
    twice = answering("", "cloud", "stop", iid)
    assert (twice.returncode, twice.stdout) == (0, f"{iid}: already stopped\n"), twice.stderr
    again = gpudeck("cloud", "start", iid, "--yes")
    assert again.returncode == 0 and aliyun.account.status(iid) in ("Starting", "Running")


def test_terminate_asks_twice(aliyun: AliyunServer, gpudeck_home: Path) -> None:
    iid = aliyun.account.add()
    once = answering("y\nn\n", "cloud", "terminate", iid)
    assert once.returncode == 1 and iid in aliyun.account.instances
    assert once.stderr.count("[y/N]") == 2
    twice = answering("y\ny\n", "cloud", "terminate", iid)
    assert twice.returncode == 0 and iid not in aliyun.account.instances


def test_read_only_refuses_cloud_actions(aliyun: AliyunServer, gpudeck_home: Path) -> None:
    iid = aliyun.account.add()
    out = answering("", "--read-only", "cloud", "stop", iid, "--yes")
    assert out.returncode == 2 and "read-only" in out.stderr and aliyun.account.status(iid) == "Running"


def test_unknown_id_is_one_line(aliyun: AliyunServer, gpudeck_home: Path) -> None:
    out = answering("", "cloud", "stop", "i-missing", "--yes")
    assert (
        out.returncode == 2 and out.stderr.strip() == "gpudeck: no instance i-missing in aliyun cn-hangzhou"
    )


def test_credentials_from_the_aliyun_cli_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in (
        "ALIBABA_CLOUD_ACCESS_KEY_ID",
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
        "ALIYUN_ACCESS_KEY_ID",
        "ALIYUN_ACCESS_KEY_SECRET",
        "ALIBABA_CLOUD_PROFILE",
        "ALIYUN_PROFILE",
    ):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(CloudError, match="no credentials"):
        credentials()
    (tmp_path / ".aliyun").mkdir()
    (tmp_path / ".aliyun" / "config.json").write_text(
        json.dumps(
            {
                "current": "work",
                "profiles": [
                    {
                        "name": "default",
                        "mode": "AK",
                        "access_key_id": "d-id",
                        "access_key_secret": "d-secret",
                        "region_id": "cn-beijing",
                    },
                    {
                        "name": "work",
                        "mode": "StsToken",
                        "access_key_id": "w-id",
                        "access_key_secret": "w-secret",
                        "sts_token": "tok",
                        "region_id": "cn-shanghai",
                    },
                    {"name": "sso", "mode": "CloudSSO"},
                ],
            }
        )
    )
    got = credentials()
    assert (got.key_id, got.secret, got.token) == ("w-id", "w-secret", "tok") and "w-secret" not in repr(got)
    assert credentials("default").key_id == "d-id"
    with pytest.raises(CloudError, match="mode CloudSSO is not supported"):
        credentials("sso")
    monkeypatch.setenv("ALIYUN_ACCESS_KEY_ID", "env-id")
    monkeypatch.setenv("ALIYUN_ACCESS_KEY_SECRET", "env-secret")
    assert credentials().key_id == "env-id"  # the environment comes first


def test_launch_refuses_a_taken_host_name_before_launching(aliyun: AliyunServer, gpudeck_home: Path) -> None:
    from tui.hosts_file import HostEntry, add_host

    add_host(HostEntry(name="gpu1", target="root@10.0.0.1"))
    out = answering(
        "",
        "cloud",
        "launch",
        "--provider",
        "aliyun",
        "--type",
        "ecs.gn7i-c8g1.2xlarge",
        "--image",
        "img",
        "--name",
        "gpu1",
        "--yes",
    )
    assert out.returncode == 2 and "host gpu1 already exists" in out.stderr
    assert not aliyun.account.instances and not aliyun.account.calls  # nothing launched, nothing asked


@pytest.mark.slow
def test_launch_whose_ssh_never_answers_leaves_the_host_and_says_what_next(
    aliyun: AliyunServer, gpudeck_home: Path
) -> None:
    from tests.support.sshd import free_port
    from tui.hosts_file import load_hosts

    port = free_port()  # nobody listens there
    out = answering(
        "",
        "cloud",
        "launch",
        "--provider",
        "aliyun",
        "--type",
        "ecs.gn7i-c8g1.2xlarge",
        "--image",
        "img",
        "--name",
        "gpu2",
        "--ssh-port",
        str(port),
        "--timeout",
        "0.3",
        "--yes",
    )
    [iid] = aliyun.account.instances
    assert out.returncode == 1 and f"SSH on 127.0.0.1:{port} did not answer" in out.stderr
    assert "gpudeck hosts trust gpu2" in out.stderr and f"gpudeck cloud stop {iid}" in out.stderr
    assert load_hosts()["gpu2"].extra["instance_id"] == iid
