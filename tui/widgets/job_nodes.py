"""The job view's node list, shown for a multi-node job: one row per node with its host, state (and
why, once ended), pid, heartbeat age, the GPUs of its host and, once two nodes have one, its step
rate over the straggler window; a straggler's row says so in its why (issue 34). Host names and
the agent's words are user text: Content, never markup."""

from __future__ import annotations

from textual.content import Content

from ..fleet import Fleet, JobModel, NodeModel
from ..fleet.pace import JobPace, job_pace
from ..fleet.states import why
from ..format import duration, step_rate
from .gauges import level_style
from .jobs_table import STATE_STYLE
from .steady_static import SteadyStatic

MAX_ROWS = 8  # more nodes than this: the first ones and a count, so the charts keep their room
# (title, width); the last column takes what is left
COLUMNS = (("node", 6), ("host", 16), ("state", 12), ("pid", 9), ("heartbeat", 11), ("GPUs", 14), ("why", 0))
RATE = ("rate", 10)  # steps/s, before `why`, shown once two nodes have a rate


def _node_key(n: NodeModel) -> tuple[int, int, str]:
    return (0, int(n.node), "") if n.node.isdigit() else (1, 0, n.node)


def host_gpus(job: JobModel, host: str) -> tuple[int, float | None]:
    """How many of the job's GPUs live on `host`, and their mean utilization at the latest sample."""
    keys = [k for k, h in job.gpu_host.items() if h == host]
    utils = [u for k in keys if (u := job.gpu_latest[k].util) is not None]
    return len(keys), (sum(utils) / len(utils) if utils else None)


def _cell(value: Content | str, width: int) -> Content:
    """A column of `width` cells (one of them a gap); width 0: as it is."""
    c = value if isinstance(value, Content) else Content(value)
    return c.truncate(width - 1, ellipsis=True, pad=True).pad_right(1) if width else c


def node_row(job: JobModel, n: NodeModel, fleet: Fleet, now: float, pace: JobPace | None = None) -> Content:
    host = fleet.hosts.get(n.host)
    host_now = now + (host.clock_offset if host else 0.0)
    beat = "—" if n.last_heartbeat is None else f"{duration(max(0.0, host_now - n.last_heartbeat))} ago"
    count, util = host_gpus(job, n.where)  # a Slurm node's own compute node, not the login node
    gpus: Content | str = "—"
    if count:
        gpus = Content.assemble(f"{count} ", (f"{util:.0f}%", level_style(util)) if util is not None else "—")
    # a running node on an unreachable host: what it does now is unknown (the job is degraded)
    state = "unreachable" if job.active and host is not None and host.status == "unreachable" else n.state
    slow = next((g for g in pace.stragglers if g.node == n.node), None) if pace else None
    said = why(n.state, n.cause, n.exit_code, n.signal, n.reason)[:200]
    cells: list[Content | str] = [
        Content.styled(n.node, "bold"),
        Content(n.where),
        Content.styled(state, STATE_STYLE.get(state, "")),
        str(n.pid) if n.pid is not None else "—",
        beat,
        gpus,
        Content.styled(f"straggler: {slow.why}", "bold $warning")
        if slow
        else Content.styled(said, "$error" if n.state in ("failed", "lost") else "$text-muted"),
    ]
    columns = _columns(pace)
    if len(columns) > len(COLUMNS):
        mark = "$warning" if slow else ""
        cells.insert(
            -1, Content.styled(step_rate(pace.rates.get(n.node, (None, None))[0]) if pace else "—", mark)
        )
    return Content("").join(_cell(c, w) for c, (_, w) in zip(cells, columns, strict=True))


def _columns(pace: JobPace | None) -> tuple[tuple[str, int], ...]:
    """The rate column once two nodes have a rate, a comparison (a torchrun job where only rank 0
    prints steps, or a job that prints none, keeps its room: the GPUs column compares those)."""
    if pace is None or sum(rate is not None for rate, _ in pace.rates.values()) < 2:
        return COLUMNS
    return (*COLUMNS[:-1], RATE, COLUMNS[-1])


def render_nodes(job: JobModel, fleet: Fleet, now: float) -> Content:
    pace = job_pace(job, fleet.hosts, now)
    header = Content("").join(_cell(Content.styled(title, "$text-muted"), w) for title, w in _columns(pace))
    nodes = sorted(job.nodes.values(), key=_node_key)
    rows = [node_row(job, n, fleet, now, pace) for n in nodes[:MAX_ROWS]]
    if len(nodes) > MAX_ROWS:
        rows.append(Content.styled(f"… {len(nodes) - MAX_ROWS} more nodes", "$text-muted"))
    return Content("\n").join([header, *rows])


class JobNodes(SteadyStatic):
    """Shown only for a job of more than one node (a one-node job's view has no list)."""

    def show(self, job: JobModel, fleet: Fleet, now: float) -> None:
        self.display = len(job.nodes) > 1
        if self.display:
            self.show_content(render_nodes(job, fleet, now))
