"""Aliyun ECS price calls through the real core SDK against a local HTTP endpoint on 127.0.0.1
that answers in the API's JSON shape (DescribeSpotPriceHistory, DescribePrice, an error)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.aliyun import JsonHandler
from tui.cloud.aliyun import AliyunProvider
from tui.cloud.model import CloudError
from tui.cloud.retry import RetryPolicy
from tui.cost.billing import accrue
from tui.cost.quotes import spot_for_host
from tui.cost.spot import PriceLookupError, aliyun_price, aliyun_spot_history, periods
from tui.settings import CloudSettings

T0 = 1_800_000_000  # 2027-01-15T08:00:00Z


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


SPOT_PAGES = [
    {
        "RequestId": "r1",
        "Currency": "CNY",
        "NextOffset": 2,
        "SpotPrices": {
            "SpotPriceType": [
                {
                    "ZoneId": "cn-hangzhou-h",
                    "InstanceType": "ecs.gn7i-c8g1.2xlarge",
                    "IoOptimized": "optimized",
                    "NetworkType": "vpc",
                    "Timestamp": iso(T0),
                    "SpotPrice": 3.6,
                    "OriginPrice": 12.0,
                },
                {
                    "ZoneId": "cn-hangzhou-i",
                    "InstanceType": "ecs.gn7i-c8g1.2xlarge",
                    "IoOptimized": "optimized",
                    "NetworkType": "vpc",
                    "Timestamp": iso(T0 + 100),
                    "SpotPrice": 9.9,
                    "OriginPrice": 12.0,
                },
            ]
        },
    },
    {
        "RequestId": "r2",
        "Currency": "CNY",
        "NextOffset": 0,
        "SpotPrices": {
            "SpotPriceType": [
                {
                    "ZoneId": "cn-hangzhou-h",
                    "InstanceType": "ecs.gn7i-c8g1.2xlarge",
                    "IoOptimized": "optimized",
                    "NetworkType": "vpc",
                    "Timestamp": iso(T0 + 1000),
                    "SpotPrice": 7.2,
                    "OriginPrice": 12.0,
                }
            ]
        },
    },
]


class Endpoint(JsonHandler):
    calls: list[dict[str, str]] = []

    def _params(self) -> dict[str, str]:
        query = parse_qs(urlsplit(self.path).query)
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            query.update(parse_qs(self.rfile.read(length).decode()))
        return {k: v[0] for k, v in query.items()}

    def _answer(self) -> None:
        params = self._params()
        self.calls.append(params)
        action = params.get("Action")
        if action == "DescribeSpotPriceHistory":
            status, body = 200, SPOT_PAGES[1 if params.get("Offset") == "2" else 0]
        elif action == "DescribePrice" and params.get("InstanceType") == "ecs.gn7i-c8g1.2xlarge":
            status, body = (
                200,
                {
                    "RequestId": "r3",
                    "PriceInfo": {
                        "Price": {
                            "Currency": "CNY",
                            "OriginalPrice": 12.0,
                            "DiscountPrice": 1.2,
                            "TradePrice": 10.8,
                        },
                        "Rules": {"Rule": []},
                    },
                },
            )
        else:
            status, body = (
                404,
                {
                    "RequestId": "r4",
                    "Code": "InvalidInstanceType.ValueNotSupported",
                    "Message": "The specified InstanceType does not exist.",
                },
            )
        self._send(status, body)

    do_GET = do_POST = _answer


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> Any:
    """The one Aliyun request path (`gpudeck cloud`'s provider), pointed at the local endpoint."""
    monkeypatch.setenv("ALIYUN_ACCESS_KEY_ID", "test-id")
    monkeypatch.setenv("ALIYUN_ACCESS_KEY_SECRET", "test-secret")
    monkeypatch.delenv("GPUDECK_ALIYUN_ECS_ENDPOINT", raising=False)
    Endpoint.calls.clear()
    return AliyunProvider("cn-hangzhou", f"http://{endpoint}", retry=RetryPolicy(attempts=1)).price_call


def test_spot_history_pages_and_zone(endpoint: str, client: Any) -> None:
    points = aliyun_spot_history(
        client, "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", T0 - 60, T0 + 2000, zone="cn-hangzhou-h"
    )
    assert [(p.t, p.per_hour, p.currency, p.zone) for p in points] == [
        (T0, 3.6, "CNY", "cn-hangzhou-h"),
        (T0 + 1000, 7.2, "CNY", "cn-hangzhou-h"),
    ]
    first = Endpoint.calls[0]
    assert first["Action"] == "DescribeSpotPriceHistory" and first["Version"] == "2014-05-26"
    assert first["RegionId"] == "cn-hangzhou" and first["InstanceType"] == "ecs.gn7i-c8g1.2xlarge"
    assert first["NetworkType"] == "vpc" and first["OSType"] == "linux" and first["ZoneId"] == "cn-hangzhou-h"
    assert first["StartTime"] == iso(T0 - 60) and Endpoint.calls[1]["Offset"] == "2"
    # ¥3.60/h for 1000 s then ¥7.20/h for 500 s: 1.00 + 1.00 = ¥2.00
    assert accrue(periods(points), T0, T0 + 1500).rounded() == {"CNY": 2.0}


def test_spot_without_zone_takes_the_newest_records_zone(endpoint: str, client: Any) -> None:
    points = aliyun_spot_history(client, "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", T0)
    assert {p.zone for p in points} == {"cn-hangzhou-h"}  # newest record (T0+1000) is in zone h


def test_describe_price(endpoint: str, client: Any) -> None:
    price = aliyun_price(client, "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge")
    assert price == (10.8, "CNY", "aliyun DescribePrice cn-hangzhou pay-as-you-go")
    call = Endpoint.calls[-1]
    assert (
        call["Action"] == "DescribePrice"
        and call["ResourceType"] == "instance"
        and call["PriceUnit"] == "Hour"
    )
    with pytest.raises(PriceLookupError, match="InvalidInstanceType.ValueNotSupported"):
        aliyun_price(client, "cn-hangzhou", "ecs.nope")


def test_spot_host_settings_through_config(endpoint: str, client: Any) -> None:
    settings = {
        "market": "spot",
        "provider": "aliyun",
        "instance_type": "ecs.gn7i-c8g1.2xlarge",
        "region": "cn-hangzhou-h",
    }
    result = spot_for_host(settings, T0, T0 + 2000, CloudSettings(aliyun_ecs_endpoint=f"http://{endpoint}"))
    assert result is not None and result.quote == (
        7.2,
        "CNY",
        "aliyun DescribeSpotPriceHistory cn-hangzhou-h",
    )
    assert Endpoint.calls[0]["RegionId"] == "cn-hangzhou" and Endpoint.calls[0]["ZoneId"] == "cn-hangzhou-h"


def test_no_credentials_no_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for prefix in ("ALIYUN", "ALIBABA_CLOUD"):
        monkeypatch.delenv(f"{prefix}_ACCESS_KEY_ID", raising=False)
        monkeypatch.delenv(f"{prefix}_ACCESS_KEY_SECRET", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aliyun/config.json either
    settings = {
        "market": "spot",
        "provider": "aliyun",
        "instance_type": "ecs.gn7i-c8g1.2xlarge",
        "region": "cn-hangzhou",
    }
    assert spot_for_host(settings, T0, T0 + 10, CloudSettings()) is None
    with pytest.raises(CloudError, match="credentials"):
        AliyunProvider("cn-hangzhou", "http://127.0.0.1:9")


def test_spot_pricing_uses_the_cloud_credential_chain_and_endpoint(
    monkeypatch: pytest.MonkeyPatch, gpudeck_home: Path
) -> None:
    """What `gpudeck cloud` reads is what spot pricing reads: ALIBABA_CLOUD_* keys (no ALIYUN_*) and
    GPUDECK_ALIYUN_ECS_ENDPOINT as a URL, with nothing in config.toml."""
    from tests.support.aliyun import serving

    with serving(monkeypatch) as server:  # sets ALIBABA_CLOUD_ACCESS_KEY_ID/SECRET and the endpoint URLs only
        settings = {
            "market": "spot",
            "provider": "aliyun",
            "instance_type": "ecs.gn7i-c8g1.2xlarge",
            "region": "cn-hangzhou-h",
        }
        result = spot_for_host(settings, time.time() - 7200, time.time(), CloudSettings())
        assert result is not None and result.error is None
        assert result.quote == (3.2, "CNY", "aliyun DescribeSpotPriceHistory cn-hangzhou-h")
        assert [c["Action"] for c in server.account.calls] == ["DescribeSpotPriceHistory"]
        assert server.account.calls[0]["AccessKeyId"] == "test-id"
