"""A local Aliyun endpoint on 127.0.0.1: ECS (2014-05-26) and CloudMonitor answers in the documented
JSON shapes, over real HTTP, to the real SDK (aliyun-python-sdk-core / -cms). It keeps instances,
so RunInstances → DescribeInstances → StopInstance … behave like one small account.

Shapes follow the API reference's response examples:
- DescribeInstances: https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeinstances
  (Instances.Instance[], PublicIpAddress.IpAddress[], EipAddress.IpAddress as a string,
  VpcAttributes.PrivateIpAddress.IpAddress[], Tags.Tag[{TagKey,TagValue}], GPUAmount, GPUSpec,
  SpotStrategy, StartTime "2017-12-10T04:04Z")
- RunInstances: https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-runinstances
  (InstanceIdSets.InstanceIdSet[], TradePrice)
- GetInstanceConsoleOutput: https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-getinstanceconsoleoutput
  (ConsoleOutput, base64)
- DescribeMetricList: https://help.aliyun.com/document_detail/155561.html (Code "200", Success,
  Period, NextToken, and `Datapoints` a JSON *string*: [{"timestamp": ms, "instanceId", "Average",
  "Maximum", "Minimum", "userId"}])
- errors: {"RequestId", "HostId", "Code", "Message"} with the HTTP status (Throttling.User 400,
  ServiceUnavailable 503, InvalidInstanceId.NotFound 404).
"""

from __future__ import annotations

import base64
import calendar
import contextlib
import itertools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest


def stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(t))


@dataclass
class Account:
    """What the fake account holds; tests set it up and read it back."""

    address: str = "127.0.0.1"  # what new instances get as their public address
    instances: dict[str, dict[str, Any]] = field(default_factory=dict)
    metrics: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # id → (t, %)
    console: dict[str, str] = field(default_factory=dict)  # id → console text
    new_console: str = ""  # console text of instances RunInstances makes
    prices: dict[str, float] = field(
        default_factory=lambda: {"ecs.gn7i-c8g1.2xlarge": 10.8, "ecs.gn7-c12g1.3xlarge": 30.0}
    )
    faults: list[tuple[str, str]] = field(
        default_factory=list
    )  # (action, "throttle"|"503"|"lost"|"stall"|"nostock")
    stall_s: float = 2.0
    latency_s: float = (
        0.0  # every answer waits this long first (bench/bench_cloud.py: a provider's round trip)
    )
    calls: list[dict[str, str]] = field(default_factory=list)
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(
        self,
        instance_type: str = "ecs.gn7i-c8g1.2xlarge",
        status: str = "Running",
        name: str | None = None,
        spot: bool = False,
        tags: dict[str, str] | None = None,
        started: float | None = None,
        gpus: int = 1,
    ) -> str:
        iid = f"i-bp{next(self.ids):018d}"
        self.instances[iid] = {
            "InstanceId": iid,
            "InstanceName": name or iid,
            "RegionId": "cn-hangzhou",
            "ZoneId": "cn-hangzhou-h",
            "InstanceType": instance_type,
            "Status": status,
            "InstanceChargeType": "PostPaid",
            "SpotStrategy": "SpotAsPriceGo" if spot else "NoSpot",
            "CreationTime": stamp(started or time.time() - 7200),
            "StartTime": stamp(started or time.time() - 7200),
            "GPUAmount": gpus,
            "GPUSpec": "NVIDIA A10" if gpus else "",
            "PublicIpAddress": {"IpAddress": [self.address]},
            "EipAddress": {"IpAddress": "", "AllocationId": ""},
            "InnerIpAddress": {"IpAddress": []},
            "VpcAttributes": {
                "PrivateIpAddress": {"IpAddress": ["172.17.0.9"]},
                "VpcId": "vpc-1",
                "VSwitchId": "vsw-1",
            },
            "Tags": {"Tag": [{"TagKey": k, "TagValue": v} for k, v in (tags or {}).items()]},
        }
        return iid

    def status(self, iid: str) -> str:
        return str(self.instances[iid]["Status"])


def _error(code: str, message: str, status: int) -> tuple[int, dict[str, Any]]:
    return status, {"RequestId": "E1", "HostId": "ecs.aliyuncs.com", "Code": code, "Message": message}


class JsonHandler(BaseHTTPRequestHandler):
    """Answers with a JSON body, as Aliyun's endpoints do; quiet (no request log on stderr)."""

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


class _Handler(JsonHandler):
    account: Account  # set per server

    def _params(self) -> dict[str, str]:
        query = parse_qs(urlsplit(self.path).query)
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            query.update(parse_qs(self.rfile.read(length).decode()))
        return {k: v[0] for k, v in query.items()}

    def _answer(self) -> None:
        params = self._params()
        action = params.get("Action", "")
        acc = self.account
        if acc.latency_s:
            time.sleep(acc.latency_s)
        with acc.lock:
            acc.calls.append(params)
            fault = next((f for f in acc.faults if f[0] == action), None)
            if fault:
                acc.faults.remove(fault)
        if fault and fault[1] == "throttle":
            return self._send(*_error("Throttling.User", "Request was denied due to user flow control.", 400))
        if fault and fault[1] == "nostock":  # a zone sold out of the type: nothing is made
            return self._send(
                *_error("OperationDenied.NoStock", "The resource is out of stock in the specified zone.", 403)
            )
        if fault and fault[1] == "503":
            return self._send(
                *_error(
                    "ServiceUnavailable",
                    "The request has failed due to a temporary failure of the server.",
                    503,
                )
            )
        with acc.lock:
            status, body = self._act(action, params)
        if fault and fault[1] == "lost":  # done, but the answer never arrives: the connection drops
            self.close_connection = True
            return
        if fault and fault[1] == "stall":  # done, answered too late for the client's timeout
            time.sleep(acc.stall_s)
        self._send(status, body)

    def _act(self, action: str, p: dict[str, str]) -> tuple[int, dict[str, Any]]:
        acc = self.account
        if action == "DescribeInstances":
            rows = list(acc.instances.values())
            if p.get("InstanceIds"):
                wanted = set(json.loads(p["InstanceIds"]))
                rows = [r for r in rows if r["InstanceId"] in wanted]
            if p.get("Tag.1.Key"):
                rows = [
                    r
                    for r in rows
                    if {"TagKey": p["Tag.1.Key"], "TagValue": p.get("Tag.1.Value", "")} in r["Tags"]["Tag"]
                ]
            size, page = int(p.get("PageSize") or 10), int(p.get("PageNumber") or 1)
            shown = [dict(r) for r in rows[(page - 1) * size : page * size]]
            for r in rows:  # booting instances run by the next look
                if r["Status"] in ("Pending", "Starting"):
                    r["Status"] = "Running"
            return 200, {
                "RequestId": "R1",
                "TotalCount": len(rows),
                "PageNumber": page,
                "PageSize": size,
                "NextToken": "",
                "Instances": {"Instance": shown},
            }
        if action == "RunInstances":
            tags = {
                p[f"Tag.{n}.Key"]: p.get(f"Tag.{n}.Value", "") for n in range(1, 21) if f"Tag.{n}.Key" in p
            }
            iid = acc.add(
                p.get("InstanceType", "?"),
                "Pending",
                p.get("InstanceName"),
                p.get("SpotStrategy", "NoSpot") != "NoSpot",
                tags,
                time.time(),
            )
            acc.console[iid] = acc.new_console
            return 200, {"RequestId": "R2", "InstanceIdSets": {"InstanceIdSet": [iid]}, "TradePrice": 10.8}
        iid = p.get("InstanceId", "")
        if (
            action in ("StopInstance", "StartInstance", "DeleteInstance", "GetInstanceConsoleOutput")
            and iid not in acc.instances
        ):
            return _error("InvalidInstanceId.NotFound", "The specified InstanceId does not exist.", 404)
        if action == "StopInstance":
            acc.instances[iid]["Status"] = "Stopped"
            return 200, {"RequestId": "R3"}
        if action == "StartInstance":
            acc.instances[iid]["Status"] = "Starting"
            return 200, {"RequestId": "R4"}
        if action == "DeleteInstance":
            if acc.instances[iid]["Status"] != "Stopped" and p.get("Force") != "true":
                return _error(
                    "IncorrectInstanceStatus",
                    "The current status of the resource does not support this operation.",
                    403,
                )
            del acc.instances[iid]
            return 200, {"RequestId": "R5"}
        if action == "GetInstanceConsoleOutput":
            text = base64.b64encode(acc.console.get(iid, "").encode()).decode()
            return 200, {
                "RequestId": "R6",
                "InstanceId": iid,
                "ConsoleOutput": text,
                "LastUpdateTime": stamp(time.time()),
            }
        if action == "DescribePrice":
            price = acc.prices.get(p.get("InstanceType", ""))
            if price is None:
                return _error(
                    "InvalidInstanceType.ValueNotSupported", "The specified InstanceType does not exist.", 404
                )
            return 200, {
                "RequestId": "R7",
                "PriceInfo": {
                    "Price": {
                        "Currency": "CNY",
                        "OriginalPrice": price,
                        "DiscountPrice": 0,
                        "TradePrice": price,
                    }
                },
            }
        if action == "DescribeSpotPriceHistory":
            return 200, {
                "RequestId": "R8",
                "Currency": "CNY",
                "NextOffset": 0,
                "SpotPrices": {
                    "SpotPriceType": [
                        {
                            "ZoneId": "cn-hangzhou-h",
                            "InstanceType": p.get("InstanceType"),
                            "NetworkType": "vpc",
                            "Timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600)),
                            "SpotPrice": 3.2,
                            "OriginPrice": 10.8,
                        }
                    ]
                },
            }
        if action == "DescribeMetricList":
            dims = json.loads(p.get("Dimensions") or "[]")
            iid = (dims[0] if dims else {}).get("instanceId", "")
            start, end = _epoch(p.get("StartTime")), _epoch(p.get("EndTime"))
            points = [
                {
                    "timestamp": int(t * 1000),
                    "userId": "1234",
                    "instanceId": iid,
                    "Minimum": v,
                    "Average": v,
                    "Maximum": v,
                }
                for t, v in acc.metrics.get(iid, [])
                if start < t <= end
            ]
            return 200, {
                "RequestId": "R9",
                "Code": "200",
                "Success": True,
                "Period": p.get("Period", "60"),
                "Datapoints": json.dumps(points),
            }
        return _error("InvalidAction.NotFound", f"Specified api {action} is not found.", 404)

    do_GET = do_POST = _answer


def _epoch(text: str | None) -> float:
    if not text:
        return 0.0
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))


@dataclass
class AliyunServer:
    url: str
    account: Account


@contextlib.contextmanager
def serving(monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    """A fresh account on a fresh port, the env pointing gpudeck at it with fake keys
    (a test module makes it a fixture: `with serving(monkeypatch) as server: yield server`)."""
    account = Account()
    handler = type("Handler", (_Handler,), {"account": account})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    for key in (
        "ALIYUN_ACCESS_KEY_ID",
        "ALIYUN_ACCESS_KEY_SECRET",
        "ALIBABA_CLOUD_PROFILE",
        "ALIYUN_PROFILE",
        "ALIYUN_REGION_ID",
        "AWS_DEFAULT_REGION",
        "AWS_REGION",
        "AWS_PROFILE",
    ):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "test-id")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "test-secret")
    monkeypatch.setenv("ALIBABA_CLOUD_REGION_ID", "cn-hangzhou")
    monkeypatch.setenv("GPUDECK_ALIYUN_ECS_ENDPOINT", url)
    monkeypatch.setenv("GPUDECK_ALIYUN_CMS_ENDPOINT", url)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")  # no AWS region here: `cloud` asks Aliyun only
    try:
        yield AliyunServer(url, account)
    finally:
        server.shutdown()
        server.server_close()
