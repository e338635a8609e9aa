"""The jobs view: one row per job, running first; a failed job shows its cause."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.content import Content
from textual.reactive import reactive
from textual.widgets.data_table import ColumnKey

from ..fleet import Fleet, JobModel
from ..fleet.chain import ancestors, successors
from ..fleet.costs import JobCostShown
from ..fleet.holds import held_text
from ..fleet.states import DEGRADED, STATE_ORDER, degraded_why
from ..fleet.values import finite
from ..format import duration, money, number
from .gauges import level_style, trend
from .queued_rows import matches_queued, queued_cells, queued_id, queued_key
from .steady_table import SteadyTable
from .table_fit import fit_columns
from .wide import is_wide

# (key, label, width): fixed widths, because DataTable cannot measure styled Content cells, and
# because a table whose columns jump as values change is hard to scan.
COLUMNS = (
    ("name", "name", 22),
    ("hosts", "host(s)", 10),
    ("state", "state", 8),
    ("runtime", "runtime", 8),
    ("step", "step", 11),
    ("loss", "loss", 9),
    ("rate", "samples/s", 9),
    ("gpu", "GPU", 4),
    ("cost", "cost", 9),
    ("info", "info", 36),
)
SCROLLBAR = 2  # the vertical scrollbar's cells, when the rows overflow
# The wide layout's extra columns (widgets/wide.py), each placed after the column named first.
WIDE_EXTRA = (
    ("loss", ("trend", "loss trend", 24)),
    ("rate", ("tokens", "tokens/s", 9)),
    ("cost", ("burn", "burn/h", 8)),
    ("cost", ("eta", "ETA", 8)),
)
WIDE_KEYS = frozenset(column[0] for _, column in WIDE_EXTRA)
ID_COLUMN = ("id", "id", 6)  # shown only while two visible jobs share a name: the id's last 6 characters
STATE_STYLE = {
    "running": "$success",
    "starting": "$secondary",
    "pending": "$secondary",  # a Slurm job waiting for its allocation
    "exited": "$text-muted",
    "failed": "$error",
    "stopped": "$warning",
    "killed": "$warning",
    "lost": "$error",
    "degraded": "$error",
    "unreachable": "$error",
}


def _step(job: JobModel) -> str:
    if job.step is None:
        return "—"
    step = f"{job.step:.0f}"
    return f"{step}/{job.total_steps:.0f}" if job.total_steps else step


def _info(job: JobModel, missing: list[tuple[str, str, str]], eta: bool = True) -> Content:
    if missing:
        return Content.styled(degraded_why(missing), "$error")
    if job.ended and job.gpus_held:  # a GPU left held by its end: said in red, before the why
        return Content.styled("! " + "; ".join(job.gpus_held), "$error")
    held = job.held_until(time.time())
    if held is not None:  # --hold-on-fail: its node is kept for debugging
        return Content.styled(f"{held_text(held)}; {job.why}", "$warning")
    if job.state == "failed":
        return Content.styled(job.why, "$error")
    if job.state == "lost":
        return Content.styled("supervisor gone: journal ends here", "$error")
    if job.state == "pending" and job.why:  # a Slurm job: why it waits (Resources, Priority…)
        return Content.styled(job.why, "$text-muted")
    if job.state in ("stopped", "killed") and (job.why or job.signal):
        return Content.styled(job.why or job.signal or "", "$text-muted")
    if eta and job.active and job.eta_seconds is not None:
        return Content(f"ETA {duration(job.eta_seconds)}")
    return Content("")


BUDGET_STYLE = {"warning": "$warning", "over": "bold $error"}


def _cost(cost: JobCostShown | None, currency: str, caught_up: bool = True) -> Content:
    """Accrued so far; "—" until known (no price, or its journal not read from the start); "…"
    while its journal is still being read (a part would show too little)."""
    if not caught_up and (cost is None or cost.accrued is not None):
        return Content.styled("…", "$text-muted")
    if cost is None or cost.accrued is None:
        return Content.styled("—", "$cost")
    return Content.styled(money(cost.accrued, currency), BUDGET_STYLE.get(cost.budget_status or "", "$cost"))


def _name(job: JobModel) -> Content:
    """The job's name (user text: never markup); a watched run gpudeck did not start says so."""
    name = Content.styled(job.name or job.id, "bold")
    return name + Content.styled(" watch", "$text-muted italic") if job.watch is not None else name


def hosts_label(job: JobModel, width: int = 10) -> str:
    """`gpu-a` for one node; `gpu-a ×3` for several (its first host, shortened so `×N` always
    shows: a column that cut `gpu-a,gpu-` hid how many nodes there are)."""
    first = job.hosts[0] if job.hosts else "—"
    if len(job.nodes) <= 1:
        return ",".join(job.hosts) or "—"
    count = f" ×{len(job.nodes)}"
    room = width - len(count)
    return (first if len(first) <= room else first[: max(1, room - 1)] + "…") + count


def job_row(job: JobModel, fleet: Fleet, now: float, eta_in_info: bool = True) -> list[str | Content]:
    host = fleet.hosts.get(job.hosts[0]) if job.hosts else None
    host_now = now + (host.clock_offset if host else 0.0)
    gpu = job.gpu_util_now
    missing = fleet.unreachable_nodes(job)
    state = DEGRADED if missing else job.state
    return [
        _name(job),
        Content(hosts_label(job)),  # user text: never markup
        Content.styled(state, STATE_STYLE.get(state, "")),
        duration(job.runtime(host_now)),
        _step(job),
        number(job.last.get("loss")) if "loss" in job.last else "—",
        number(job.samples_per_sec) if job.samples_per_sec is not None else "—",
        Content.styled(f"{gpu:.0f}%", level_style(gpu)) if gpu is not None else "—",
        _cost(fleet.costs.jobs.get(job.id), fleet.costs.currency, job.caught_up or job.active),
        _info(job, missing, eta_in_info),
    ]


def wide_cells(job: JobModel, fleet: Fleet, trend_width: int) -> dict[str, str | Content]:
    """The wide layout's extra cells. The loss trend is the whole run downsampled to the column
    (cached by the series until its next point); an ended job's summary has no series: "—"."""
    loss = job.series.get("loss")
    cost = fleet.costs.jobs.get(job.id)
    return {
        "trend": trend(
            [y for _, y in loss.downsample(trend_width)] if loss else [], trend_width, "$spark-loss"
        ),
        "tokens": number(job.tokens_per_sec) if job.tokens_per_sec is not None else "—",
        "burn": Content.styled(money(cost.burn, fleet.costs.currency), "$cost")
        if job.active and cost is not None and cost.burn is not None
        else "—",
        "eta": duration(job.eta_seconds) if job.active and job.eta_seconds is not None else "—",
    }


def with_wide(columns: tuple[tuple[str, str, int], ...]) -> tuple[tuple[str, str, int], ...]:
    """`columns` with the wide layout's extras, each next to its kin (fit_columns may drop them)."""
    out = list(columns)
    for after, column in WIDE_EXTRA:
        at = next(i for i, c in enumerate(out) if c[0] == after) + 1
        while at < len(out) and any(out[at] == c for _, c in WIDE_EXTRA):
            at += 1  # two extras after one column keep their listed order
        out.insert(at, column)
    return tuple(out)


def same(a: str | Content, b: str | Content) -> bool:
    """Cells that draw alike. Content's == compares the text only: a cost turning red over budget
    keeps its text, and must still be redrawn."""
    if isinstance(a, Content) and isinstance(b, Content):
        return a.plain == b.plain and a.spans == b.spans
    return type(a) is type(b) and a == b


def row_key(job: JobModel, fleet: Fleet) -> tuple[object, ...] | None:
    """What an ended job's row depends on (None for a live job: its runtime ticks with the clock)."""
    if job.active:
        return None
    return job.version, fleet.costs.jobs.get(job.id), fleet.costs.currency


# What `o` cycles through: (name, key of a job; None sorts last). "default": running first, newest first.
SORTS: tuple[tuple[str, Callable[[JobModel, Fleet], Any] | None, bool], ...] = (
    ("default", None, False),
    ("name", lambda j, f: (j.name or j.id).lower(), False),
    ("host", lambda j, f: ",".join(j.hosts), False),
    ("state", lambda j, f: STATE_ORDER.index(j.state) if j.state in STATE_ORDER else len(STATE_ORDER), False),
    ("runtime", lambda j, f: j.runtime(time.time()), True),
    ("loss", lambda j, f: finite(j.last.get("loss")), False),
    ("cost", lambda j, f: c.accrued if (c := f.costs.jobs.get(j.id)) else None, True),
)


def names_clash(jobs: list[JobModel]) -> bool:
    names = [j.name for j in jobs if j.name]
    return len(set(names)) < len(names)


def matches(job: JobModel, text: str) -> bool:
    """The `/` filter: a substring of the name, id, a host or the state (case-insensitive)."""
    text = text.strip().lower()
    return not text or any(text in s.lower() for s in (job.name or "", job.id, job.state, *job.hosts))


def arrange(
    fleet: Fleet, text: str, sort: str, ended: bool = True, fold: bool = False, reverse: bool = False
) -> list[JobModel]:
    """The rows: those matching the filter (without the ended ones unless `ended`), sorted (`reverse`:
    the other way, `O`; jobs without the value stay last); with `fold`, a job resized into another
    (restart mode) is hidden while its successor is a row."""
    jobs = [j for j in fleet.jobs_sorted() if matches(j, text) and (ended or not j.ended)]
    if fold:
        listed, after = {j.id for j in jobs}, successors(fleet.jobs)
        jobs = [j for j in jobs if after.get(j.id) not in listed]
    _, key, descending = next((s for s in SORTS if s[0] == sort), SORTS[0])
    if key is None:
        return jobs[::-1] if reverse else jobs
    valued = [(key(j, fleet), j) for j in jobs]
    known = sorted((v for v in valued if v[0] is not None), key=lambda v: v[0], reverse=descending != reverse)
    return [j for _, j in known] + [j for v, j in valued if v is None]


class JobsTable(SteadyTable[str | Content]):
    BINDINGS = [
        # The deck's `open_job` id: one remap moves both. Shown, so the Footer says what enter does.
        Binding("enter", "select_cursor", "Open", id="open_job"),
        Binding("j", "cursor_down", "Down", id="vim_down", show=False),
        Binding("k", "cursor_up", "Up", id="vim_up", show=False),
        Binding("g", "scroll_top", "First", id="vim_top", show=False),
        Binding("G", "scroll_bottom", "Last", id="vim_bottom", show=False),
    ]

    filter_text: reactive[str] = reactive("", init=False)
    sort_by: reactive[str] = reactive("default", init=False)  # not `sort`: that is DataTable.sort()
    sort_reverse: reactive[bool] = reactive(False, init=False)  # `O`: the sort the other way
    show_ended: reactive[bool] = reactive(True, init=False)  # `a` hides the ended jobs
    fold: reactive[bool] = reactive(True, init=False)  # a resize chain is one row (`a` unfolds it)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._fleet: Fleet | None = None
        self._order: list[str] = []
        self._rows: dict[str, list[str | Content]] = {}  # what each row shows: update only changes
        self._keys: dict[str, tuple[object, ...]] = {}  # row_key of each row drawn: skip unchanged jobs
        self._want: str | None = None  # a job to select as soon as it appears (one just launched)
        self._columns: tuple[tuple[str, str, int], ...] = COLUMNS  # with ID_COLUMN while names clash

    def select_when_shown(self, job_id: str) -> None:
        self._want = job_id

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        for key, label, width in self._columns:
            self.add_column(self._label(key, label), key=key, width=width)

    def _label(self, key: str, label: str) -> Text:
        """A column's header; the sorted one carries its direction."""
        if key == self.sort_by or (key == "hosts" and self.sort_by == "host"):
            label += " ↓" if next(d for n, _, d in SORTS if n == self.sort_by) != self.sort_reverse else " ↑"
        return Text(label)

    @property
    def selected_id(self) -> str | None:
        if not self._order or not 0 <= self.cursor_row < len(self._order):
            return None
        return self._order[self.cursor_row]

    def cycle_sort(self) -> str:
        names = [name for name, _, _ in SORTS]
        self.sort_by = (
            names[(names.index(self.sort_by) + 1) % len(names)] if self.sort_by in names else names[0]
        )
        return self.sort_by

    def watch_filter_text(self) -> None:
        self._redraw()

    def watch_show_ended(self) -> None:
        self._redraw()

    def watch_fold(self) -> None:
        self._redraw()

    def watch_sort_reverse(self) -> None:
        self.watch_sort_by()

    def watch_sort_by(self) -> None:
        for key, label, _ in self._columns:
            self.columns[ColumnKey(key)].label = self._label(key, label)
        self.redraw_all()
        self._redraw()

    def _redraw(self) -> None:
        if self._fleet is not None:
            self.show(self._fleet, time.time())

    @property
    def shown_ids(self) -> list[str]:
        return list(self._order)

    def show(self, fleet: Fleet, now: float) -> None:
        self._fleet = fleet
        jobs = arrange(fleet, self.filter_text, self.sort_by, self.show_ended, self.fold, self.sort_reverse)
        waiting = [e for e in fleet.queued if matches_queued(e, self.filter_text)]
        order = [queued_key(e) for e in waiting] + [j.id for j in jobs]
        columns: tuple[tuple[str, str, int], ...] = (
            (COLUMNS[0], ID_COLUMN, *COLUMNS[1:]) if names_clash(jobs) else COLUMNS
        )
        if is_wide(self.app.size):
            columns = with_wide(columns)
        columns = fit_columns(columns, (self.size.width or self.app.size.width) - SCROLLBAR)
        if order != self._order or columns != self._columns:
            keep = self.selected_id
            self.clear(columns=columns != self._columns)
            if columns != self._columns:
                self._columns = columns
                self._add_columns()
            self._rows = {queued_key(e): self._queued_row(e, now) for e in waiting}
            self._rows.update({j.id: self._row(j, fleet, now) for j in jobs})
            self._keys = {j.id: k for j in jobs if (k := row_key(j, fleet)) is not None}
            for key, row in self._rows.items():  # the queue first, in its order, then the jobs
                self.add_row(*row, key=key)
            self._order = order
            keep = self._want if self._want in order else keep
            if keep in order:
                self.move_cursor(row=order.index(keep), animate=False)
            if self._want in order:
                self._want = None
            return
        for entry in waiting:
            self._update(queued_key(entry), self._queued_row(entry, now))
        for job in jobs:
            drawn = row_key(job, fleet)
            if drawn is not None and self._keys.get(job.id) == drawn:
                continue  # an ended job that did not change: nothing to compute
            self._update(job.id, self._row(job, fleet, now))
            if drawn is not None:
                self._keys[job.id] = drawn

    def _update(self, key: str, row: list[str | Content]) -> None:
        """Only the cells that changed."""
        old = self._rows.get(key)
        for i, ((column, _, _), value) in enumerate(zip(self._columns, row, strict=True)):
            if old is None or not same(old[i], value):
                self.update_cell(key, column, value)
        self._rows[key] = row

    def _queued_row(self, entry: dict[str, Any], now: float) -> list[str | Content]:
        cells = queued_cells(entry, now)
        return [cells.get(key, "") for key, _, _ in self._columns]

    @property
    def selected_queued(self) -> str | None:
        """The id of the queued job under the cursor; None on a job's row."""
        return queued_id(self.selected_id)

    def _row(self, job: JobModel, fleet: Fleet, now: float) -> list[str | Content]:
        shown = {key: width for key, _, width in self._columns}
        cells = dict(
            zip((key for key, _, _ in COLUMNS), job_row(job, fleet, now, "eta" not in shown), strict=True)
        )
        if "id" in shown:
            cells["id"] = Content.styled(job.id[-6:], "$text-muted")
        resizes = len(ancestors(fleet.jobs, job)) if self.fold and job.resized_from else 0
        if resizes:  # the rows folded into this one: its restart-mode resizes
            cells["name"] = Content.assemble(cells["name"], (f" ↻{resizes}", "$text-muted"))
        if WIDE_KEYS & shown.keys():  # the wide layout only: nothing computed otherwise
            cells.update(wide_cells(job, fleet, shown.get("trend", 0)))
        return [cells[key] for key, _, _ in self._columns]  # the columns that fit the width

    def on_resize(self) -> None:
        self._redraw()
