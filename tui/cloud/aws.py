"""AWS through boto3: EC2 instances (GPU types from describe_instance_types), CloudWatch's GPU
metric (the CloudWatch agent's CWAgent/nvidia_smi_utilization_gpu), spot price history.

Credentials and the default region come from boto3's own chain (env, profiles, SSO, instance
roles); the endpoint from `[cloud] aws_endpoint_url` or boto3's own AWS_ENDPOINT_URL. botocore's
retries are off: throttling, 5xx and timeouts become RetryableError and retry.py retries them.
"""

from __future__ import annotations

import builtins
import datetime as dt
from typing import Any

from ..cost.spot import PriceLookupError, aws_spot_history
from .model import TAG_MANAGED, TAG_NAME, TAG_TOKEN, CloudError, Instance, LaunchSpec, Point, RetryableError
from .retry import RetryPolicy, retrying

GPU_NAMESPACE, GPU_METRIC = "CWAgent", "nvidia_smi_utilization_gpu"
_THROTTLING = {
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "RequestThrottled",
    "InternalError",
    "InternalFailure",
    "ServiceUnavailable",
    "Unavailable",
}
_STATES = {
    "pending": "pending",
    "running": "running",
    "stopping": "stopping",
    "stopped": "stopped",
    "shutting-down": "stopping",
    "terminated": "terminated",
}


def default_region(profile: str | None = None) -> str | None:
    """AWS_DEFAULT_REGION / AWS_REGION or the profile's region, as boto3 reads them."""
    import os

    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    config = os.path.expanduser(os.environ.get("AWS_CONFIG_FILE") or "~/.aws/config")
    if region or not os.path.exists(config):  # no config file: no profile region; boto3 (~0.5 s) not needed
        return region
    import boto3

    found: str | None = boto3.session.Session(profile_name=profile).region_name  # boto3 is untyped here
    return found


def _epoch(value: Any) -> float | None:
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)).timestamp()
    return None


class AwsProvider:
    name = "aws"

    def __init__(
        self,
        region: str,
        endpoint_url: str | None = None,
        profile: str | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        import boto3
        from botocore.config import Config

        self.region, self.retry_policy = region, retry or RetryPolicy()
        try:
            session = boto3.session.Session(profile_name=profile, region_name=region)
        except Exception as exc:  # botocore's ProfileNotFound and kin
            raise CloudError(f"aws: {exc}") from None
        config = Config(
            connect_timeout=min(5.0, timeout),
            read_timeout=timeout,
            retries={"total_max_attempts": 1, "mode": "standard"},
        )
        self.ec2 = session.client("ec2", endpoint_url=endpoint_url, config=config)
        self.cloudwatch = session.client("cloudwatch", endpoint_url=endpoint_url, config=config)
        self._gpu_types: dict[str, tuple[int, str | None] | None] = {}

    # -- calls ---------------------------------------------------------------------------------

    def _call(self, client: Any, op: str, **kwargs: Any) -> Any:
        return retrying(lambda: self._once(client, op, kwargs), self.retry_policy)

    def _once(self, client: Any, op: str, kwargs: dict[str, Any]) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, HTTPClientError

        try:
            return getattr(client, op)(**kwargs)
        except ClientError as exc:
            error = exc.response.get("Error") or {}
            code = str(error.get("Code") or "")
            status = int((exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
            line = f"aws {self.region} {op}: {code or status}: {error.get('Message') or ''}".rstrip(": ")
            if code in _THROTTLING or status >= 500 or status == 429:
                raise RetryableError(line) from None
            raise CloudError(line) from None
        except EndpointConnectionError as exc:  # refused or no such name: retrying will not help
            raise CloudError(f"aws {self.region} {op}: {exc}") from None
        except HTTPClientError as exc:  # timed out, connection dropped: the call may even have been done
            raise RetryableError(f"aws {self.region} {op}: {exc}") from None
        except BotoCoreError as exc:  # no credentials, bad parameters…
            raise CloudError(f"aws {self.region} {op}: {exc}") from None

    # -- instances -----------------------------------------------------------------------------

    def _describe(self, **kwargs: Any) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = self._call(
                self.ec2, "describe_instances", **kwargs, **({"NextToken": token} if token else {})
            )
            for reservation in page.get("Reservations") or []:
                rows.extend(reservation.get("Instances") or [])
            token = page.get("NextToken")
            if not token:
                return rows

    def _gpu_info(self, types: set[str]) -> None:
        missing = sorted(t for t in types if t not in self._gpu_types)
        for i in range(0, len(missing), 100):  # the API takes at most 100 types a call
            answer = self._call(self.ec2, "describe_instance_types", InstanceTypes=missing[i : i + 100])
            for row in answer.get("InstanceTypes") or []:
                gpus = (row.get("GpuInfo") or {}).get("Gpus") or []
                count = sum(int(g.get("Count") or 0) for g in gpus)
                self._gpu_types[row["InstanceType"]] = (count, gpus[0].get("Name")) if count else None
        for t in missing:
            self._gpu_types.setdefault(t, None)

    def _instance(self, row: dict[str, Any]) -> Instance:
        tags = {t["Key"]: t.get("Value", "") for t in row.get("Tags") or [] if "Key" in t}
        gpu = self._gpu_types.get(row.get("InstanceType", ""))
        state = str((row.get("State") or {}).get("Name") or "unknown")
        return Instance(
            id=row["InstanceId"],
            provider="aws",
            region=self.region,
            type=row.get("InstanceType", "?"),
            state=_STATES.get(state, state),
            lifecycle="spot" if row.get("InstanceLifecycle") == "spot" else "on-demand",
            name=tags.get(TAG_NAME),
            zone=(row.get("Placement") or {}).get("AvailabilityZone"),
            gpus=gpu[0] if gpu else None,
            gpu_model=gpu[1] if gpu else None,
            launch_time=_epoch(row.get("LaunchTime")),
            public_address=row.get("PublicIpAddress"),
            private_address=row.get("PrivateIpAddress"),
            tags=tags,
            spot_persistent=None,
        )

    def list(self) -> list[Instance]:
        rows = [r for r in self._describe() if (r.get("State") or {}).get("Name") != "terminated"]
        self._gpu_info({r.get("InstanceType", "") for r in rows})
        out = [self._instance(r) for r in rows if self._gpu_types.get(r.get("InstanceType", ""))]
        self._spot_kinds([i for i in out if i.lifecycle == "spot"], rows)
        return out

    def get(self, instance_id: str) -> Instance | None:
        try:
            rows = self._describe(InstanceIds=[instance_id])
        except CloudError as exc:
            if "InvalidInstanceID" in str(exc):
                return None
            raise
        if not rows:
            return None
        self._gpu_info({r.get("InstanceType", "") for r in rows})
        instance = self._instance(rows[0])
        self._spot_kinds([instance] if instance.lifecycle == "spot" else [], rows)
        return instance

    def _spot_kinds(self, spots: builtins.list[Instance], rows: builtins.list[dict[str, Any]]) -> None:
        """Which spot instances came from a persistent request (only those can stop)."""
        requests: dict[str, str] = {
            r["InstanceId"]: r["SpotInstanceRequestId"] for r in rows if r.get("SpotInstanceRequestId")
        }
        ids = sorted({requests[i.id] for i in spots if i.id in requests})
        if not ids:
            return
        answer = self._call(self.ec2, "describe_spot_instance_requests", SpotInstanceRequestIds=ids)
        kinds = {r["SpotInstanceRequestId"]: r.get("Type") for r in answer.get("SpotInstanceRequests") or []}
        for i in spots:
            kind = kinds.get(requests.get(i.id) or "")
            i.spot_persistent = None if kind is None else kind == "persistent"

    def find_launched(self, token: str) -> Instance | None:
        rows = [
            r
            for r in self._describe(Filters=[{"Name": f"tag:{TAG_TOKEN}", "Values": [token]}])
            if (r.get("State") or {}).get("Name") != "terminated"
        ]
        if not rows:
            return None
        self._gpu_info({r.get("InstanceType", "") for r in rows})
        return self._instance(rows[0])

    def launch(self, spec: LaunchSpec) -> str:
        tags = [{"Key": TAG_MANAGED, "Value": "true"}, {"Key": TAG_TOKEN, "Value": spec.token}]
        if spec.name:
            tags.append({"Key": TAG_NAME, "Value": spec.name})
        args: dict[str, Any] = {
            "ImageId": spec.image,
            "InstanceType": spec.instance_type,
            "MinCount": 1,
            "MaxCount": 1,
            "ClientToken": spec.token,
            "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}],
        }
        if not spec.image:
            raise CloudError("aws launch: --image is required (an AMI id, e.g. a Deep Learning AMI)")
        if spec.key:
            args["KeyName"] = spec.key
        if spec.subnet:
            args["SubnetId"] = spec.subnet
        if spec.zone:
            args["Placement"] = {"AvailabilityZone": spec.zone}
        if spec.security_group:
            args["SecurityGroupIds"] = spec.security_group.split(",")  # one or several, comma-joined
        if spec.spot:
            args["InstanceMarketOptions"] = {
                "MarketType": "spot",
                "SpotOptions": {"SpotInstanceType": "one-time"},
            }
        # One attempt: the caller retries, looking the token's tag up first (never two instances).
        answer = self._once(self.ec2, "run_instances", args)
        return str(answer["Instances"][0]["InstanceId"])

    def stop(self, instance: Instance) -> None:
        self._call(self.ec2, "stop_instances", InstanceIds=[instance.id])

    def start(self, instance: Instance) -> None:
        self._call(self.ec2, "start_instances", InstanceIds=[instance.id])

    def terminate(self, instance: Instance) -> None:
        self._call(self.ec2, "terminate_instances", InstanceIds=[instance.id])

    def console_output(self, instance: Instance) -> str:
        import base64

        answer = self._call(self.ec2, "get_console_output", InstanceId=instance.id, Latest=True)
        text = answer.get("Output") or ""
        try:  # boto3 decodes it already; a raw endpoint may not
            return base64.b64decode(text, validate=True).decode("utf-8", "replace")
        except ValueError:
            return str(text)

    # -- GPU metric and prices -----------------------------------------------------------------

    def gpu_util(self, instance: Instance, start: float, end: float) -> builtins.list[Point]:
        """CloudWatch agent's per-GPU metric, averaged over the GPUs per minute; [] when not reported."""
        found = self._call(
            self.cloudwatch,
            "list_metrics",
            Namespace=GPU_NAMESPACE,
            MetricName=GPU_METRIC,
            Dimensions=[{"Name": "InstanceId", "Value": instance.id}],
        )
        seen, series = set(), []
        for metric in found.get("Metrics") or []:
            dims = tuple(sorted((d["Name"], d["Value"]) for d in metric.get("Dimensions") or []))
            if dims in seen:
                continue
            seen.add(dims)
            answer = self._call(
                self.cloudwatch,
                "get_metric_statistics",
                Namespace=GPU_NAMESPACE,
                MetricName=GPU_METRIC,
                Dimensions=[{"Name": k, "Value": v} for k, v in dims],
                Period=60,
                Statistics=["Average"],
                StartTime=dt.datetime.fromtimestamp(start, dt.timezone.utc),
                EndTime=dt.datetime.fromtimestamp(end, dt.timezone.utc),
            )
            series.append(
                [
                    (_epoch(p["Timestamp"]) or 0.0, float(p["Average"]))
                    for p in answer.get("Datapoints") or []
                    if p.get("Average") is not None
                ]
            )
        return busiest_per_minute(series)

    def on_demand_price(self, instance: Instance) -> tuple[float, str, str] | None:
        return None  # no live list price (the Pricing API is us-east-1 only and slow): the catalog has it

    def spot_price(self, instance: Instance, start: float, end: float) -> tuple[float, str, str] | None:
        try:
            points = aws_spot_history(self.ec2, instance.type, instance.zone or self.region, start, end)
        except PriceLookupError as exc:
            raise CloudError(str(exc)) from None
        return (points[-1].per_hour, points[-1].currency, points[-1].source) if points else None


def busiest_per_minute(series: list[list[Point]]) -> list[Point]:
    """Several GPUs' points → one point per minute, the busiest GPU that reported in it: one GPU at
    30 % on an 8-GPU instance is a busy instance, not an idle one at a 4 % mean."""
    buckets: dict[int, list[float]] = {}
    for points in series:
        for t, value in points:
            buckets.setdefault(int(t // 60), []).append(value)
    return [(minute * 60.0, max(v)) for minute, v in sorted(buckets.items())]
