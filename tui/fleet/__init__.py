"""The fleet model: hosts, jobs and their bounded time series. Plain Python: no Textual, no IO."""

from __future__ import annotations

from .hosts import GpuProcess, GpuSample, HostModel, HostStatus, util_level
from .jobs import JOB_STATES, JobEvent, JobModel, NodeModel, ResizedFrom
from .model import Fleet, FleetSummary
from .series import Series, minmax_downsample

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
