"""Which targets hear of a job on a host, and about what: `[notify]`, narrowed by
`[notify.hosts.NAME]`, and by `run --notify EVENT,…` for one job. What the host sends goes into the
node's spec (`notify`: its own URLs and the events); the rest is the user's side's (notify_late.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from remote_agent.notify.events import HOST_EVENTS
from remote_agent.notify.send import kind_of

from .errors import EXIT_USAGE, GpudeckError
from .notify_settings import NOTIFY_EVENTS, NotifySettings

if TYPE_CHECKING:
    from remote_agent.spec import Notify


def parse_notify(text: str | None) -> tuple[str, ...] | None:
    """`run --notify failed,stalled` as the events asked for this job (None: the config's)."""
    if text is None:
        return None
    events = tuple(e.strip() for e in text.split(",") if e.strip())
    bad = [e for e in events if e not in NOTIFY_EVENTS]
    if bad or not events:
        raise GpudeckError(
            f"--notify {bad[0] if bad else text!r}: unknown event (known: {', '.join(NOTIFY_EVENTS)})",
            EXIT_USAGE,
        )
    return events


def host_urls(urls: tuple[str, ...]) -> tuple[str, ...]:
    """The URLs a host POSTs to itself (json://, ntfy://, Slack/Discord webhooks)."""
    return tuple(u for u in urls if kind_of(u) is not None)


def late_urls(urls: tuple[str, ...]) -> tuple[str, ...]:
    """The others: apprise sends them from the user's side, when gpudeck next runs."""
    return tuple(u for u in urls if kind_of(u) is None)


def spec_notify(notify: NotifySettings, host: str, asked: tuple[str, ...] | None) -> Notify | None:
    """The node's `notify`: the host's own URLs and the end events it tells; with no host URL, the
    events alone (then only the user's side tells them). None: nobody is told of this job."""
    urls = notify.urls_for(host)
    events = tuple(e for e in (asked if asked is not None else notify.events_for(host)) if e in HOST_EVENTS)
    if not urls or not events:
        return None
    from remote_agent.spec import Notify  # here: `ps` reads late_urls and must not load the typed spec

    return Notify(urls=host_urls(urls), events=events)
