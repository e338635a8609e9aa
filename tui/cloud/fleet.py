"""The fleet of cloud GPU instances at one moment: what `gpudeck cloud ls|idle` print and what a TUI
worker calls (`snapshot(settings)`, blocking: run it in a thread worker, never on the event loop).

Each (provider, region) is listed in parallel; one that fails is a line in `errors`, the others are
still shown. Utilization comes from the provider's monitoring, or, for an instance that is a gpudeck
host, from gpudeck's own agent when the caller passes `host_util` (finer: 1 Hz).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..hosts_file import HostsFileError, load_hosts
from ..settings import Settings
from . import providers as providers_mod
from .model import CloudError, Instance, Point, Provider
from .pricing import InstancePrice, price_for
from .utilization import Utilization, lookback, summarize

NO_METRIC = "no GPU metric (monitoring agent missing?)"
METRIC_SOURCES = {
    "aws": "CloudWatch CWAgent/nvidia_smi_utilization_gpu",
    "aliyun": "CloudMonitor acs_ecs_dashboard/instance_gpu_gpu_usedutilization",
}
HostUtil = Callable[[str, float, float], "list[Point] | None"]  # (host name, start, end) → points or None


@dataclass
class InstanceView:
    instance: Instance
    price: InstancePrice
    util: Utilization
    util_source: str  # where the points came from, or NO_METRIC / the error that hid them
    host: str | None  # the gpudeck host this instance is, by hosts.toml instance_id
    accrued: float | None
    waste_per_hour: float | None = None  # idle ones: what the instance costs per hour doing nothing
    waste_since_idle: float | None = None

    @property
    def has_metric(self) -> bool:
        return self.util.now is not None or self.util.window_avg is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.instance.to_json())
        out.update(
            {
                "price_per_hour": self.price.per_hour,
                "currency": self.price.currency,
                "price_source": self.price.source,
                "accrued": _round(self.accrued),
                "gpu_util": _round(self.util.window_avg),
                "gpu_util_now": _round(self.util.now),
                "gpu_util_1h": _round(self.util.avg_1h),
                "gpu_util_source": self.util_source,
                "gpudeck_host": self.host,
            }
        )
        if self.util.idle:
            out.update(
                {
                    "idle_since": self.util.idle_since,
                    "waste_per_hour": self.waste_per_hour,
                    "waste_usd_per_hour": self.waste_per_hour if self.price.currency == "USD" else None,
                    "waste_since_idle": _round(self.waste_since_idle),
                }
            )
        return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


@dataclass
class Snapshot:
    taken_at: float
    views: list[InstanceView] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # one line per provider/region that failed

    def idle(self) -> list[InstanceView]:
        return [v for v in self.views if v.instance.state == "running" and v.util.idle]


def cloud_hosts() -> dict[str, str]:
    """instance id → gpudeck host name, from hosts.toml's `instance_id` fields."""
    try:
        hosts = load_hosts()
    except HostsFileError:
        return {}
    return {str(h.extra["instance_id"]): name for name, h in hosts.items() if h.extra.get("instance_id")}


def view(
    provider: Provider,
    instance: Instance,
    now: float,
    window: float,
    below: float,
    host: str | None = None,
    host_util: HostUtil | None = None,
) -> InstanceView:
    points: list[Point] | None = None
    source = NO_METRIC
    if host is not None and host_util is not None:
        points = host_util(host, now - min(window, 3600.0), now) or None
        source = f"gpudeck agent on {host}" if points else source
    if not points and instance.state == "running":
        try:
            points = provider.gpu_util(instance, now - lookback(window), now)
            source = METRIC_SOURCES.get(provider.name, provider.name) if points else NO_METRIC
        except CloudError as exc:
            points, source = [], f"{NO_METRIC}: {exc}"
    util = summarize(points or [], now, window, below, instance.launch_time)
    price = price_for(provider, instance, now)
    v = InstanceView(instance, price, util, source, host, price.accrued(instance.launch_time, now))
    if util.idle and price.per_hour is not None:
        v.waste_per_hour = price.per_hour
        v.waste_since_idle = price.accrued(util.idle_since, now)
    return v


def snapshot(
    settings: Settings,
    only: str | None = None,
    window: float = 1800.0,
    below: float = 5.0,
    now: float | None = None,
    host_util: HostUtil | None = None,
    providers: list[Provider] | None = None,
    workers: int = 8,
) -> Snapshot:
    """Every GPU instance of every configured provider and region, priced and with its GPU use."""
    now = time.time() if now is None else now
    errors: list[str] = []
    if providers is None:
        providers, errors = providers_mod.configured(settings.cloud, only)
    result = Snapshot(taken_at=now, errors=errors)
    hosts = cloud_hosts()
    # Parallel: each instance's metric is its own round trip (or two), the wait is the provider's.
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="cloud") as pool:

        def listing(p: Provider) -> tuple[Provider, list[Instance] | str]:
            try:
                return p, p.list()
            except CloudError as exc:
                return p, str(exc)

        pairs: list[tuple[Provider, Instance]] = []
        for p, found in pool.map(listing, providers):
            if isinstance(found, str):
                result.errors.append(found)
            else:
                pairs += [(p, i) for i in found]
        result.views = list(
            pool.map(
                lambda pair: view(pair[0], pair[1], now, window, below, hosts.get(pair[1].id), host_util),
                pairs,
            )
        )
    result.views.sort(
        key=lambda v: (v.instance.provider, v.instance.region, v.instance.name or "", v.instance.id)
    )
    return result
