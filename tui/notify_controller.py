"""What only the controller knows (a managed job's recovery or giving up, a queued job's start),
told to config.toml's [notify] targets by the controller itself: the host's sender for the targets
a host can POST to (remote_agent/notify/send.py, the same message shape), apprise for the others."""

from __future__ import annotations

from typing import Any

from .notify_late import send_all
from .settings import NotifySettings

EVENT_OF = {
    ("managed", "recovered"): "recovered",
    ("managed", "gave_up"): "gave_up",
    ("queue", "started"): "queued_start",
}


def tell(notify: NotifySettings, record: dict[str, Any]) -> dict[str, Any]:
    """The record, with `notified` ({sent, failed}) when it was an event to tell."""
    event = EVENT_OF.get((str(record.get("kind")), str(record.get("outcome"))))
    if event is None or event not in notify.events or not notify.urls:
        return record
    job = record.get("job") or {}
    why = record.get("why") or ""
    host = record.get("to_host") or ",".join(record.get("hosts") or [])
    where = f" on {host}" if host else ""
    text = f"gpudeck: {job.get('name')} {event.replace('_', ' ')}{where}{f': {why}' if why else ''} — gpudeck inspect {record.get('to') or job.get('id')}"
    message = {
        "event": event,
        "job": record.get("to") or job.get("id"),
        "name": job.get("name"),
        "text": text,
        "record": record,
    }
    failed = send_all(notify.urls, message)
    return dict(record, notified={"event": event, "sent": len(notify.urls) - len(failed), "failed": failed})
