"""AWS spot price plumbing against a moto server on 127.0.0.1 (its prices are placeholders:
the test checks the plumbing — request, paging, zone choice, periods — not the numbers)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from moto.server import ThreadedMotoServer

from tui.cloud.aws import AwsProvider
from tui.cost.billing import accrue
from tui.cost.quotes import spot_for_host
from tui.cost.spot import PriceLookupError, aws_credentials_available, aws_spot_history, periods, split_zone
from tui.settings import CloudSettings


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Fake keys so nothing real is ever signed; no profile or metadata lookups.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def test_split_zone() -> None:
    assert split_zone("us-east-1a") == ("us-east-1", "us-east-1a")
    assert split_zone("us-east-1") == ("us-east-1", None)


@pytest.mark.slow
def test_spot_history_for_one_zone(moto_url: str, aws_env: None) -> None:
    assert aws_credentials_available()
    now = time.time()
    points = aws_spot_history(
        AwsProvider("us-east-1", moto_url, timeout=60).ec2, "g5.xlarge", "us-east-1a", now - 86400, now
    )
    assert points, "moto answers describe_spot_price_history"
    assert all(p.zone == "us-east-1a" and p.currency == "USD" and p.per_hour > 0 for p in points)
    assert [p.t for p in points] == sorted(p.t for p in points)
    assert points[0].source == "aws describe_spot_price_history us-east-1a Linux/UNIX"
    # The points become back-to-back price periods that bill a run.
    spans = periods(points)
    assert spans[-1].end is None and accrue(spans, now - 3600, now).get() > 0


@pytest.mark.slow
def test_region_only_picks_one_zone(moto_url: str, aws_env: None) -> None:
    now = time.time()
    points = aws_spot_history(
        AwsProvider("us-east-1", moto_url).ec2, "g5.xlarge", "us-east-1", now - 86400, now
    )
    assert points and len({p.zone for p in points}) == 1 and points[0].zone.startswith("us-east-1")


@pytest.mark.slow
def test_spot_host_settings_to_a_quote(moto_url: str, aws_env: None) -> None:
    now = time.time()
    settings = {"market": "spot", "provider": "aws", "instance_type": "g5.xlarge", "region": "us-east-1a"}
    result = spot_for_host(settings, now - 3600, now, CloudSettings(aws_endpoint_url=moto_url))
    assert result is not None and result.error is None and result.periods
    per_hour, currency, source = result.quote
    assert per_hour > 0 and currency == "USD" and "us-east-1a" in source
    # On-demand hosts and hosts without an instance type are not asked.
    assert spot_for_host(dict(settings, market="on-demand"), now - 3600, now, CloudSettings()) is None
    assert spot_for_host({"market": "spot", "provider": "aws"}, now - 3600, now, CloudSettings()) is None


def test_unreachable_endpoint_is_one_line(aws_env: None) -> None:
    with pytest.raises(PriceLookupError, match="describe_spot_price_history g5.xlarge"):
        aws_spot_history(
            AwsProvider("us-east-1", "http://127.0.0.1:9").ec2, "g5.xlarge", "us-east-1a", time.time() - 60
        )
