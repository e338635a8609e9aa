"""One node of a job, folded from its journal: when it ran, on which GPUs, how busy, how far along.

Pure: records in, a NodeRun out. Times stay on the host's clock (the journal's `t`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from remote_agent.jobstate import TERMINAL_STATES

TERMINAL = TERMINAL_STATES
DEFAULT_IDLE_PCT = 10.0
RATE_WINDOW_S = 120.0  # steps/s from the last two minutes: recent enough to follow a slowdown


@dataclass
class NodeRun:
    job: str
    node: str
    host: str
    name: str = "?"
    start: float | None = None  # the command started (`running`), else the supervisor did
    end: float | None = None  # a terminal state's t; None while it runs
    state: str = "starting"
    reason: str | None = None  # why it stopped (user, "budget: …", "idle: …")
    gpus: set[str] = field(default_factory=set)  # uuids seen in its gpu records; empty: all of the host's
    samples: list[tuple[float, float | None]] = field(default_factory=list)  # (t, busiest GPU's util)
    # (t, step) of the last RATE_WINDOW_S (and the one before): all steps_per_second reads. Bounded, so a
    # job printing 500 steps a second for a day holds minutes of them, not the day (issue 36).
    steps: deque[tuple[float, float]] = field(default_factory=deque)
    step_count: int = 0  # steps seen in all
    total_steps: float | None = None
    last_t: float | None = None
    idle_pct: float = DEFAULT_IDLE_PCT
    budget: float | None = None
    units: float | None = None  # a Slurm node's GPUs (billed per GPU-hour); None: a share of its host
    billed_s: float | None = None  # an ended Slurm node: the allocation's Elapsed as accounting has it
    events: list[dict[str, Any]] = field(default_factory=list)  # cost-relevant events, for the ledger
    fed: bool = False  # journal records were applied (from seq 1)
    summarised: bool = False  # its figures came from the agent's `cost_summary`: records change nothing

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.host, self.job, self.node)

    @property
    def live(self) -> bool:
        return self.end is None

    def until(self, host_now: float) -> float | None:
        """The end of its billed time: its end, now while it runs, its last record when lost."""
        if self.start is None:
            return None
        if self.end is not None:
            # Slurm's own Elapsed where accounting answers (what the cluster charges), else the journal's
            return self.start + self.billed_s if self.billed_s is not None else self.end
        if self.state == "lost":
            return self.last_t
        return host_now


COST_EVENTS = {"budget_warning", "autostop", "autostop_paused", "autostop_resumed", "stop_requested"}


def fold(host: str, job: dict[str, Any], records: Iterable[dict[str, Any]]) -> NodeRun:
    """A job object (`jobs` op) and its journal records → its NodeRun."""
    run = NodeRun(
        job=job["id"],
        node=str(job.get("node") or "0"),
        host=host,
        name=job.get("name") or "?",
        state=job.get("state") or "starting",
    )
    apply(run, records)
    update_from_job(run, job)
    return run


def update_from_job(run: NodeRun, job: dict[str, Any]) -> None:
    """What only the job object knows: `lost` (derived by the agent), the spec's rules, total_steps."""
    run.name = job.get("name") or run.name
    slurm = job.get("slurm")
    if isinstance(slurm, dict):  # a Slurm node: billed on its own GPUs (counters.shares_for)
        gpus = slurm.get("gpus_per_node")
        run.units = float(gpus) if isinstance(gpus, int) and not isinstance(gpus, bool) else 0.0
        # accounting's word once the job ended (sacct: Elapsed, AllocTRES); none without slurmdbd
        node_gpus, elapsed = slurm.get("node_gpus"), slurm.get("elapsed")
        if _number(node_gpus) and node_gpus >= 0:
            run.units = float(node_gpus)
        if _number(elapsed) and elapsed >= 0 and job.get("state") in TERMINAL:
            run.billed_s = float(elapsed)
    spec_rules(run, job)
    if job.get("state") == "lost" and run.end is None:
        run.state = "lost"
    if run.total_steps is None and isinstance(job.get("total_steps"), (int, float)):
        run.total_steps = float(job["total_steps"])


def from_summary(run: NodeRun, summary: Any) -> bool:
    """An ended node's settled figures from its job object's `cost_summary` (remote_agent/costsummary.py),
    instead of its journal from seq 1. False (nothing taken) for a partial or malformed summary."""
    if not isinstance(summary, dict) or summary.get("partial") or run.fed:
        return False
    start, end, last_t = summary.get("start"), summary.get("end"), summary.get("last_t")
    samples = summary.get("samples")
    if not (_number(start) and _number(end) and isinstance(samples, list)):
        return False
    run.start, run.end = float(start), float(end)
    run.last_t = float(last_t) if _number(last_t) else run.end
    run.state = str(summary.get("state") or run.state)
    reason = summary.get("reason")
    run.reason = reason if isinstance(reason, str) else None
    run.gpus = {str(g) for g in summary.get("gpus") or [] if isinstance(g, str)}
    run.samples = [
        (float(s[0]), float(s[1]) if _number(s[1]) else None)
        for s in samples
        if isinstance(s, list) and len(s) == 2 and _number(s[0])
    ]
    events = summary.get("events")
    run.events = (
        [e for e in events if isinstance(e, dict) and _number(e.get("t"))] if isinstance(events, list) else []
    )
    run.summarised = True
    return True


def _number(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def apply(run: NodeRun, records: Iterable[dict[str, Any]]) -> None:
    """Fold more records in (in seq order): the TUI feeds pushed batches as they arrive."""
    if run.summarised:
        return  # settled from the summary: the journal read again (a view opened) says nothing new
    run.fed = True
    for r in records:
        t = r.get("t")
        if not isinstance(t, (int, float)):
            continue
        run.last_t = t
        kind = r.get("kind")
        if kind == "state":
            _on_state(run, r, t)
        elif kind == "gpu":
            gpus = [g for g in r.get("gpus") or [] if isinstance(g, dict)]
            run.gpus.update(str(g["uuid"]) for g in gpus if g.get("uuid"))
            utils = [float(g["util"]) for g in gpus if isinstance(g.get("util"), (int, float))]
            run.samples.append((t, max(utils) if utils else None))
        elif kind == "metric":
            values = r.get("values") or {}
            step = values.get("step")
            if isinstance(step, (int, float)) and not isinstance(step, bool):
                _add_step(run, t, float(step))
            total = values.get("total_steps")
            if isinstance(total, (int, float)) and not isinstance(total, bool) and total > 0:
                run.total_steps = float(total)
        elif kind == "event" and r.get("event") in COST_EVENTS:
            run.events.append({"t": t, "event": r.get("event"), "data": r.get("data") or {}})


def _add_step(run: NodeRun, t: float, step: float) -> None:
    steps = run.steps
    steps.append((t, step))
    run.step_count += 1
    # Older than the rate window (keeping one before it, steps_per_second's fallback): never read again.
    while len(steps) > 2 and steps[1][0] < t - RATE_WINDOW_S:
        steps.popleft()


def spec_rules(run: NodeRun, job: dict[str, Any]) -> None:
    """The job's own idle threshold and budget, when the agent reports the spec's rules."""
    idle = job.get("idle_stop")
    if isinstance(idle, dict) and isinstance(idle.get("below_pct"), (int, float)):
        run.idle_pct = float(idle["below_pct"])
    if isinstance(job.get("budget"), (int, float)):
        run.budget = float(job["budget"])
    for ev in run.events:  # an older agent's job object lacks it; the warning event carries it
        if (
            run.budget is None
            and ev["event"] in ("budget_warning", "autostop")
            and isinstance(ev["data"].get("budget"), (int, float))
        ):
            run.budget = float(ev["data"]["budget"])


def _on_state(run: NodeRun, r: dict[str, Any], t: float) -> None:
    state = r.get("state")
    if state == "starting" and run.start is None:
        run.start = t
    elif state == "running":
        run.start = t  # billed from the command's start, not the supervisor's
    elif state in TERMINAL:
        if run.start is None:
            run.start = t
        run.end = t
        run.reason = r.get("reason")
    if isinstance(state, str):
        run.state = state


def idle_intervals(run: NodeRun, host_now: float) -> list[tuple[float, float]]:
    """Where the job's GPUs were all under its threshold: each sample holds until the next one.

    Before the first sample nothing is known, so nothing counts as idle; a sample with no
    utilization reading (N/A) is not idle either.
    """
    end = run.until(host_now)
    if end is None:
        return []
    out: list[tuple[float, float]] = []
    for i, (t, util) in enumerate(run.samples):
        nxt = run.samples[i + 1][0] if i + 1 < len(run.samples) else end
        hi = min(nxt, end)
        if util is not None and util < run.idle_pct and hi > t:
            if out and out[-1][1] == t:
                out[-1] = (out[-1][0], hi)
            else:
                out.append((t, hi))
    return out


def steps_per_second(run: NodeRun) -> float | None:
    """Progress rate over the last RATE_WINDOW_S of metric points (at least two points)."""
    if len(run.steps) < 2:
        return None
    steps = run.steps
    last_t = steps[-1][0]
    # The oldest point inside the window: the first or the second (_add_step drops the rest), so a
    # report reads two points, not the window's thousands.
    first = next((i for i, p in enumerate(steps) if p[0] >= last_t - RATE_WINDOW_S), len(steps) - 1)
    if first >= len(steps) - 1:  # fewer than two points inside: the last two
        first = len(steps) - 2
    (t0, s0), (t1, s1) = steps[first], steps[-1]
    if t1 <= t0 or s1 <= s0:
        return None
    return (s1 - s0) / (t1 - t0)
