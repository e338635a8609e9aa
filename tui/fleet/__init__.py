"""The fleet model: hosts, jobs and their bounded time series. Plain Python: no Textual, no IO."""

from __future__ import annotations

from remote_agent.spec import ResizedFrom

from .hosts import GpuProcess, GpuSample, HostModel, HostStatus, util_level
from .jobs import JobEvent, JobModel, NodeModel
from .model import Fleet, FleetSummary
from .series import Series, minmax_downsample
from .states import JOB_STATES

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
