"""The one core that acts on jobs: launch, stop, kill, restart, remove, pause an idle stop, find.

The CLI's commands parse arguments into these calls; the TUI runs them in thread workers. Each
takes an `Agents` (the CLI's Session, the TUI's connection service) and raises GpudeckError with
the line the user sees. No Textual here, no argparse.
"""

from __future__ import annotations

from .agents import Agents
from .control import (
    STOP_MARGIN,
    JobTarget,
    NodeTarget,
    end,
    final_state,
    remove,
    restart,
    set_autostop,
    stop_wait,
)
from .find import Job, list_jobs, pick, resolve
from .launch import Launched, build_spec, launch
from .nodes import NodePlan, plan
from .options import (
    DEFAULT_GRACE,
    DEMO_COMMAND,
    LaunchOptions,
    check,
    check_grace,
    default_name,
    form_options,
    parse_env,
    preview_name,
    split_command,
)
from .reindex import rebuild_index
from .scale import Scaled, scale, target_count
from .watch import WatchOptions, watch

__all__ = [
    "DEFAULT_GRACE", "DEMO_COMMAND", "STOP_MARGIN", "Agents", "Job", "JobTarget", "LaunchOptions", "Launched",
    "NodePlan", "NodeTarget", "Scaled", "build_spec", "check", "check_grace", "default_name", "end", "final_state", "form_options", "launch",
    "list_jobs", "parse_env", "pick", "preview_name", "rebuild_index", "remove", "resolve", "plan", "restart", "scale", "set_autostop",
    "split_command", "stop_wait", "target_count", "WatchOptions", "watch",
]
