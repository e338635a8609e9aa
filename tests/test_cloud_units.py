"""The cloud layer's pure parts: the utilization judgement, retry schedule, console fingerprints,
metric readers, [cloud] settings."""

from __future__ import annotations

import base64
import hashlib
import subprocess
from pathlib import Path

import pytest

from tests.support.sshd import keygen
from tui.cloud.aliyun import _datapoints, split_endpoint
from tui.cloud.aws import busiest_per_minute
from tui.cloud.console import published_fingerprints
from tui.cloud.model import CloudError, RetryableError
from tui.cloud.retry import RetryPolicy, retrying
from tui.cloud.utilization import STALE, summarize
from tui.settings import SettingsError, load

NOW = 1_800_000_000.0


def series(values: list[float], end: float = NOW) -> list[tuple[float, float]]:
    """One point a minute, the last at `end`."""
    return [(end - 60 * (len(values) - 1 - k), v) for k, v in enumerate(values)]


def test_idle_needs_the_whole_window_under_the_threshold() -> None:
    assert summarize(series([1.0] * 31), NOW, 1800, 5).idle  # 30 minutes of points: the window is covered
    short = summarize(series([1.0] * 20), NOW, 1800, 5)
    assert not short.idle and short.idle_since == NOW - 19 * 60  # idle, but not for long enough
    spike = summarize(series([1.0] * 10 + [50.0] + [1.0] * 20), NOW, 1800, 5)
    assert not spike.idle and spike.idle_since == NOW - 19 * 60
    assert not summarize(series([1.0] * 40 + [5.0]), NOW, 1800, 5).idle  # "below" is strict


def test_a_point_exactly_at_the_threshold_mid_window_is_busy() -> None:
    # "under 5 %" is strict everywhere (as the agent's idle stop: u >= below_pct is busy): a point of
    # exactly 5 % in the middle of the window breaks the idle run there, not only at its ends.
    mid = summarize(series([1.0] * 15 + [5.0] + [1.0] * 15), NOW, 1800, 5)
    assert not mid.idle and mid.idle_since == NOW - 14 * 60
    first = summarize(
        series([1.0, 5.0] + [1.0] * 29), NOW, 1800, 5
    )  # the window's first point, (NOW - 30 min, NOW]
    assert not first.idle and first.idle_since == NOW - 28 * 60
    assert summarize(
        series([5.0] + [1.0] * 30), NOW, 1800, 5
    ).idle  # at NOW - 30 min: just outside the window
    assert summarize(series([1.0] * 15 + [4.999] + [1.0] * 15), NOW, 1800, 5).idle  # just under: still idle


def test_a_hole_in_the_data_ends_the_idle_run() -> None:
    before = series([1.0] * 30, end=NOW - STALE - 600)
    after = series([1.0] * 10)
    u = summarize(before + after, NOW, 1800, 5)
    assert not u.idle and u.idle_since == NOW - 9 * 60


def test_no_data_and_stale_data_are_not_zero() -> None:
    empty = summarize([], NOW, 1800, 5)
    assert (empty.now, empty.avg_1h, empty.window_avg, empty.idle) == (None, None, None, False)
    stale = summarize(series([0.0] * 60, end=NOW - STALE - 60), NOW, 1800, 5)
    assert stale.now is None and stale.avg_1h is None and not stale.idle


def test_averages() -> None:
    u = summarize(series([10.0] * 30 + [30.0] * 30), NOW, 1800, 5)
    assert u.now == 30.0 and u.window_avg == pytest.approx(30.0) and u.avg_1h == pytest.approx(20.0)


def test_each_minute_is_the_busiest_gpu() -> None:
    assert busiest_per_minute([[(NOW, 10.0), (NOW + 60, 20.0)], [(NOW + 5, 30.0)]]) == [
        (NOW, 30.0),
        (NOW + 60, 20.0),
    ]


def test_retry_schedule_and_the_lookup_before_each_retry() -> None:
    slept: list[float] = []
    calls = iter([RetryableError("throttled"), RetryableError("throttled"), "done"])

    def call() -> str:
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    assert retrying(call, RetryPolicy(attempts=5, first=0.5, cap=0.8), slept.append) == "done"
    assert slept == [0.5, 0.8]
    looked: list[int] = []

    def fails() -> str:
        raise RetryableError("lost answer")

    def lookup() -> str | None:
        looked.append(1)
        return "found-by-tag" if len(looked) == 2 else None

    assert retrying(fails, RetryPolicy(attempts=5, first=0, cap=0), slept.append, lookup) == "found-by-tag"
    with pytest.raises(CloudError, match="refused"):
        retrying(lambda: (_ for _ in ()).throw(CloudError("refused")), RetryPolicy(), slept.append)
    with pytest.raises(RetryableError):
        retrying(fails, RetryPolicy(attempts=2, first=0, cap=0), slept.append)


def test_console_fingerprints_only_from_cloud_init_blocks(tmp_path: Path) -> None:
    key = keygen(tmp_path / "hk")
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-f", f"{key}.pub"], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    kind, blob = (tmp_path / "hk.pub").read_text().split()[:2]
    console = (
        "SHA256:" + "B" * 43 + " printed by someone, outside the block\n"
        "ec2: -----BEGIN SSH HOST KEY FINGERPRINTS-----\n"
        "ec2: 256 SHA256:" + "A" * 43 + " root@ip-10-0-0-1 (ECDSA)\n"
        "ec2: -----END SSH HOST KEY FINGERPRINTS-----\n"
        "-----BEGIN SSH HOST KEY KEYS-----\n"
        f"{kind} {blob} root@ip-10-0-0-1\n"
        "-----END SSH HOST KEY KEYS-----\n"
    )
    found = published_fingerprints(console)
    assert found == {"SHA256:" + "A" * 43, listed}
    digest = "SHA256:" + base64.b64encode(hashlib.sha256(base64.b64decode(blob)).digest()).decode().rstrip(
        "="
    )
    assert digest == listed
    assert published_fingerprints("no cloud-init here") == set()


def test_cms_datapoints_reader_is_total() -> None:
    good = '[{"timestamp": 1800000000000, "Average": 4.5}, {"timestamp": "x"}, {"Average": 1}, 7]'
    assert _datapoints(good) == [(1_800_000_000.0, 4.5)]
    assert _datapoints("not json") == [] and _datapoints(None) == [] and _datapoints('{"a": 1}') == []


def test_endpoints_are_urls() -> None:
    assert split_endpoint("http://127.0.0.1:8080") == ("127.0.0.1:8080", "http")
    assert split_endpoint("ecs-vpc.cn-hangzhou.aliyuncs.com") == ("ecs-vpc.cn-hangzhou.aliyuncs.com", "https")
    with pytest.raises(CloudError, match="expected a URL"):
        split_endpoint("ftp://x")


def test_cloud_settings(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[cloud]\naws_regions = ["us-east-1", "us-west-2"]\naliyun_regions = "cn-hangzhou"\n'
        'aliyun_ecs_endpoint = "http://127.0.0.1:8080"\n'
    )
    cloud = load(path).cloud
    assert cloud.aws_regions == ("us-east-1", "us-west-2") and cloud.aliyun_regions == ("cn-hangzhou",)
    assert cloud.aliyun_ecs_endpoint == "http://127.0.0.1:8080" and cloud.aws_endpoint_url is None
    path.write_text('[cloud]\n\naliyun_cms_endpoint = "metrics.aliyuncs.com/x"\n')
    with pytest.raises(SettingsError, match=r"config.toml:3: \[cloud\] aliyun_cms_endpoint: expected a URL"):
        load(path)
    path.write_text("[cloud]\naws_regions = [1]\n")
    with pytest.raises(SettingsError, match=r":2: \[cloud\] aws_regions: expected a list of names"):
        load(path)
    path.write_text('[cloud]\naws_secret = "no"\n')
    with pytest.raises(SettingsError, match="unknown setting"):
        load(path)
