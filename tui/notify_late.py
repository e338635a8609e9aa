"""The user's side's share of `[notify]`, done whenever gpudeck lists jobs (the CLI's `ps`, the
controller, the TUI): the apprise targets a host cannot POST to itself (form://, mailto://, tgram://,
matrix://…) are told of the ends and stalls that the jobs' hosts already told their own targets,
once per event per target (notify_ledger.py) and marked late; and `host_unreachable` (only this side
sees it) goes to every target, once per outage, with a message when the host answers again.

Nothing here raises into the command that listed the jobs, and nothing says a URL: what fails is
said in one line naming the target's scheme only."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from remote_agent.notify.events import event_of, summary
from remote_agent.notify.send import deliver, kind_of

from .notify_settings import NotifySettings
from .notify_targets import late_urls
from .printable import warn

if TYPE_CHECKING:
    from .notify_ledger import Ledger


class ListedJob(Protocol):
    id: str
    name: str
    nodes: list[dict[str, Any]]

    @property
    def ended(self) -> bool: ...
    @property
    def stalled(self) -> str | None: ...
    @property
    def ending_node(self) -> dict[str, Any]: ...


def owes(notify: NotifySettings) -> bool:
    """Whether the user's side has anything to tell: a target it sends, or outages to watch."""
    urls = (*notify.urls, *(u for h in notify.hosts.values() for u in h.urls or ()))
    return bool(late_urls(urls)) or (bool(urls) and "host_unreachable" in (
        *notify.events, *(e for h in notify.hosts.values() for e in h.events or ())))  # fmt: skip


def after_listing(
    notify: NotifySettings,
    jobs: Iterable[ListedJob],
    answered: Mapping[str, bool],
    say: Callable[[str], None] = warn,
) -> None:
    """Tell what this listing shows that the user's side owes; never raises. `say`: where a
    failure's one line goes (stderr; the TUI's notifications)."""
    if not owes(notify):
        return
    from .notify_ledger import Ledger  # here: a `ps` with nothing owed opens no state.db

    try:
        ledger = Ledger()
    except Exception as exc:  # derived state: a locked or unwritable store must not fail the command
        say(f"gpudeck: notify: cannot open its ledger: {exc}")
        return
    try:
        now = time.time()
        for job in jobs:
            tell_job(notify, ledger, job, now, say)
        for host, ok in answered.items():
            tell_host(notify, ledger, host, ok, now, say)
    except Exception as exc:  # noqa: BLE001 - a message must never fail the listing
        say(f"gpudeck: notify: {type(exc).__name__}: {exc}")
    finally:
        ledger.close()


def remember(urls: Iterable[str]) -> None:
    """A job is launched for these apprise targets: they count from now (if not already)."""
    urls = list(urls)
    if not urls:
        return
    from .notify_ledger import Ledger

    try:
        ledger = Ledger()
        try:
            for url in urls:
                ledger.since(url)
        finally:
            ledger.close()
    except Exception as exc:  # noqa: BLE001 - derived state: the launch goes on
        warn(f"gpudeck: notify: cannot write its ledger: {exc}")


def tell_job(
    notify: NotifySettings, ledger: Ledger, job: ListedJob, now: float, say: Callable[[str], None] = warn
) -> None:
    lead = job.ending_node if job.nodes else {}
    host = str(lead.get("host") or "")
    asked = lead.get("notify_events") or ()
    if job.ended:
        event, at = event_of(lead), lead.get("ended_at")
    elif job.stalled:
        event, at = "stalled", None
    else:
        return
    if event is None or event not in asked:
        return
    what = f"{event}:{job.id}"
    for url in late_urls(notify.urls_for(host)):
        # a target counts from when it was first seen: it is not sent the ends from before it was
        if isinstance(at, (int, float)) and at < ledger.since(url, now):
            continue
        if not ledger.claim(url, what):
            continue
        text = (
            summary(event, {"name": job.name, "id": job.id}, lead, host)
            if job.ended
            else f"gpudeck: {job.name} stalled on {host}: {job.stalled} — gpudeck inspect {job.id}"
        )
        late = f" (sent late, {_ago(now - at)} after it happened)" if isinstance(at, (int, float)) else ""
        message = {"event": event, "job": job.id, "name": job.name, "host": host, "text": text + late}
        _send([url], message, say)


def tell_host(
    notify: NotifySettings, ledger: Ledger, host: str, ok: bool, now: float, say: Callable[[str], None] = warn
) -> None:
    if "host_unreachable" not in notify.events_for(host) or not notify.urls_for(host):
        if ok:
            ledger.answered(host, now)
        return
    if ok:
        if ledger.answered(host, now):
            text = f"gpudeck: {host} answers again"
            _send(
                notify.urls_for(host),
                {"event": "host_unreachable", "host": host, "recovered": True, "text": text},
                say,
            )
        return
    since = ledger.failed(host, now, notify.unreachable_fails, notify.unreachable_after)
    if since is not None:
        text = f"gpudeck: {host} unreachable for {_ago(now - since)} — gpudeck hosts check {host}"
        _send(
            notify.urls_for(host),
            {"event": "host_unreachable", "host": host, "since": since, "text": text},
            say,
        )


def send_all(urls: Iterable[str], message: dict[str, Any]) -> list[str]:
    """To each target, the host's way (one POST) or apprise's; why each that failed did (no URL)."""
    failed = []
    for url in urls:
        why = deliver(url, message) if kind_of(url) is not None else _apprise(url, message)
        if why is not None:
            failed.append(f"a {url.split(':', 1)[0]}: target: {why}")
    return failed


def _send(urls: Iterable[str], message: dict[str, Any], say: Callable[[str], None]) -> None:
    for why in send_all(urls, message):
        say(f"gpudeck: notify: {message['event']} not told to {why}")


def _apprise(url: str, message: dict[str, Any]) -> str | None:
    """One apprise target; None when it went. apprise's own log is kept quiet (it may say the URL)."""
    import logging  # here: a listing with nothing to tell loads no logging

    import apprise

    log = logging.getLogger("apprise")
    log.propagate = False
    if not log.handlers:
        log.addHandler(logging.NullHandler())
    sender = apprise.Apprise()
    if not sender.add(url):
        return "apprise does not take this URL"
    title = f"gpudeck: {message.get('name') or message.get('host')} {str(message['event']).replace('_', ' ')}"
    return None if sender.notify(body=str(message["text"]), title=title) else "apprise could not send it"


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def listing_pass(
    agents: Any, notify: NotifySettings, up: list[str], down: list[str], say: Callable[[str], None] = warn
) -> None:
    """One look at the hosts `up` for what the user's side owes (the TUI's periodic pass; the CLI
    and the controller tell on the listing they make anyway); `down`: those the TUI's connections
    gave up on for now (a host still connecting is neither: it has not failed yet)."""
    from .actions.find import list_jobs

    if not owes(notify):
        return
    answered: dict[str, bool] = dict.fromkeys(down, False)
    after_listing(notify, list_jobs(agents, [], hosts=up, answered=answered), answered, say)
