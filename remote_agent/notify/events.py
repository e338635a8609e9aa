"""Which notify event a job node's end is, from its final state record. Standard library only."""

from __future__ import annotations

from typing import Any, Mapping, Optional

# Sent from the host (the job's supervisor); the controller sends its own (recovered, gave_up, …).
HOST_EVENTS = ("ended", "failed", "budget_stop", "idle_stop", "preempted", "stalled", "advice")


def event_of(end: Mapping[str, Any]) -> Optional[str]:
    state = end.get("state")
    reason = str(end.get("reason") or "")
    if state == "failed":
        return "failed"
    if state in ("stopped", "killed"):
        if reason.startswith("budget"):
            return "budget_stop"
        if reason.startswith("idle"):
            return "idle_stop"
        if reason.startswith("preempted"):
            return "preempted"
        return "ended"
    if state == "exited":
        return "ended"
    return None


def summary(event: str, spec: Mapping[str, Any], end: Mapping[str, Any], host: str) -> str:
    """One line a person reads on a phone: what, which job, why, and the command to look."""
    why = (
        end.get("cause")
        or end.get("reason")
        or ("exit code %s" % end.get("exit_code") if end.get("exit_code") is not None else end.get("signal"))
    )
    return "gpudeck: %s %s (%s) on %s%s — gpudeck inspect %s" % (
        spec.get("name"),
        event.replace("_", " "),
        end.get("state"),
        host,
        ": %s" % why if why else "",
        spec.get("id"),
    )
