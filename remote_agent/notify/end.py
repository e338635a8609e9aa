"""A job node's end, told to its `notify` targets from the host, so it arrives with no gpudeck
process on the user's machine. Only node 0 of a multi-node job speaks (one message per job).
Standard library only (the agent's rule)."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from .events import event_of, summary


def notify_end(spec: Mapping[str, Any], end: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """What was sent ({event, sent, failed: [why…]}), or None when this end is not to be told."""
    asked = spec.get("notify")
    if not isinstance(asked, dict) or str(spec.get("node", "0")) != "0":
        return None
    event = event_of(end)
    if event is None or event not in (asked.get("events") or ()):
        return None
    host = _hostname()
    message = {
        "event": event,
        "job": spec.get("id"),
        "name": spec.get("name"),
        "host": host,
        "state": end.get("state"),
        "reason": end.get("reason"),
        "cause": end.get("cause"),
        "exit_code": end.get("exit_code"),
        "look": "gpudeck inspect %s" % spec.get("id"),
        "text": summary(event, spec, end, host),
    }
    return _send(asked, event, message)


def notify_event(spec: Mapping[str, Any], event: str, why: str) -> Optional[Dict[str, Any]]:
    """A diagnosis while the job runs (`stalled`), told as an end is, when the job asked for it."""
    asked = spec.get("notify")
    if (
        not isinstance(asked, dict)
        or str(spec.get("node", "0")) != "0"
        or event not in (asked.get("events") or ())
    ):
        return None
    host = _hostname()
    text = "gpudeck: %s %s on %s: %s — gpudeck inspect %s" % (
        spec.get("name"),
        event,
        host,
        why,
        spec.get("id"),
    )
    message = {
        "event": event,
        "job": spec.get("id"),
        "name": spec.get("name"),
        "host": host,
        "why": why,
        "text": text,
    }
    return _send(asked, event, message)


def _send(asked: Mapping[str, Any], event: str, message: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """To every target; what went and why the others did not (never their URLs). None when the
    job has no target here (only the user's side tells it: its apprise targets)."""
    urls = [str(u) for u in asked.get("urls") or ()]
    if not urls:
        return None
    from .send import deliver  # here: every supervisor imports this module, few have a target

    failed = [why for why in (deliver(url, message) for url in urls) if why is not None]
    return {"event": event, "sent": len(urls) - len(failed), "failed": failed}


def _hostname() -> str:
    import socket  # here: every supervisor imports this module, few ever say their host's name

    return socket.gethostname()
