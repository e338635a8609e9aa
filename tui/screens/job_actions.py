"""Stop, kill, restart and log: the job keys shared by the deck (selected row) and the job view.

Each is a Binding with an id; check_action enables it only when it applies, so the Footer shows
what a key would do right now. The work itself is the JobControl service's (tui/actions in a worker).
`+`/`-` resize a job in restart mode (its command must checkpoint: `--checkpoint-dir`/`-uri`).
"""

from __future__ import annotations

import time

from textual import events
from textual.binding import Binding, BindingType

from ..actions.placement import layout
from ..errors import GpudeckError
from ..fleet import Fleet, JobModel, NodeModel
from ..fleet.states import ACTIVE
from ..services import Connections, JobControl
from ..services.jobs import refused_read_only
from ..widgets.failures import report, say
from .confirm import ConfirmScreen
from .end_job import confirm_end
from .footer_order import AppKeysFirst
from .job_ports import ask_forward, open_shell
from .logs import LogScreen
from .procs import ProcessesScreen
from .scale_check import scale_refusal

SCALE_HOW = "restart mode: checkpoint, stop every node, relaunch on {n} nodes as a new job that resumes"
ELASTIC_HOW = {
    "+1": "elastic: the node joins; every node checkpoints and resumes at the new world size",
    "-1": "elastic: the node stops; the others checkpoint, re-form and resume without it",
}
JOB_BINDINGS: list[BindingType] = [
    Binding(
        "s",
        "stop_job",
        "Stop",
        id="stop_job",
        tooltip="graceful: stop signal, SIGKILL after the grace period",
    ),
    Binding("K", "kill_job", "Kill", id="kill_job", tooltip="SIGKILL every process of the job now"),
    Binding("r", "restart_job", "Restart", id="restart_job", tooltip="a new job from the same spec"),
    Binding("l", "job_log", "Log", id="job_log", tooltip="the job's full output"),
    Binding(
        "p",
        "job_procs",
        "Procs",
        id="job_procs",
        tooltip="the job's processes per node: PID, CPU %, RSS, GPU memory",
    ),
    Binding("plus", "scale('+1')", "+node", id="scale_up", tooltip="add a node (restart mode)"),
    Binding("minus", "scale('-1')", "-node", id="scale_down", tooltip="remove a node (restart mode)"),
    Binding(
        "F", "forward_port", "Forward", id="forward_port", tooltip="a port of the job's node here", show=False
    ),
    Binding(
        "exclamation_mark",
        "job_shell",
        "Shell",
        id="job_shell",
        tooltip="a shell on the job's node",
        show=False,
    ),
    Binding(
        "y",
        "accept_proposal",
        "Accept",
        id="accept_proposal",
        tooltip="carry out the rules' proposal for the job",
    ),
    Binding(
        "d",
        "dismiss_proposal",
        "Dismiss",
        id="dismiss_proposal",
        tooltip="drop the rules' proposal for the job",
    ),
]
_NEEDS_JOB = {"stop_job", "kill_job", "restart_job", "job_log", "job_procs", "scale"}
_NEEDS_JOB |= {"forward_port", "job_shell"}  # F and ! (job_ports.py)
_NEEDS_PROPOSAL = {"accept_proposal", "dismiss_proposal"}
JOB_ACTIONS = frozenset(
    _NEEDS_JOB | _NEEDS_PROPOSAL
)  # the actions of JOB_BINDINGS (scale without its argument)


class JobActions(AppKeysFirst):
    """A screen with a current job. Subclasses set the fleet and services and implement current_job()."""

    fleet: Fleet
    connections: Connections
    job_control: JobControl

    def current_job(self) -> JobModel | None:
        raise NotImplementedError

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in _NEEDS_PROPOSAL:  # hidden unless the rules propose something for this job
            job = self.current_job()
            return job is not None and bool(self.fleet.proposals.get(job.id))
        if action in _NEEDS_JOB:
            job = self.current_job()
            held = action == "stop_job" and job is not None and job.held_until(time.time()) is not None
            if job is None or (action in ("stop_job", "kill_job") and job.ended and not held):
                return None  # (stop on a job held for debugging lets it go: end_job.py)
            if action == "scale" and scale_refusal(job, str(parameters[0]), len(_running(job))):
                return None  # greyed; pressed, on_key says why (a one-node job cannot shrink…)
            if job.watch is not None and (
                action in ("restart_job", "scale")
                or job.watch.read_only
                and action in ("stop_job", "kill_job")
            ):
                return None  # a watched run: gpudeck did not start it (read-only without its pid)
        return True

    def on_key(self, event: events.Key) -> None:
        """A greyed `+`/`-` says why at once (Textual drops a disabled binding's key silently)."""
        active = self.active_bindings.get(event.key)
        if active is None or active.enabled or not active.binding.action.startswith("scale("):
            return
        count = "+1" if "+1" in active.binding.action else "-1"
        job = self.current_job()
        why = scale_refusal(job, count, len(_running(job)) if job else 0)
        if why:
            event.stop()
            say(self.app, why, "Scale", "warning")

    def action_stop_job(self) -> None:
        confirm_end(self, self.job_control, self.current_job(), "stop")

    def action_kill_job(self) -> None:
        confirm_end(self, self.job_control, self.current_job(), "kill")

    def action_restart_job(self) -> None:
        job = self.current_job()
        if job is None or refused_read_only(self.app, "restart"):
            return
        # Always asked, ended or not: a restart starts a new job (and costs money) on every node.
        label = job.name or job.id
        question = f"Start {label} again as a new job?" if job.ended else f"Stop {label} and start it again?"
        self.app.push_screen(
            ConfirmScreen(question, "", "Restart"), lambda yes: self._restart(job) if yes else None
        )

    def _restart(self, job: JobModel) -> None:
        if job.id not in self.fleet.jobs and job.id in self.fleet.removed:  # went while asked
            report(self, "Restart", f"{job.name or job.id} was removed (gpudeck rm): nothing to restart")
            return
        self.restarted(self.job_control.restart(job))

    def restarted(self, new_id: str) -> None:
        """A restart was asked for; new_id is the job it creates."""

    def action_job_log(self) -> None:
        job = self.current_job()
        if job is not None:
            self.app.push_screen(LogScreen(self.fleet, self.connections, job.id))

    def action_job_procs(self) -> None:
        job = self.current_job()
        if job is not None:
            self.app.push_screen(
                ProcessesScreen(self.fleet, self.connections, self.job_control, job_id=job.id)
            )

    def action_forward_port(self) -> None:
        ask_forward(self, self.current_job())

    def action_job_shell(self) -> None:
        open_shell(self, self.current_job())

    def action_accept_proposal(self) -> None:
        job, proposals = self.current_job(), getattr(self.app, "proposals", None)
        if job is None or proposals is None or refused_read_only(self.app, "accepting a proposal"):
            return
        new_id = proposals.accept(job)
        if new_id is not None:
            self.restarted(new_id)

    def action_dismiss_proposal(self) -> None:
        job, proposals = self.current_job(), getattr(self.app, "proposals", None)
        if job is not None and proposals is not None:
            proposals.dismiss(job.id)

    def action_scale(self, count: str) -> None:
        job = self.current_job()
        if job is None or refused_read_only(self.app, "scale"):
            return
        now = len(_running(job))
        n = now + (1 if count == "+1" else -1)
        if n < 1:
            return
        try:
            what, onto = resize_plan(self.fleet, job, count)
        except GpudeckError as exc:
            report(self, "Scale", exc)
            return
        self.app.push_screen(
            ConfirmScreen(
                f"Scale {job.name or job.id} from {now} to {n} node{'s' * (n != 1)}: {what}?",
                ELASTIC_HOW[count] if job.placement.elastic else SCALE_HOW.format(n=n),
                "Scale",
            ),
            lambda yes: self.restarted(self.job_control.scale(job, count, onto)) if yes else None,
        )


def resize_plan(fleet: Fleet, job: JobModel, count: str) -> tuple[str, tuple[str, ...]]:
    """What `+`/`-`'s confirmation names ("add node 1 on gpu-b", "remove node 2 on gpu-a"), and
    the host a new node is then pinned to, so the resize lands where the question said (free GPUs
    may change meanwhile). The same choice as `gpudeck scale` (tui/actions/placement.py), from the
    Fleet's GPU samples; `-` removes a node on an unreachable host first, else the highest rank."""
    nodes = _running(job)
    if job.cluster is not None:  # Slurm places the nodes: a new allocation (actions/slurm_resubmit.py)
        n = len(nodes) + (1 if count == "+1" else -1)
        return f"a new allocation of {n} node{'s' * (n != 1)} on {job.cluster}", ()
    if count == "-1":
        # restart mode drops a node on an unreachable host first; elastic, torch's keep-alives do
        gone = [] if job.placement.elastic else fleet.unreachable_nodes(job)
        node, host = (gone[0][0], gone[0][1]) if gone else (nodes[-1].node, nodes[-1].host)
        return f"remove node {node} on {host}", ()
    p = job.placement
    hosts = layout(
        [nd.host for nd in nodes], len(nodes) + 1, p.pool, p.pinned, (), fleet.free_gpus(), p.per_node
    )
    # elastic nodes keep their names: a new one is named after the highest so far, stopped ones too
    name = (
        1 + max((int(nd.node) for nd in job.nodes.values() if nd.node.isdigit()), default=0)
        if p.elastic
        else len(nodes)
    )
    return f"add node {name} on {hosts[-1]}", (hosts[-1],)


def _running(job: JobModel) -> list[NodeModel]:
    """The nodes that count for a resize, by rank: an elastic job keeps the nodes that left (stopped)."""
    nodes = sorted(job.nodes.values(), key=lambda nd: (len(nd.node), nd.node))
    return [nd for nd in nodes if nd.state in ACTIVE] if job.placement.elastic else nodes
