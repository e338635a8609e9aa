"""The one core that acts on jobs: launch, stop, kill, restart, remove, pause an idle stop, find.

The CLI's commands parse arguments into these calls; the TUI runs them in thread workers. Each
takes an `Agents` (the CLI's Session, the TUI's connection service) and raises GpudeckError with
the line the user sees. No Textual here, no argparse.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Each name's module, imported on first use: `ps` needs find.py, not launch/scale/watch (a third of
# the CLI's start-up when the package imported them all).
_EXPORTS = {
    "Agents": "agents",
    "STOP_MARGIN": "control",
    "JobTarget": "control",
    "NodeTarget": "control",
    "end": "control",
    "final_state": "control",
    "remove": "control",
    "restart": "control",
    "set_autostop": "control",
    "stop_wait": "control",
    "Job": "find",
    "list_jobs": "find",
    "pick": "find",
    "resolve": "find",
    "Launched": "launch",
    "build_spec": "launch",
    "launch": "launch",
    "NodePlan": "nodes",
    "plan": "nodes",
    "DEFAULT_GRACE": "options",
    "DEMO_COMMAND": "options",
    "LaunchOptions": "options",
    "check": "options",
    "check_grace": "options",
    "default_name": "options",
    "form_options": "options",
    "parse_env": "options",
    "preview_name": "options",
    "split_command": "options",
    "rebuild_index": "reindex",
    "Scaled": "scale",
    "scale": "scale",
    "target_count": "scale",
    "WatchOptions": "watch",
    "watch": "watch",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """Keeps `launch`, `scale` and `watch` the functions: importing a submodule binds the package's
    attribute of its name to the module, whenever that happens (the eager imports did it once, first)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and value.__name__ == f"{__name__}.{name}" and name in _EXPORTS:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "DEFAULT_GRACE", "DEMO_COMMAND", "STOP_MARGIN", "Agents", "Job", "JobTarget", "LaunchOptions", "Launched",
    "NodePlan", "NodeTarget", "Scaled", "build_spec", "check", "check_grace", "default_name", "end", "final_state", "form_options", "launch",
    "list_jobs", "parse_env", "pick", "preview_name", "rebuild_index", "remove", "resolve", "plan", "restart", "scale", "set_autostop",
    "split_command", "stop_wait", "target_count", "WatchOptions", "watch",
]
