"""Jobs: nodes, state, latest values, per-metric series, the job's GPU series, throughput and ETA.

A multi-node job's series is the merge of its nodes' points. Two nodes reporting the same step
keep ONE point, the latest to arrive: usually only rank 0 prints, and when every rank prints, each
value is that rank's local loss of the same step, any of which is a fair sample. Averaging would
need per-point counts and would drift if a record were ever applied twice.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, NamedTuple

from remote_agent.pace.points import add_point, mean_util
from remote_agent.spec import Multinode, ResizedFrom

from .advice import MAX_PER_NODE, advice_of, merged_advice
from .gpus_held import held_text
from .hosts import GpuSample, parse_gpu
from .series import Series
from .states import ACTIVE, ENDED, JOB_STATES, STATE_ORDER, cause_order, job_state, left_job, why
from .values import finite, integer, num, text
from .watch import WatchInfo

TERMINAL = frozenset(JOB_STATES) - ACTIVE  # no live stream: ended, or lost
_NOT_SERIES = frozenset({"step", "total_steps", "rank"})  # x axis, a constant, the printing rank
MAX_SERIES = 64  # a remote printing ever-new keys must not grow memory without bound
MAX_GPUS = 64
RATE_WINDOW_S = 120.0  # steps/s over this much recent time: follows slowdowns, smooths jitter
# Throughput as trainers spell it (ours, HF Trainer's, Lightning/torchtitan-style logs): first found wins.
_SAMPLES = ("samples_per_sec", "samples_per_s", "samples_per_second", "train_samples_per_second", "samples/s")
_TOKENS = (
    "tokens_per_sec",
    "tokens_per_s",
    "tokens_per_second",
    "train_tokens_per_second",
    "tokens/s",
    "tok/s",
)
THROUGHPUT_KEYS = {"samples_per_sec": _SAMPLES, "tokens_per_sec": _TOKENS}
_ANY_THROUGHPUT = frozenset(_SAMPLES + _TOKENS)  # most lines carry none: one test, not 11 lookups


def _tail(v: Any) -> list[str]:
    if isinstance(v, str):
        return v.splitlines()[-50:]
    if isinstance(v, list):
        return [s[:1000] for s in v[-50:] if isinstance(s, str)]
    return []


def _resized_from(v: Any) -> ResizedFrom | None:
    """The spec's type, read leniently (a job may name another by any id a journal holds); the model
    keeps what it shows: the job and its node count."""
    if not isinstance(v, dict):
        return None
    job, nodes = text(v.get("job"), 64), integer(v.get("nodes"))
    return ResizedFrom(job, nodes) if job and nodes is not None and nodes > 0 else None


@dataclass
class NodeModel:
    node: str
    host: str
    state: str = "starting"
    pid: int | None = None
    supervisor_pid: int | None = None
    last_seq: int = 0  # highest journal seq applied here (what `tail since_seq` resumes from)
    remote_last_seq: int | None = None  # what the agent's job object said; may be ahead of last_seq
    exit_code: int | None = None
    signal: str | None = None
    reason: str | None = None
    cause: str | None = None
    tail: list[str] = field(default_factory=list)
    started_at: float | None = None
    ended_at: float | None = None
    last_heartbeat: float | None = None
    grace: float | None = None  # seconds between the stop signal and SIGKILL (from its spec)
    stalled: str | None = None  # why no progress came for longer than its pace allows, or None
    gpus_held: list[str] = field(default_factory=list)  # after its end: `GPU 3 still held by PID …`
    held_until: float | None = None  # --hold-on-fail: a failed node kept for debugging until then
    # recent [t, step] and [t, GPU %] points (host clock), as the agent keeps them (remote_agent/pace)
    pace_steps: list[list[float]] = field(default_factory=list)
    pace_util: list[list[float]] = field(default_factory=list)
    advice: list[dict[str, Any]] = field(default_factory=list)  # its `advice` events (fleet/advice.py)
    previewed: bool = False  # its series came from the agent's `series` answer (fleet/preview.py)
    place: str | None = None  # a Slurm node: the compute node its rank runs on (its host: the login node)
    regrouped: dict[str, Any] | None = None  # an elastic job's last regroup it journaled: {to, t}
    summarised: bool = (
        False  # ended, and its job object carries the agent's `cost_summary`: costs need no replay
    )

    def saw_regroup(self, regrouped: dict[str, Any] | None) -> bool:
        """Keep `regrouped` when it is newer than the one held; True when it was."""
        if regrouped is None or (self.regrouped is not None and regrouped["t"] <= self.regrouped["t"]):
            return False
        self.regrouped = regrouped
        return True

    @property
    def where(self) -> str:
        """Where its GPUs live: its host, or `cluster/compute-node` for a Slurm node."""
        return f"{self.host}/{self.place}" if self.place else self.host

    @property
    def behind(self) -> bool:
        """The journal read so far is older than the agent's last job object for this node."""
        return self.remote_last_seq is not None and self.last_seq < self.remote_last_seq


class Placement(NamedTuple):
    """Where a multi-node job may grow (its spec's `multinode`): the pool, the `--host` list, and
    how many processes (GPUs) each node takes."""

    pool: tuple[str, ...] = ()
    pinned: tuple[str, ...] = ()
    per_node: int = 1
    elastic: bool = False  # launched with --elastic: nodes join and leave the running job


def _add_points(points: list[list[float]], got: Any) -> None:
    """The agent's points newer than the last one kept (add_point drops any other)."""
    if isinstance(got, list):
        last = points[-1][0] if points else float("-inf")
        for p in got[-1000:]:
            if isinstance(p, list) and len(p) == 2 and isinstance(p[0], (int, float)) and p[0] > last:
                add_point(points, p[0], p[1])


def _regroup(v: Any, t: float | None) -> dict[str, Any] | None:
    """{to, t} of a regroup: the agent's `regrouped` (t in it) or a `resized` event's data (at t)."""
    if not isinstance(v, dict):
        return None
    to, at = integer(v.get("to")), finite(v.get("t")) if t is None else t
    return {"to": to, "t": at} if to is not None and at is not None else None


def _placement(v: Any) -> Placement | None:
    plan = Multinode.read(v)  # the spec's own reading: one rule for the model, the core and the agent
    if plan is None:
        return None
    return Placement(plan.pool[:64], plan.pinned[:64], plan.nproc_per_node, plan.elastic is not None)


@dataclass
class JobEvent:
    t: float
    node: str
    name: str
    data: dict[str, Any]


@dataclass
class JobModel:
    id: str
    name: str | None = None
    state: str = "starting"
    nodes: dict[str, NodeModel] = field(default_factory=dict)
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    signal: str | None = None
    cause: str | None = None
    reason: str | None = None  # who stopped it, when not the user
    resized_from: ResizedFrom | None = None
    watch: WatchInfo | None = None  # a watched run (gpudeck watch), not a launched command
    command: tuple[str, ...] = ()  # the user's command (a multi-node job's, before torchrun): + and - read it
    placement: Placement = field(default_factory=Placement)
    cluster: str | None = None  # the Slurm host it runs on: + and - ask it for a new allocation
    tail: list[str] = field(default_factory=list)
    last: dict[str, Any] = field(default_factory=dict)  # latest value of each metric key
    series: dict[str, Series] = field(default_factory=dict)
    gpu_util: dict[str, Series] = field(default_factory=dict)  # GPU uuid (or host:index) -> %
    gpu_mem: dict[str, Series] = field(default_factory=dict)  # GPU uuid (or host:index) -> MiB
    gpu_latest: dict[str, GpuSample] = field(default_factory=dict)
    gpu_host: dict[str, str] = field(default_factory=dict)  # GPU key -> host it lives on
    step: float | None = None  # highest step any node reported
    total_steps: float | None = None
    samples_per_sec: float | None = None
    tokens_per_sec: float | None = None
    events: deque[JobEvent] = field(default_factory=lambda: deque(maxlen=200))
    # Bumped by every change to what the job shows, so a view redraws a job only when this moved
    # (500 ended jobs re-polled every 2 s must cost nothing to draw).
    version: int = 0
    gpu_moves: int = 0  # bumped when a GPU key's host changes: the fleet's GPU → job index follows it
    _axis: dict[str, str] = field(default_factory=dict)  # series -> "step" | "time"
    _progress: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=256))
    # step -> host time of every step seen (bounded): the loss chart's x axis in time for step series
    step_time: Series = field(default_factory=lambda: Series(recent=256, buckets=256))

    # ---- derived -------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    @property
    def ended(self) -> bool:
        """A known ending: nothing of the job runs (a lost job may still run: stop and kill apply)."""
        return self.state in ENDED

    @property
    def why(self) -> str:
        """Why the job is in its state: the words of the node whose state it shows."""
        same = [n for n in self.nodes.values() if n.state == self.state]
        n = (
            min(same, key=lambda n: cause_order(n.cause)) if same else None
        )  # the first of the likeliest culprits
        return why(self.state, n.cause, n.exit_code, n.signal, n.reason) if n else ""

    def held_until(self, now: float) -> float | None:
        """--hold-on-fail: until when a failed node of the job is kept for debugging, or None."""
        holds = [n.held_until for n in self.nodes.values() if n.held_until is not None and n.held_until > now]
        return max(holds) if self.ended and holds else None

    @property
    def gpus_held(self) -> list[str]:
        """After its end: each GPU its nodes' agents found still held; never a silent end."""
        return [line for n in self.nodes.values() for line in n.gpus_held][:16]

    @property
    def advice(self) -> list[dict[str, Any]]:
        """The job's advice, one per kind across its nodes (the first node to say it named)."""
        return merged_advice(
            [{"node": n.node, "host": n.host, "advice": n.advice} for n in self.nodes.values()]
        )

    @property
    def stalled(self) -> str | None:
        """Why a node of the running job is stalled now (supervision/stall.py), or None."""
        return next((n.stalled for n in self.nodes.values() if n.stalled), None) if self.active else None

    @property
    def caught_up(self) -> bool:
        """Every node's journal is read up to what its last job object said, or its costs come
        whole from the agent's summary (costs and, once opened, series are whole)."""
        return not any(n.behind and not n.summarised for n in self.nodes.values())

    @property
    def summarised(self) -> bool:
        """Ended, and every node's cost figures come from the agent's summary: no journal to replay."""
        return bool(self.nodes) and all(n.summarised for n in self.nodes.values())

    @property
    def hosts(self) -> list[str]:
        return sorted({n.host for n in self.nodes.values()})

    def axis(self, metric: str) -> str | None:
        """ "step" or "time": what x means in this metric's series."""
        return self._axis.get(metric)

    def runtime(self, now: float) -> float | None:
        """Seconds run so far (or in all, once ended); `now` on the hosts' clock."""
        if self.started_at is None:
            return None
        end = self.ended_at if self.ended_at is not None and not self.active else now
        return max(0.0, end - self.started_at)

    def steps_per_sec(self) -> float | None:
        p: list[tuple[float, float]] | deque[tuple[float, float]] = self._progress
        if len(p) < 2:  # the step came first from the job's `last` (a replay): its journal's points
            p = [(t, step) for step, t in self.step_time.points()]
        if len(p) < 2:
            return None
        t_last, s_last = p[-1]
        first = p[-2]
        for i in range(len(p) - 1):  # the oldest point still inside the window
            if p[i][0] >= t_last - RATE_WINDOW_S:
                first = p[i]
                break
        dt, ds = t_last - first[0], s_last - first[1]
        return ds / dt if dt > 0 and ds > 0 else None

    @property
    def eta_seconds(self) -> float | None:
        """Time left at the recent step rate; None without total_steps, a rate, or once ended."""
        if self.total_steps is None or self.step is None or not self.active:
            return None
        left = self.total_steps - self.step
        if left <= 0:
            return 0.0
        rate = self.steps_per_sec()
        return left / rate if rate else None

    @property
    def gpu_util_now(self) -> float | None:
        """Mean utilization of the job's GPUs at their latest sample."""
        utils = [g.util for g in self.gpu_latest.values() if g.util is not None]
        return sum(utils) / len(utils) if utils else None

    @property
    def has_history(self) -> bool:
        """Series were loaded (from the journal or a `series` answer), not only the summary."""
        return bool(self.series or self.gpu_util or len(self.step_time))

    def drop_history(self) -> None:
        """Back to a summary (state, cause, latest values, times): an ended job's series cost memory
        only while it is on screen; opening it again asks the agent for them."""
        self.series, self._axis, self.gpu_util, self.gpu_mem = {}, {}, {}, {}
        self.step_time = Series(recent=256, buckets=256)
        self.events.clear()
        self._progress.clear()
        for n in self.nodes.values():
            n.previewed = False
        self.version += 1

    # ---- job objects (`jobs`, `launch`, `stop`, `kill`) ----------------------------------------

    def node_for(self, node: str, host: str) -> NodeModel:
        n = self.nodes.get(node)
        if n is None:
            n = self.nodes[node] = NodeModel(node=node, host=host)
        return n

    def apply_object(self, obj: dict[str, Any], host: str) -> set[str]:
        """Merge one job object: the agent's per-node shape (`node`) or the CLI's (`nodes`)."""
        changes: set[str] = set()
        name = text(obj.get("name"), 128)
        if name and name != self.name:
            self.name = name
            changes.add("job")
        watch = WatchInfo.of(obj.get("watch"))
        if watch is not None and watch != self.watch:
            self.watch = watch
            changes.add("job")
        resized = _resized_from(obj.get("resized_from"))
        if resized is not None and resized != self.resized_from:
            self.resized_from = resized
            changes.add("job")
        placement = _placement(obj.get("multinode"))
        if placement is not None:
            self.placement = placement
        plan, argv = Multinode.read(obj.get("multinode")), obj.get("argv")
        if plan is not None and plan.command:
            self.command = tuple(plan.command[:256])
        elif isinstance(argv, list) and not self.command:
            self.command = tuple(str(a)[:4096] for a in argv[:256])
        entries = obj.get("nodes")
        if not isinstance(entries, list):
            entries = [obj]
        for e in entries:
            node = text(e.get("node"), 64) if isinstance(e, dict) else None
            if node is None:
                continue
            if node not in self.nodes:
                changes.add("job")
            n = self.node_for(node, text(e.get("host"), 256) or host)
            # Take the snapshot's state unless our journal replay is already past it ("lost" is
            # derived by the agent, never journaled, so it always comes from here).
            seq = integer(e.get("last_seq", obj.get("last_seq") if e is obj else None))
            state = e.get("state")
            if state == "lost" and n.state in TERMINAL:
                pass  # the journal wrote an ending: the job is over, not lost
            elif state in JOB_STATES and (seq is None or seq >= n.last_seq or state == "lost"):
                changes |= self._node_state(n, e, state, None)
            slurm = e.get("slurm")
            place = text(slurm.get("node"), 128) if isinstance(slurm, dict) else None
            if isinstance(slurm, dict) and self.cluster != n.host:
                self.cluster = n.host
                changes.add("job")
            if place is not None and place != n.place:  # its GPUs are shown under it (job_nodes.py)
                n.place = place
                changes.add("job")
            if "stalled" in e and (seq is None or seq >= n.last_seq):
                stalled = text(e.get("stalled"), 300)
                if stalled != n.stalled:
                    n.stalled = stalled
                    changes.add("stalled")
            if n.saw_regroup(_regroup(e.get("regrouped"), None)):
                changes.add("job")
            pace = e.get("pace")
            if isinstance(pace, dict):  # the agent's recent points: a node seen before its journal is read
                _add_points(n.pace_steps, pace.get("steps"))
                _add_points(n.pace_util, pace.get("util"))
            if isinstance(e.get("advice"), list) and (seq is None or seq >= n.last_seq):
                got = [a for a in (advice_of(x, x.get("t")) for x in e["advice"] if isinstance(x, dict)) if a]
                if got != n.advice:
                    n.advice = got[:MAX_PER_NODE]
                    changes.add("advice")
            summary = e.get("cost_summary")
            n.summarised = isinstance(summary, dict) and not summary.get("partial")
            if seq is not None:
                n.remote_last_seq = seq
                stale = seq <= n.last_seq
                last = obj.get("last")
                if not stale and isinstance(last, dict):
                    before = dict(self.last)
                    self._set_last(last)
                    step = self._scalars(last)  # so `ps` shows step and throughput before any tail
                    if step is not None and (self.step is None or step > self.step):
                        self.step = step
                    if self.last != before:
                        changes.add("last")
        for key in ("started_at", "ended_at"):
            v = finite(obj.get(key))
            if v is not None and getattr(self, key) is None and not (key == "ended_at" and self.active):
                setattr(self, key, v)
                self.version += 1
        if changes:
            self.version += 1
        return changes

    # ---- journal records -------------------------------------------------------------------------

    def apply_record(self, host: str, node: NodeModel, rec: dict[str, Any], t: float) -> set[str] | None:
        """Apply one checked record (seq and t already validated); None means malformed."""
        self.version += 1  # records come only for tailed journals: counting each is cheap and exact
        return self._record(host, node, rec, t)

    def _record(self, host: str, node: NodeModel, rec: dict[str, Any], t: float) -> set[str] | None:
        kind = rec.get("kind")
        history = node.behind  # replaying what the agent's last job object already summed up
        if kind == "state":
            state = rec.get("state")
            if state not in JOB_STATES:
                return None
            if history and state != node.state:
                return set()  # an old state: the snapshot's is newer (a stopped job never shows running)
            return self._node_state(node, rec, state, t)
        if kind == "metric":
            values = rec.get("values")
            if isinstance(values, dict):
                add_point(node.pace_steps, t, values.get("step"))
            return self._metric(values, t, history) if isinstance(values, dict) else None
        if kind == "gpu":
            gpus = rec.get("gpus")
            add_point(node.pace_util, t, mean_util(gpus))
            return self._gpus(node.where if node.place else host, gpus, t) if isinstance(gpus, list) else None
        if kind == "heartbeat":
            node.last_heartbeat = t
            return {"heartbeat"}
        if kind == "event":
            name = text(rec.get("event"), 128)
            if name is None:
                return None
            data = rec.get("data")
            self.events.append(JobEvent(t, node.node, name, data if isinstance(data, dict) else {}))
            if name in ("stalled", "unstalled"):  # as the agent's jobstate reads them
                why = data.get("why") if isinstance(data, dict) and name == "stalled" else None
                node.stalled = (text(why, 300) or "stalled") if name == "stalled" else None
                return {"events", "stalled"}
            if name == "resized":  # as the agent's jobstate keeps it: a lost node may have left
                node.saw_regroup(_regroup(data, t))
                return {"events", "job"}
            if name == "advice":  # the seeds' troubleshooting, from evidence (remote_agent/advice/)
                found = advice_of(data, t)
                if found is not None and len(node.advice) < MAX_PER_NODE and found not in node.advice:
                    node.advice.append(found)
                return {"events", "advice"}
            return {"events"}
        if isinstance(kind, str):
            return set()  # a kind from a newer agent: skip it quietly, it is not garbage
        return None

    def _node_state(self, n: NodeModel, d: dict[str, Any], state: str, t: float | None) -> set[str]:
        before = (self.state, self.cause, vars(n).copy())
        n.state = state
        pid = integer(d.get("pid"))
        n.pid = pid if pid is not None else n.pid
        supervisor = integer(d.get("supervisor_pid"))
        n.supervisor_pid = supervisor if supervisor is not None else n.supervisor_pid
        if "exit_code" in d:
            n.exit_code = integer(d.get("exit_code"))
        if "signal" in d:
            n.signal = text(d.get("signal"), 32)
        for key in ("reason", "cause"):
            if d.get(key) is not None:
                setattr(n, key, text(d.get(key), 1000))
        if d.get("tail") is not None:
            n.tail = _tail(d.get("tail"))
        if "held_until" in d:  # its end record, or the agent's object (a release moves it to then)
            n.held_until = finite(d.get("held_until"))
        if isinstance(d.get("gpus_held"), list):  # its end found a GPU still held (gpus_held.py)
            n.gpus_held = [held_text(e) for e in d["gpus_held"][:16] if isinstance(e, dict)]
        grace = finite(d.get("grace"))
        if grace is not None and grace >= 0:
            n.grace = grace
        started, ended = finite(d.get("started_at")), finite(d.get("ended_at"))
        if state in ACTIVE:
            n.started_at = n.started_at or started or t
            n.ended_at = None  # a snapshot may show a node back to running after a relaunch
        else:
            n.ended_at = ended or t or n.ended_at
            n.started_at = n.started_at or started
        self._aggregate()
        # Snapshots are polled: only a real difference asks the UI to redraw.
        return {"state"} if (self.state, self.cause, vars(n)) != before else set()

    def _aggregate(self) -> None:
        """The job's state from its nodes (states.job_state); the ending shown is the worst node's."""
        nodes = [n for n in self.nodes.values() if not left_job(n.reason)] or list(self.nodes.values())
        if not nodes:
            return
        self.state = job_state(n.state for n in nodes)
        rank = {s: i for i, s in enumerate(STATE_ORDER)}
        worst = min(nodes, key=lambda n: rank.get(n.state, len(rank)))
        if not self.active:
            self.exit_code, self.signal, self.reason = worst.exit_code, worst.signal, worst.reason
            ends = [n.ended_at for n in nodes if n.ended_at is not None]
            self.ended_at = max(ends) if ends else self.ended_at
        starts = [n.started_at for n in nodes if n.started_at is not None]
        if starts:
            self.started_at = min(starts)
        bad = [n for n in nodes if n.cause or n.tail]
        if bad:
            first = min(
                bad,
                key=lambda n: (
                    cause_order(n.cause),
                    rank.get(n.state, len(rank)) if n.state not in ACTIVE else len(rank),
                ),
            )
            self.cause, self.tail = first.cause, first.tail

    def _set_last(self, values: dict[str, Any]) -> None:
        if values.get(
            "summary"
        ):  # HF's end-of-run dict (train_runtime...): the journal keeps it, no latest value
            return
        for k, v in islice(values.items(), MAX_SERIES):
            if not isinstance(k, str):
                continue
            f = num(v)
            if f is not None:
                self.last[k[:64]] = f
            elif isinstance(v, str):
                self.last[k[:64]] = v[:256]
        if len(self.last) > 4 * MAX_SERIES:
            self.last = dict(list(self.last.items())[-MAX_SERIES:])

    def _scalars(self, values: dict[str, Any]) -> float | None:
        """Take total_steps and throughput from metric values; return their step, if any."""
        total = finite(values.get("total_steps"))
        self.total_steps = total if total is not None and total > 0 else self.total_steps
        if _ANY_THROUGHPUT.isdisjoint(values):  # issue 36: ~10 % of a dense stream's apply cost
            return finite(values.get("step"))
        for attr, keys in THROUGHPUT_KEYS.items():
            v = next((f for f in (finite(values[k]) for k in keys if k in values) if f is not None), None)
            if v is not None:
                setattr(self, attr, v)
        return finite(values.get("step"))

    def _metric(self, values: dict[str, Any], t: float, history: bool = False) -> set[str]:
        changes = {"last"}
        if history and self.last:  # the snapshot's latest values are newer than a replayed point
            step = finite(values.get("step"))
            changes = set()
        else:
            self._set_last(values)
            step = self._scalars(values)
        if step is not None:
            self.step_time.add(step, t)
        if step is not None and (self.step is None or step > self.step):
            self.step = step
            self._progress.append((t, step))
        for k, v in values.items():
            y = num(v)
            if y is None or not isinstance(k, str) or k in _NOT_SERIES:
                continue
            k = k[:64]
            axis = self._axis.get(k)
            if axis is None:
                if len(self.series) >= MAX_SERIES:
                    continue
                axis = self._axis[k] = "step" if step is not None else "time"
                self.series[k] = Series()
            # A series keeps the axis its first point chose: a stepless point in a step series
            # (say val_loss at epoch end) lands at the job's latest step; a stepped point in a
            # time series at its time.
            x = (step if step is not None else self.step) if axis == "step" else t
            if x is not None and self.series[k].add(x, y):
                changes.add("series")
        return changes

    def _gpus(self, host: str, gpus: list[Any], t: float) -> set[str]:
        for i, d in enumerate(gpus[:MAX_GPUS]):
            g = parse_gpu(d, i)
            if g is None:
                continue
            key = g.uuid or f"{host}:{g.index}"
            if key not in self.gpu_latest and len(self.gpu_latest) >= MAX_GPUS:
                continue
            if self.gpu_host.get(key) != host:
                self.gpu_moves += 1
            self.gpu_latest[key], self.gpu_host[key] = g, host
            if g.util is not None:
                self.gpu_util.setdefault(key, Series(recent=512, buckets=512)).add(t, g.util)
            if g.mem_used_mib is not None:
                self.gpu_mem.setdefault(key, Series(recent=512, buckets=512)).add(t, g.mem_used_mib)
        return {"gpu"}
