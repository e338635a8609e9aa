"""The Cloud tab: every GPU instance of the user's accounts with its GPU use and price, idle ones
highlighted with their waste, how stale the data is, and one line per provider/region that failed.

It draws what the CloudInstances service holds and asks for actions with messages; it never talks
to a provider. Names and errors come from the providers: they reach the screen as Content, never
as markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Static

from ..cloud.totals import per_currency, total_text
from ..format import duration, money
from ..printable import printable
from .gauges import bar

if TYPE_CHECKING:
    from ..cloud.fleet import InstanceView, Snapshot

COLUMNS = (
    ("name", "name", 18),
    ("where", "provider region", 20),
    ("type", "type", 21),
    ("gpus", "GPUs", 7),
    ("state", "state", 9),
    ("market", "market", 9),
    ("util", "GPU now", 15),
    ("avg", "1 h", 5),
    ("price", "$/h", 12),
    ("source", "price by", 8),
    ("accrued", "accrued", 11),
    ("host", "host", 10),
    ("idle", "idle for · waste", 24),
)
UTIL_BAR = 9
STATE_STYLE = {
    "running": "$success",
    "pending": "$secondary",
    "stopping": "$warning",
    "stopped": "$text-muted",
}
NO_METRIC_CELL = "no GPU metric"  # never 0 %: the detail line says why (monitoring agent missing?)


@dataclass(frozen=True)
class Status:
    """What the service knows beside the snapshot, for the status line."""

    now: float
    interval: float
    refreshing: bool
    failure: str | None
    busy: frozenset[str]
    currency: str = "USD"  # [cost] currency: where rates are set, totals are shown in it
    fx: Mapping[str, float] = field(default_factory=dict)  # [cost] fx: 1 unit of KEY = VALUE of currency


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.0f}%"


def _util(v: InstanceView) -> Content:
    if not v.has_metric and v.instance.state != "running":
        return Content.styled("—", "$text-muted")  # not running: no metric is expected
    if not v.has_metric:
        return Content.styled(NO_METRIC_CELL, "$text-muted")
    return Content.assemble(bar(v.util.now, UTIL_BAR), f" {_pct(v.util.now):>4}")


def price_by(source: str) -> str:
    """The price's source in a word (the line below the table has it in full): the provider's own
    API (spot history, DescribePrice), the shipped catalog, or unknown."""
    if source.startswith("catalog"):
        return "catalog"
    if source.startswith("unknown"):
        return "unknown"
    return "spot" if "spot" in source.lower() and "history" in source.lower() else "provider"


def _idle(v: InstanceView, now: float) -> Content:
    if not v.util.idle:
        return Content("")
    since = duration(now - v.util.idle_since) if v.util.idle_since is not None else "?"
    waste = money(v.waste_per_hour, v.price.currency, "/h", unknown="price unknown")
    return Content.styled(f"{since} · {waste}", "bold $cloud-waste")


def usage_text(v: InstanceView, now: float) -> str:
    """What the GPUs do, for a stop question: a busy instance must not be stopped by mistake."""
    if not v.has_metric:
        return f"GPU: {v.util_source}"
    text = f"GPU now {_pct(v.util.now)}, 1 h average {_pct(v.util.avg_1h)} (the busiest GPU)"
    if v.util.idle and v.util.idle_since is not None:
        text += f", idle for {duration(now - v.util.idle_since)}"
    return text


def instance_row(v: InstanceView, now: float, busy: bool = False) -> list[Content | str]:
    i = v.instance
    idle = v.util.idle and i.state == "running"
    name_style = "bold $cloud-waste" if idle else "bold"
    gpus = f"{i.gpus if i.gpus is not None else '?'}×{(i.gpu_model or '?').replace('NVIDIA ', '')}"
    state = f"{i.state}…" if busy else i.state
    return [
        Content.styled(printable(i.name or i.id), name_style),  # a tag's text: never markup, never ESC
        Content(f"{i.provider} {i.zone or i.region}"),
        Content(i.type),
        Content(gpus),
        Content.styled(state, STATE_STYLE.get(i.state, "")),
        i.lifecycle,
        _util(v),
        _pct(v.util.avg_1h),
        Content.styled(money(v.price.per_hour, v.price.currency, "/h", unknown="unknown"), "$cost"),
        Content.styled(price_by(v.price.source), "$text-muted"),
        # since its last start, while it runs (a stopped instance's compute bills nothing)
        Content.styled(
            money(v.accrued if i.state == "running" else None, v.price.currency, unknown="—"), "$cost"
        ),
        Content(v.host or "—"),
        _idle(v, now),
    ]


def status_line(snap: Snapshot | None, status: Status) -> Content:
    if snap is None:
        return Content.styled(
            "looking at your cloud accounts…" if status.refreshing else "not looked yet", "$text-muted"
        )
    age = duration(max(0.0, status.now - snap.taken_at))
    idle = snap.idle()
    # one total per currency (or converted by the user's rates): never CNY and USD added as one
    waste = total_text(
        per_currency((v.waste_per_hour, v.price.currency) for v in idle), status.fx, status.currency, "/h"
    )
    parts = [
        f"updated {age} ago"
        + (" (refreshing…)" if status.refreshing else f", every {duration(status.interval)}"),
        f"{len(snap.views)} instance{'s' * (len(snap.views) != 1)}",
    ]
    head = Content("  ·  ".join(parts))
    if not idle:
        return head
    return Content.assemble(
        head,
        "  ·  ",
        Content.styled(f"{len(idle)} idle, wasting {waste}", "bold $cloud-waste"),
    )


class CloudView(Vertical):
    BINDINGS = [
        Binding(
            "s",
            "act('stop')",
            "Stop instance",
            id="cloud_stop",
            tooltip="stop the selected cloud instance (asks first)",
        ),
        Binding(
            "S",
            "act('start')",
            "Start instance",
            id="cloud_start",
            tooltip="start the selected stopped instance",
        ),
        Binding(
            "l",
            "launch",
            "Launch",
            id="cloud_launch",
            tooltip="launch a GPU instance that becomes a gpudeck host",
        ),
        Binding("r", "refresh", "Refresh", id="cloud_refresh", tooltip="look at the providers again now"),
    ]

    class Act(Message):
        """The user asked to stop or start an instance (the screen confirms and calls the service)."""

        def __init__(self, verb: str, view: InstanceView) -> None:
            super().__init__()
            self.verb, self.view = verb, view

    class LaunchAsked(Message):
        pass

    class RefreshAsked(Message):
        pass

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._snap: Snapshot | None = None
        self._views: dict[str, InstanceView] = {}
        self._drawn: tuple[object, frozenset[str]] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="cloud-status")
        yield Static(id="cloud-errors")
        table: DataTable[Content | str] = DataTable(id="cloud-table", cursor_type="row", zebra_stripes=True)
        for key, label, width in COLUMNS:
            table.add_column(label, key=key, width=width)
        yield table
        yield Static(id="cloud-detail")

    @property
    def selected(self) -> InstanceView | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self._views.get(str(key)) if key is not None else None

    def show(self, snap: Snapshot | None, status: Status) -> None:
        self.query_one("#cloud-status", Static).update(status_line(snap, status))
        lines = ([status.failure] if status.failure else []) + (snap.errors if snap else [])
        errors = self.query_one("#cloud-errors", Static)
        errors.update(
            Content("\n".join(printable(line) for line in lines))
        )  # the providers' words: never markup
        errors.display = bool(lines)
        if snap is not None and (snap, status.busy) != self._drawn:
            self._drawn = (snap, status.busy)
            self._rows(snap, status)
        self._detail()

    def _rows(self, snap: Snapshot, status: Status) -> None:
        table = self.query_one(DataTable)
        keep = self.selected.instance.id if self.selected else None
        self._views = {v.instance.id: v for v in snap.views}
        table.clear()
        for v in snap.views:
            table.add_row(*instance_row(v, snap.taken_at, v.instance.id in status.busy), key=v.instance.id)
        if keep in self._views:
            table.move_cursor(row=table.get_row_index(keep))
        if not snap.views:
            self.query_one("#cloud-detail", Static).update(
                Content("no GPU instance in the configured regions")
            )

    def _detail(self) -> None:
        v = self.selected
        if v is None:
            return
        i = v.instance
        self.query_one("#cloud-detail", Static).update(
            Content(
                f"{i.id} · {i.address or 'no address'} · price: {v.price.source} · GPU: {v.util_source}"
                + ("" if i.opted_in else " · not opted in (no gpudeck-managed tag): rules never stop it")
            )
        )

    def on_data_table_row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        self._detail()

    def action_act(self, verb: str) -> None:
        v = self.selected
        if v is not None:
            self.post_message(self.Act(verb, v))

    def action_launch(self) -> None:
        self.post_message(self.LaunchAsked())

    def action_refresh(self) -> None:
        self.post_message(self.RefreshAsked())
