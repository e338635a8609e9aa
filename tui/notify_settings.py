"""config.toml's `[notify]`, typed: where messages go, about what, per host, and whether the TUI
shows them on the desktop. Read by tui/settings.py's reader (one place parses config.toml); the
URLs may hold tokens, so an error names a URL by its scheme only."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NoReturn, Protocol

# What a `[notify]` message may be about: the host's (a job's end, a stall), the controller's
# (recovery, the queue) and what only the user's side sees (a host that stopped answering).
NOTIFY_EVENTS = (
    "ended",
    "failed",
    "budget_stop",
    "idle_stop",
    "preempted",
    "recovered",
    "gave_up",
    "queued_start",
    "host_unreachable",
    "stalled",
    "advice",  # the seeds' troubleshooting, from evidence (remote_agent/advice/): opt-in
)
DEFAULT_NOTIFY_EVENTS = ("failed", "budget_stop", "idle_stop", "preempted", "gave_up")
MAX_URLS = 16


@dataclass(frozen=True)
class NotifyHost:
    """`[notify.hosts.NAME]`: this host's jobs and outages go to these URLs / about these events
    (None: the `[notify]` ones)."""

    urls: tuple[str, ...] | None = None
    events: tuple[str, ...] | None = None


@dataclass(frozen=True)
class NotifySettings:
    """`[notify]`: where messages go and about what. URLs a host can POST to itself (json://, ntfy://,
    Slack/Discord webhooks) leave from the job's host; any other apprise URL (form://, mailto://,
    tgram://…) is sent by the user's side when gpudeck next runs (tui/notify_late.py)."""

    urls: tuple[str, ...] = ()
    events: tuple[str, ...] = DEFAULT_NOTIFY_EVENTS
    desktop: bool = True  # the TUI shows a job's end while it is open (OSC 9/777, notify-send)
    hosts: Mapping[str, NotifyHost] = field(default_factory=dict)
    unreachable_after: float = 300.0  # a host failing this long (seconds)…
    unreachable_fails: int = 3  # …and this many times in a row is `host_unreachable`

    def urls_for(self, host: str) -> tuple[str, ...]:
        own = self.hosts.get(host)
        return own.urls if own is not None and own.urls is not None else self.urls

    def events_for(self, host: str) -> tuple[str, ...]:
        own = self.hosts.get(host)
        return own.events if own is not None and own.events is not None else self.events


class Reader(Protocol):
    def known(self, t: dict[str, Any], table: str, fields: tuple[str, ...]) -> None: ...
    def fail(self, table: str, key: str, problem: str, header: str | None = None) -> NoReturn: ...
    def boolean(self, t: dict[str, Any], table: str, key: str) -> bool | None: ...
    def positive(self, t: dict[str, Any], table: str, key: str) -> float | None: ...


def read_notify(r: Reader, t: dict[str, Any]) -> NotifySettings:
    r.known(t, "notify", ("urls", "events", "desktop", "hosts", "unreachable_after", "unreachable_fails"))
    hosts = t.get("hosts", {})
    if not isinstance(hosts, dict) or not all(isinstance(v, dict) for v in hosts.values()):
        r.fail("notify", "hosts", "expected tables such as [notify.hosts.gpu1]")
    fails = t.get("unreachable_fails", 3)
    if not isinstance(fails, int) or isinstance(fails, bool) or not 1 <= fails <= 1000:
        r.fail("notify", "unreachable_fails", f"expected a whole number from 1 to 1000, got {fails!r}")
    after = t.get("unreachable_after", 300.0)
    if not isinstance(after, (int, float)) or isinstance(after, bool) or not 0 <= after < 1e9:
        r.fail("notify", "unreachable_after", f"expected seconds >= 0, got {after!r}")
    desktop = r.boolean(t, "notify", "desktop")
    return NotifySettings(
        urls=_urls(r, t, "notify") if "urls" in t else (),
        events=_events(r, t, "notify") if "events" in t else DEFAULT_NOTIFY_EVENTS,
        desktop=True if desktop is None else desktop,
        hosts=MappingProxyType({name: _host(r, name, own) for name, own in hosts.items()}),
        unreachable_after=float(after),
        unreachable_fails=fails,
    )


def _host(r: Reader, name: str, t: dict[str, Any]) -> NotifyHost:
    table = f"notify.hosts.{name}"
    r.known(t, table, ("urls", "events"))
    return NotifyHost(
        urls=_urls(r, t, table) if "urls" in t else None,
        events=_events(r, t, table) if "events" in t else None,
    )


def _urls(r: Reader, t: dict[str, Any], table: str) -> tuple[str, ...]:
    urls = t["urls"]
    if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls) or len(urls) > MAX_URLS:
        r.fail(table, "urls", f"expected a list of up to {MAX_URLS} URLs")
    for url in urls:
        problem = url_problem(url)
        if problem:
            r.fail(table, "urls", problem)
    return tuple(urls)


def _events(r: Reader, t: dict[str, Any], table: str) -> tuple[str, ...]:
    events = t["events"]
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        r.fail(table, "events", f"expected a list of {', '.join(NOTIFY_EVENTS)}")
    bad = [e for e in events if e not in NOTIFY_EVENTS]
    if bad:
        r.fail(table, "events", f"unknown event {bad[0]!r} (known: {', '.join(NOTIFY_EVENTS)})")
    return tuple(events)


def url_problem(url: str) -> str | None:
    """Why this URL cannot be a target, in words that name only its scheme (it may hold a token)."""
    from remote_agent.notify.send import kind_of

    if kind_of(url) is not None:
        return None
    scheme = url.split(":", 1)[0] if "://" in url else ""
    if scheme and _apprise_knows(scheme):
        return None
    return f"a {scheme or 'schemeless'}: URL is not supported (a host's json://, ntfy://, Slack or Discord webhook, or an apprise URL)"


def _apprise_knows(scheme: str) -> bool:
    """apprise's own list of schemes, loaded only when a URL is not one a host sends. Loading every
    apprise plugin costs ~0.35 s CPU, on every command that reads config.toml: the list is kept per
    apprise version in the data dir (derived state: rebuilt when missing or unreadable)."""
    from importlib.metadata import PackageNotFoundError, version

    from . import paths

    try:
        cache = paths.data_dir() / f"apprise-schemes-{version('apprise')}.txt"
    except PackageNotFoundError:
        return False
    try:
        return scheme.lower() in cache.read_text().split()
    except OSError:
        pass
    from apprise.manager_plugins import NotificationManager

    schemes = sorted(str(s) for s in NotificationManager().schemas())
    try:
        cache.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text("\n".join(schemes) + "\n")
        os.replace(tmp, cache)
    except OSError:
        pass  # read-only data dir: loaded again next time
    return scheme.lower() in schemes
