"""The fleet model: hosts, jobs and their bounded time series. Plain Python: no Textual, no IO.

Its names are loaded when first asked for (PEP 562): a CLI verb that needs only `tui.fleet.states`
(every verb that names a job) does not pay for the whole model at each start."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from remote_agent.spec import ResizedFrom

    from .hosts import GpuProcess, GpuSample, HostModel, HostStatus, util_level
    from .jobs import JobEvent, JobModel, NodeModel
    from .model import Fleet, FleetSummary
    from .series import Series, minmax_downsample
    from .states import JOB_STATES

_HOME = {
    "ResizedFrom": "remote_agent.spec",
    "GpuProcess": ".hosts",
    "GpuSample": ".hosts",
    "HostModel": ".hosts",
    "HostStatus": ".hosts",
    "util_level": ".hosts",
    "JobEvent": ".jobs",
    "JobModel": ".jobs",
    "NodeModel": ".jobs",
    "Fleet": ".model",
    "FleetSummary": ".model",
    "Series": ".series",
    "minmax_downsample": ".series",
    "JOB_STATES": ".states",
}

__all__ = [
    "JOB_STATES",
    "Fleet",
    "FleetSummary",
    "GpuProcess",
    "GpuSample",
    "HostModel",
    "HostStatus",
    "JobEvent",
    "JobModel",
    "NodeModel",
    "ResizedFrom",
    "Series",
    "minmax_downsample",
    "util_level",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value  # asked once
    return value
