"""The app's services: what keeps the model live and acts on jobs, owned by the App and handed to
the screens. They may use Textual's workers, timers and messages; they never draw."""

from __future__ import annotations

from .base import Service
from .cloud import CloudInstances
from .connections import Connections
from .costs import Costs
from .jobs import JobControl
from .policies import Proposals

__all__ = ["CloudInstances", "Connections", "Costs", "JobControl", "Proposals", "Service"]
