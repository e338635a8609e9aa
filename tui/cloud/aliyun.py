"""Aliyun through the official SDK: ECS (version 2014-05-26) as CommonRequest, CloudMonitor's
DescribeMetricList through aliyun-python-sdk-cms (its `Datapoints` is a JSON string inside the JSON).

Endpoints are URLs (`http://127.0.0.1:8080`, `https://ecs-vpc.cn-hangzhou.aliyuncs.com`):
GPUDECK_ALIYUN_ECS_ENDPOINT / GPUDECK_ALIYUN_CMS_ENDPOINT, else `[cloud]` settings, else the public
regional ones. A domain is always set: without one the SDK looks endpoints up on the internet.
"""

from __future__ import annotations

import base64
import builtins
import datetime as dt
import json
import math
import os
import re
from typing import Any
from urllib.parse import urlsplit

from ..cost.spot import PriceLookupError, aliyun_price, aliyun_spot_history
from .aliyun_auth import credentials
from .model import TAG_MANAGED, TAG_TOKEN, CloudError, Instance, LaunchSpec, Point, RetryableError
from .retry import RetryPolicy, retrying

ECS_VERSION = "2014-05-26"
GPU_NAMESPACE, GPU_METRIC = "acs_ecs_dashboard", "instance_gpu_gpu_usedutilization"
_STATES = {
    "Pending": "pending",
    "Starting": "pending",
    "Running": "running",
    "Stopping": "stopping",
    "Stopped": "stopped",
}
_GPU_FAMILIES = ("ecs.gn", "ecs.ebmgn", "ecs.sgn", "ecs.vgn", "ecs.gi")


def split_endpoint(url: str) -> tuple[str, str]:
    """`http://127.0.0.1:8080` → ("127.0.0.1:8080", "http"); a bare host name means https."""
    parts = urlsplit(url if "://" in url else f"https://{url}")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CloudError(f"aliyun: endpoint {url!r}: expected a URL such as http://127.0.0.1:8080")
    return parts.netloc, parts.scheme


def _time(text: Any) -> float | None:
    """ECS times: `2017-12-10T04:04Z` or with seconds; None when absent or unreadable."""
    if not text:
        return None
    for fmt in ("%Y-%m-%dT%H:%MZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return dt.datetime.strptime(str(text), fmt).replace(tzinfo=dt.timezone.utc).timestamp()
        except ValueError:
            continue
    return None


# Nobody listens there (or no such name): retrying will not help, say it at once.
_REFUSED = re.compile(r"Connection refused|Name or service not known|nodename nor servname|No route to host")


def _short(text: str) -> str:
    """The SDK's HTTP errors quote the whole signed URL: keep the reason only (no key id, no signature)."""
    m = re.search(
        r"(\[Errno -?\d+\][^'\")]*|Read timed out[^'\")]*|Connection aborted[^'\")]*|RemoteDisconnected[^'\")]*)",
        text,
    )
    return m.group(1).strip(" .") if m else text.split("?", 1)[0][:200]


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _first_ip(block: Any) -> str | None:
    ips = (block or {}).get("IpAddress") if isinstance(block, dict) else None
    if isinstance(ips, list):
        return next((str(ip) for ip in ips if ip), None)
    return str(ips) if ips else None


class AliyunProvider:
    name = "aliyun"

    def __init__(
        self,
        region: str,
        ecs_endpoint: str | None = None,
        cms_endpoint: str | None = None,
        profile: str | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        from aliyunsdkcore.auth.credentials import AccessKeyCredential, StsTokenCredential
        from aliyunsdkcore.client import AcsClient

        self.region, self.retry_policy = region, retry or RetryPolicy()
        ecs = (
            os.environ.get("GPUDECK_ALIYUN_ECS_ENDPOINT")
            or ecs_endpoint
            or f"https://ecs.{region}.aliyuncs.com"
        )
        cms = (
            os.environ.get("GPUDECK_ALIYUN_CMS_ENDPOINT")
            or cms_endpoint
            or f"https://metrics.{region}.aliyuncs.com"
        )
        self.ecs_domain, self.ecs_protocol = split_endpoint(ecs)
        self.cms_domain, self.cms_protocol = split_endpoint(cms)
        creds = credentials(profile)
        credential = (
            StsTokenCredential(creds.key_id, creds.secret, creds.token)
            if creds.token
            else AccessKeyCredential(creds.key_id, creds.secret)
        )
        # auto_retry off: retry.py does it, with backoff, and only for what is worth retrying.
        self.client = AcsClient(
            region_id=region,
            credential=credential,
            auto_retry=False,
            timeout=timeout,
            connect_timeout=min(5, int(timeout) or 1),
        )

    # -- calls ---------------------------------------------------------------------------------

    def _send(self, request: Any, what: str) -> dict[str, Any]:
        from aliyunsdkcore.acs_exception.exceptions import ClientException, ServerException

        try:
            raw = self.client.do_action_with_exception(request)
        except ServerException as exc:
            code, status = str(exc.get_error_code() or ""), int(exc.get_http_status() or 0)
            line = f"aliyun {self.region} {what}: {code}: {exc.get_error_msg()}"
            if (
                status >= 500
                or status == 429
                or code.startswith(("Throttling", "ServiceUnavailable", "InternalError"))
            ):
                raise RetryableError(line) from None
            raise CloudError(line) from None
        except ClientException as exc:
            text = str(exc.get_error_msg() or "")
            line = f"aliyun {self.region} {what}: {exc.get_error_code()}: {_short(text)}"
            if exc.get_error_code() == "SDK.HttpError" and not _REFUSED.search(text):  # reset, timed out
                raise RetryableError(line) from None
            raise CloudError(line) from None
        try:
            answer = json.loads(raw)
        except ValueError:
            raise RetryableError(f"aliyun {self.region} {what}: the answer is not JSON") from None
        if not isinstance(answer, dict):
            raise CloudError(f"aliyun {self.region} {what}: unexpected answer")
        return answer

    def _ecs_request(self, action: str, params: dict[str, Any]) -> Any:
        from aliyunsdkcore.request import CommonRequest

        req = CommonRequest()
        req.set_accept_format("json")
        req.set_domain(self.ecs_domain)
        req.set_protocol_type(self.ecs_protocol)
        req.set_method("POST")
        req.set_version(ECS_VERSION)
        req.set_action_name(action)
        for key, value in {"RegionId": self.region, **params}.items():
            if value is not None:
                req.add_query_param(key, value)
        return req

    def ecs(self, action: str, params: dict[str, Any], retry: bool = True) -> dict[str, Any]:
        def once() -> dict[str, Any]:  # a fresh request per try
            return self._send(self._ecs_request(action, params), action)

        return retrying(once, self.retry_policy) if retry else once()

    # -- instances -----------------------------------------------------------------------------

    def _describe(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        page = 1
        while True:
            answer = self.ecs("DescribeInstances", {**params, "PageSize": 100, "PageNumber": page})
            found = ((answer.get("Instances") or {}).get("Instance")) or []
            rows.extend(r for r in found if isinstance(r, dict) and r.get("InstanceId"))
            total = int(answer.get("TotalCount") or 0)
            if not found or len(rows) >= total:
                return rows
            page += 1

    def _instance(self, row: dict[str, Any]) -> Instance:
        tags = {
            str(t.get("TagKey")): str(t.get("TagValue") or "")
            for t in ((row.get("Tags") or {}).get("Tag") or [])
            if isinstance(t, dict) and t.get("TagKey")
        }
        vpc = row.get("VpcAttributes") or {}
        status = str(row.get("Status") or "unknown")
        gpus = row.get("GPUAmount")
        return Instance(
            id=str(row["InstanceId"]),
            provider="aliyun",
            region=str(row.get("RegionId") or self.region),
            type=str(row.get("InstanceType") or "?"),
            state=_STATES.get(status, status.lower()),
            lifecycle="spot" if row.get("SpotStrategy") not in (None, "", "NoSpot") else "on-demand",
            name=row.get("InstanceName") or None,
            zone=row.get("ZoneId") or None,
            gpus=int(gpus) if isinstance(gpus, (int, float)) and gpus else None,
            gpu_model=row.get("GPUSpec") or None,
            launch_time=_time(row.get("StartTime")) or _time(row.get("CreationTime")),
            public_address=_first_ip(row.get("PublicIpAddress")) or _first_ip(row.get("EipAddress")),
            private_address=_first_ip(vpc.get("PrivateIpAddress")) or _first_ip(row.get("InnerIpAddress")),
            tags=tags,
            spot_persistent=None,
        )

    @staticmethod
    def _is_gpu(row: dict[str, Any]) -> bool:
        return bool(row.get("GPUAmount")) or str(row.get("InstanceType") or "").startswith(_GPU_FAMILIES)

    def list(self) -> list[Instance]:
        return [self._instance(r) for r in self._describe({}) if self._is_gpu(r)]

    def get(self, instance_id: str) -> Instance | None:
        rows = self._describe({"InstanceIds": json.dumps([instance_id])})
        return self._instance(rows[0]) if rows else None

    def find_launched(self, token: str) -> Instance | None:
        rows = self._describe({"Tag.1.Key": TAG_TOKEN, "Tag.1.Value": token})
        return self._instance(rows[0]) if rows else None

    def launch(self, spec: LaunchSpec) -> str:
        if not spec.image:
            raise CloudError("aliyun launch: --image is required (an image id)")
        params: dict[str, Any] = {
            "InstanceType": spec.instance_type,
            "ImageId": spec.image,
            "Amount": 1,
            "InstanceChargeType": "PostPaid",
            "ClientToken": spec.token,
            "InstanceName": spec.name,
            "KeyPairName": spec.key,
            "VSwitchId": spec.subnet,
            "ZoneId": spec.zone,
            "SpotStrategy": "SpotAsPriceGo" if spec.spot else None,
            "Tag.1.Key": TAG_MANAGED,
            "Tag.1.Value": "true",
            "Tag.2.Key": TAG_TOKEN,
            "Tag.2.Value": spec.token,
        }
        groups = (spec.security_group or "").split(",") if spec.security_group else []
        if len(groups) == 1:
            params["SecurityGroupId"] = groups[0]
        for i, group in enumerate(groups if len(groups) > 1 else [], 1):  # several: the list form
            params[f"SecurityGroupIds.{i}"] = group
        answer = self.ecs("RunInstances", params, retry=False)  # the caller retries after a tag lookup
        ids = ((answer.get("InstanceIdSets") or {}).get("InstanceIdSet")) or []
        if not ids:
            raise CloudError(f"aliyun {self.region} RunInstances: no instance id in the answer")
        return str(ids[0])

    def stop(self, instance: Instance) -> None:
        self.ecs("StopInstance", {"InstanceId": instance.id})

    def start(self, instance: Instance) -> None:
        self.ecs("StartInstance", {"InstanceId": instance.id})

    def terminate(self, instance: Instance) -> None:
        self.ecs("DeleteInstance", {"InstanceId": instance.id, "Force": "true"})

    def console_output(self, instance: Instance) -> str:
        answer = self.ecs("GetInstanceConsoleOutput", {"InstanceId": instance.id})
        try:
            return base64.b64decode(str(answer.get("ConsoleOutput") or "")).decode("utf-8", "replace")
        except ValueError:
            return ""

    # -- GPU metric and prices -----------------------------------------------------------------

    def gpu_util(self, instance: Instance, start: float, end: float) -> builtins.list[Point]:
        """CloudMonitor's instance-level GPU utilization per minute; [] when the agent reports nothing."""
        from aliyunsdkcms.request.v20190101.DescribeMetricListRequest import DescribeMetricListRequest

        points: list[Point] = []
        token: str | None = None
        for _page in range(50):  # a bound: 50 pages of 1440 points is far beyond any window asked

            def once(token: str | None = token) -> dict[str, Any]:
                req = DescribeMetricListRequest()
                req.set_accept_format("json")
                req.set_endpoint(self.cms_domain)
                req.set_protocol_type(self.cms_protocol)
                req.set_Namespace(GPU_NAMESPACE)
                req.set_MetricName(GPU_METRIC)
                req.set_Dimensions(json.dumps([{"instanceId": instance.id}]))
                req.set_StartTime(
                    _iso(start)
                )  # the documented unambiguous form (a number's unit varies by doc)
                req.set_EndTime(_iso(math.ceil(end)))  # whole seconds: round up, so the newest point is in
                req.set_Period("60")
                req.set_Length("1440")
                if token:
                    req.set_NextToken(token)
                return self._send(req, "DescribeMetricList")

            answer = retrying(once, self.retry_policy)
            if str(answer.get("Code", "200")) != "200" or answer.get("Success") is False:
                raise CloudError(
                    f"aliyun {self.region} DescribeMetricList: {answer.get('Code')}: {answer.get('Message')}"
                )
            points.extend(_datapoints(answer.get("Datapoints")))
            token = answer.get("NextToken") or None
            if not token:
                break
        return sorted(points)

    def price_call(self, action: str, params: dict[str, Any]) -> dict[str, Any]:
        """An ECS price action for tui/cost/spot.py, through the one request path (retries, errors)."""
        try:
            return self.ecs(action, params)
        except CloudError as exc:
            raise PriceLookupError(str(exc)) from None

    def spot_price(self, instance: Instance, start: float, end: float) -> tuple[float, str, str] | None:
        try:
            found = aliyun_spot_history(
                self.price_call, self.region, instance.type, start, end, zone=instance.zone
            )
        except PriceLookupError as exc:
            raise CloudError(str(exc)) from None
        return (found[-1].per_hour, found[-1].currency, found[-1].source) if found else None

    def on_demand_price(self, instance: Instance) -> tuple[float, str, str] | None:
        try:
            return aliyun_price(self.price_call, self.region, instance.type, zone=instance.zone)
        except PriceLookupError as exc:
            raise CloudError(str(exc)) from None


def _datapoints(raw: Any) -> list[Point]:
    """`Datapoints` is a JSON string holding a list; readers are total: a bad point is skipped."""
    try:
        rows = json.loads(raw) if isinstance(raw, str) else (raw or [])
    except ValueError:
        return []
    out = []
    for row in rows if isinstance(rows, list) else []:
        try:
            out.append((float(row["timestamp"]) / 1000.0, float(row["Average"])))
        except (KeyError, TypeError, ValueError):
            continue
    return out
