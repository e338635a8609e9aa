"""A job's spec: checked before anything runs, and turned into the command's environment and script."""

from __future__ import annotations

import json
import os
import shlex
import signal
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from ..names import is_job_id, is_job_name, is_node
from .outputcap import DEFAULT_OUTPUT_CAP, MIN_OUTPUT_CAP
from .proctree import JOB_MARKER_VAR

DEFAULT_GRACE = 60.0


class SpecError(ValueError):
    """A spec field is wrong; the message names the field."""


def validate_spec(spec: Any) -> Dict[str, Any]:
    """A clean copy of the spec, or SpecError naming the first bad field."""
    if not isinstance(spec, dict):
        raise SpecError("spec: expected an object")
    out: Dict[str, Any] = dict(spec)
    if not is_job_id(spec.get("id")):
        raise SpecError("spec.id: expected YYYYMMDD-HHMMSS-xxxxxx, got %r" % (spec.get("id"),))
    if not is_job_name(spec.get("name")):
        raise SpecError("spec.name: 1-64 of A-Z a-z 0-9 . _ - (starting alphanumeric), got %r" % (spec.get("name"),))
    out["node"] = spec.get("node", "0")
    if not is_node(out["node"]):
        raise SpecError("spec.node: 1-32 of A-Z a-z 0-9 . _ -, got %r" % (out["node"],))
    argv = spec.get("argv")
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        raise SpecError("spec.argv: expected a non-empty list of strings")
    if any("\0" in a for a in argv):
        raise SpecError("spec.argv: NUL byte in an argument")
    workdir = spec.get("workdir")
    if not isinstance(workdir, str) or not workdir:
        raise SpecError("spec.workdir: expected a directory path")
    workdir = os.path.expanduser(workdir)
    if not os.path.isdir(workdir):
        what = "not a directory" if os.path.exists(workdir) else "no such directory"
        raise SpecError("spec.workdir: %s: %s" % (what, workdir))
    out["workdir"] = workdir
    env = spec.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise SpecError("spec.env: expected an object of string to string")
    for key in env:
        if not key or "=" in key or "\0" in key or "\0" in env[key]:
            raise SpecError("spec.env: bad variable name %r" % key)
    out["env"] = env
    setup = spec.get("setup") or []
    if not (isinstance(setup, list) and all(isinstance(s, str) and "\0" not in s for s in setup)):
        raise SpecError("spec.setup: expected a list of shell lines")
    out["setup"] = setup
    grace = spec.get("grace", DEFAULT_GRACE)
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not 0 <= grace <= 86400:
        raise SpecError("spec.grace: expected seconds between 0 and 86400, got %r" % (grace,))
    out["grace"] = float(grace)
    stop_signal = spec.get("stop_signal") or "SIGTERM"
    if not (isinstance(stop_signal, str) and stop_signal.startswith("SIG") and hasattr(signal, stop_signal)):
        raise SpecError("spec.stop_signal: unknown signal %r" % (stop_signal,))
    out["stop_signal"] = stop_signal
    path = spec.get("path")
    if path is not None and not (isinstance(path, str) and "\0" not in path and len(path) < 65536):
        raise SpecError("spec.path: expected a PATH string")
    out.update(_validate_cost_rules(spec))
    cap = spec.get("output_cap", DEFAULT_OUTPUT_CAP)
    if isinstance(cap, bool) or not isinstance(cap, int) or not (cap == 0 or MIN_OUTPUT_CAP <= cap <= 1 << 50):
        raise SpecError("spec.output_cap: expected bytes: 0 (no cap) or %d..2**50, got %r" % (MIN_OUTPUT_CAP, cap))
    out["output_cap"] = cap
    for field in ("gpu_interval", "heartbeat_interval"):
        if field in spec:
            value = spec[field]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.1 <= value <= 3600:
                raise SpecError("spec.%s: expected seconds between 0.1 and 3600" % field)
    return out


def _number(value: Any, field: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise SpecError("spec.%s: expected a number between %g and %g, got %r" % (field, low, high, value))
    return float(value)


def _validate_cost_rules(spec: Dict[str, Any]) -> Dict[str, Any]:
    """price, budget and idle_stop: what the supervisor enforces with nobody watching."""
    out: Dict[str, Any] = {}
    price = spec.get("price")
    if price is not None:
        if not isinstance(price, dict):
            raise SpecError("spec.price: expected an object")
        out["price"] = dict(
            price,
            per_hour=_number(price.get("per_hour"), "price.per_hour", 0, 1e6),
            share=_number(price.get("share", 1.0), "price.share", 1e-6, 1),
            currency=str(price.get("currency") or "USD")[:8],
        )
    if spec.get("budget") is not None:
        out["budget"] = _number(spec["budget"], "budget", 1e-9, 1e9)
        if not (out.get("price") or {}).get("per_hour"):
            raise SpecError("spec.budget: needs spec.price.per_hour (the host's price is unknown)")
    idle = spec.get("idle_stop")
    if idle is not None:
        if not isinstance(idle, dict):
            raise SpecError("spec.idle_stop: expected {below_pct, minutes, grace_minutes}")
        out["idle_stop"] = {
            "below_pct": _number(idle.get("below_pct", 10), "idle_stop.below_pct", 0, 100),
            "minutes": _number(idle.get("minutes", 30), "idle_stop.minutes", 0.001, 100000),
            "grace_minutes": _number(idle.get("grace_minutes", 15), "idle_stop.grace_minutes", 0, 100000),
        }
    return out


def load_spec(path: Path) -> Dict[str, Any]:
    with open(str(path), "rb") as f:
        spec = json.loads(f.read().decode("utf-8"))
    if not isinstance(spec, dict) or not isinstance(spec.get("argv"), list):
        raise ValueError("not a job spec")
    return spec


def job_key(spec: Mapping[str, Any]) -> str:
    return "%s/%s" % (spec["id"], spec.get("node", "0"))


def job_env(spec: Mapping[str, Any], base: Mapping[str, str]) -> Dict[str, str]:
    env = dict(base)
    env.update(spec.get("env") or {})
    env["PYTHONUNBUFFERED"] = "1"
    env["GPUDECK_JOB_ID"] = spec["id"]
    env["GPUDECK_JOB_NAME"] = spec["name"]
    env["GPUDECK_NODE"] = spec.get("node", "0")
    # Every descendant inherits this marker: it finds the tree even when the supervisor is gone.
    env[JOB_MARKER_VAR] = job_key(spec)
    return env


def shell_script(setup: List[str], path: Optional[str] = None) -> str:
    """Setup lines, each checked, then `exec "$@"`: the argv reaches exec untouched by the shell.

    `path` restores the launcher's PATH after the login profile: /etc/profile resets PATH for
    login shells, which would silently drop the venv a local user launched from.
    """
    lines = ["export PATH=%s" % shlex.quote(path)] if path else []
    for line in setup:
        message = shlex.quote("gpudeck: setup line failed: %s" % line)
        lines.append('%s\n_gpudeck_rc=$?; if [ "$_gpudeck_rc" -ne 0 ]; then echo %s >&2; exit 97; fi' % (line, message))
    lines.append('exec "$@"')
    return "\n".join(lines)


def public_spec(spec: Mapping[str, Any]) -> Dict[str, Any]:
    """What may be shown: env values never leave the host."""
    shown = {k: v for k, v in spec.items() if k != "env"}
    shown["env_keys"] = sorted((spec.get("env") or {}).keys())
    return shown
