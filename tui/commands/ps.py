"""`gpudeck ps` lists jobs; `gpudeck inspect` shows one whole, with a failure's cause and last lines."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..actions.find import Job, list_jobs, resolve
from ..actions.hold import held_text, held_until
from ..advice_text import advice_lines
from ..errors import EXIT_HOSTKEY, GpudeckError
from ..fleet.gpus_held import freed_text
from ..format import number, runtime, table
from ..notify_late import after_listing as tell_late
from ..printable import printable, warn
from ..session import Session
from . import pace_text


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ps", help="list jobs (live ones; --all for every job)")
    p.add_argument("--json", action="store_true", help="a JSON list of job objects")
    p.add_argument("--all", "-a", action="store_true", help="include ended jobs")
    p = sub.add_parser("inspect", help="one job in full: state, cause, last output lines")
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument("--json", action="store_true", help="the job object, with its last output lines as `tail`")


def state_text(job: Job) -> str:
    if job.stalled and not job.ended:
        return f"{job.state} (stalled)"
    note = pace_text.state_note(job)
    if note:
        return f"{job.state} ({note})"
    if job.gpus_held:  # its end left a GPU held: never a silent "stopped"
        return f"{job.state} !"
    if held_until(job.nodes):  # --hold-on-fail: its node is kept for debugging
        return f"{state_code(job)} (held)"
    return state_code(job)


def state_code(job: Job) -> str:
    ending = job.ending_node
    if job.state in ("failed", "exited") and ending.get("exit_code") is not None:
        return f"{job.state}({ending['exit_code']})"
    if ending.get("signal"):
        return f"{job.state}({ending['signal']})"
    return job.state


def held_why(job: Job) -> str:
    held = held_until(job.nodes)
    return f"{held_text(held)}; {job.why}" if held else job.why


def run(args: argparse.Namespace, session: Session) -> int:
    skipped: list[GpudeckError] = []
    # The queue is read before the hosts: a job the controller launches in between is then either
    # still in the queue here or already in the hosts' answer, never in neither.
    waiting_then = queued()
    answered: dict[str, bool] = {}
    listed = list_jobs(session, skipped, answered=answered)
    tell_late(session.settings.notify, listed, answered)
    jobs = [j for j in listed if args.all or not j.ended]
    pace_text.journal(session, jobs)  # a straggler named (or cleared) goes into its node's journal
    for exc in skipped:
        warn(f"gpudeck: skipping a host: {exc}")
    # The jobs of the hosts that answered are printed; a host skipped makes the exit code non-zero
    # (an untrusted or changed host key has its own code), so scripts know the list is partial.
    code = next((exc.code for exc in skipped if exc.code == EXIT_HOSTKEY), skipped[0].code if skipped else 0)
    live_ids = {j.id for j in listed}
    waiting = [q for q in waiting_then if q["id"] not in live_ids]  # a start just done: the job's row wins
    if args.json:
        print(json.dumps([j.to_json() for j in jobs] + waiting, indent=2))
        return code
    rows = [
        [
            q["id"],
            q["name"],
            ",".join(q["pool"]),
            "starting" if q["state"] == "starting" else f"queued ({q['ahead']} ahead)",
            "-",
            "",
            "",
            q["why"],
        ]
        for q in waiting
    ]
    for job in jobs:
        last = job.lead.get("last") or {}
        hosts = ",".join(sorted({n["host"] for n in job.nodes}))
        obj = job.to_json()
        name = f"{job.name} (watch)" if obj.get("watch") else job.name
        rows.append(
            [
                job.id,
                name,
                hosts,
                state_text(job),
                runtime(obj["started_at"], obj["ended_at"]),
                number(last.get("step")),
                number(last.get("loss")),
                pace_text.why_note(job) or "; ".join(job.gpus_held) or held_why(job),
            ]
        )
    print(table(["ID", "NAME", "HOST", "STATE", "RUNTIME", "STEP", "LOSS", "WHY"], rows))
    return code


def managed_lines(job_id: str) -> list[str]:
    """A managed job's chain (`run --managed`): its policy, each recovery, and how it ended."""

    from ..managed.records import ManagedDir  # here: ps and inspect of a plain job never load it

    m = ManagedDir().of_job(job_id)
    if m is None:
        return []
    p = m.policy
    lines = [
        f"  managed: recovers on {','.join(p.recover_on)}, {len(m.recoveries)} of {p.max_recoveries} "
        f"recoveries used, onto {','.join(p.fallback) or m.opts.host}"
    ]
    for r in m.recoveries:
        lines.append(
            f"    recovered {r.get('from')} on {r.get('from_host')} → {r.get('to')} on {r.get('to_host')}: {r.get('why')}"
        )
        if r.get("how"):  # an elastic job's: its nodes joined the running job, or why it could not
            lines.append(f"      {r['how']}")
    lines.extend(refused_lines(m.refused))
    if m.finished:
        lines.append(f"    watching ended: {m.finished}")
    return lines


def refused_lines(refused: Any) -> list[str]:
    """Each refused cloud launch of the chain: the candidate, the provider's code, when, the next try."""
    import time

    def at(t: Any) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(t))) if t else "?"

    out = []
    for r in refused:
        code = r.get("code") or str(r.get("error") or "refused")[:120]
        kind = " (no capacity)" if r.get("capacity") else ""
        out.append(
            f"    refused {r.get('candidate')}: {code}{kind} at {at(r.get('at'))}, next try {at(r.get('next_try'))}"
        )
    return out


def queued() -> list[dict[str, Any]]:
    """The jobs waiting in the queue (tui/queue/listing.py), its problems said on stderr."""
    from ..queue.listing import waiting_jobs

    return waiting_jobs(lambda line: warn(f"gpudeck: {line}"))


def say(text: str) -> None:
    """One line of `inspect`: names, argv, causes and output are the job's, never the terminal's."""
    print(printable(text))


def container_line(node: dict[str, Any]) -> str | None:
    """`  image: …` for a container job: the image asked for, the runtime, and the id/digest it ran."""
    asked = node.get("runtime")
    if not isinstance(asked, dict):
        return None
    found = node.get("container")
    ran: dict[str, Any] = found if isinstance(found, dict) else {}
    parts = [f"runtime {asked.get('runtime')}"]
    image_id = ran.get("image_id") or asked.get("digest")
    if image_id:
        parts.append(f"id {image_id}")
    if ran.get("digest"):
        parts.append(f"digest {ran['digest']}")
    return f"  image: {asked.get('image')} ({', '.join(parts)})"


def gpus_text(node: dict[str, Any]) -> str:
    """` gpus 0,1 (NVIDIA A100-SXM4-80GB)`: the GPUs its host gave a node that asked (--gpus)."""
    assigned = node.get("gpus_assigned")
    if not isinstance(assigned, dict) or not isinstance(assigned.get("indices"), list):
        return " gpus: (not assigned yet)" if node.get("gpus") else ""
    names = sorted({str(n) for n in assigned.get("names") or [] if n})
    return f" gpus {','.join(str(i) for i in assigned['indices'])}" + (
        f" ({', '.join(names)})" if names else ""
    )


def inspect(args: argparse.Namespace, session: Session) -> int:
    job = resolve(session, args.job)
    pace_text.journal(session, [job])
    if args.json:
        obj = job.to_json()
        obj["tail"] = job.first.get("tail")
        print(json.dumps(obj, indent=2))
        return 0
    first = job.first
    say(f"{job.id}  {job.name}  {state_text(job)}")
    watch = first.get("watch")
    if isinstance(watch, dict):
        pid = watch.get("pid")
        say(
            f"  watching: {watch.get('path')} ({f'pid {pid}: stop/kill act on its tree' if pid else 'read-only: no --pid'})"
        )
    else:
        say(f"  command: {' '.join(first.get('argv') or [])}")
    say(f"  workdir: {first.get('workdir')}")
    environment = job.to_json()["environment"]
    if environment:
        say(f"  environment: {environment['key'] or '(not prepared yet)'} from {environment['source']}")
    code = first.get("code")
    if isinstance(code, dict):
        size = code["bytes"] if isinstance(code.get("bytes"), int) else 0
        say(
            f"  code: snapshot {str(code.get('snapshot'))[:12]} ({code.get('files')} files, "
            f"{size / 1e6:.1f} MB) of {code.get('source')}; restarts and resizes run it"
        )
    image = container_line(first)
    if image:
        say(image)
    for node in job.nodes:
        # a node can fail while the job runs on (an elastic job drops it): say why here
        cause = f" ({node['cause']})" if node["state"] == "failed" and node.get("cause") else ""
        say(
            f"  node {node['node']} on {node['host']}: {node['state']} pid={node.get('pid')}{cause}{gpus_text(node)}"
        )
    slurm = job.to_json()["slurm"]
    if slurm:  # a Slurm job (issue 30): its id, Slurm's state and reason, its nodes, its sbatch script
        say(slurm_line(slurm))
    plan = job.to_json()["multinode"]
    if plan:
        bounds = plan.get("elastic")
        count = plan.get("nodes")
        if isinstance(bounds, list) and len(bounds) == 2:  # nodes join and leave: say how many run now
            count = f"{sum(n['state'] in ('starting', 'running') for n in job.nodes)} running, elastic {bounds[0]}:{bounds[1]}"
        say(
            f"  nodes: {count} ({plan.get('launcher')}, {plan.get('nproc_per_node')} per node, "
            f"master {plan.get('master_addr')}:{plan.get('master_port')})"
        )
        pool = plan.get("pool")
        if isinstance(pool, list) and pool:
            say(f"  pool: {', '.join(map(str, pool))}")
    if first.get("restart_of"):
        say(f"  restart of: {first['restart_of']}")
    for line in managed_lines(job.id):
        say(line)
    resized = first.get("resized_from")
    if isinstance(resized, dict):
        say(f"  resized from: {resized.get('job')} ({resized.get('nodes')} nodes)")
    for line in pace_text.nodes_table(job):
        say(line)
    if job.stalled and not job.ended:
        say(f"  stalled: {job.stalled}")
        if job.likely_hang:
            say(f"  likely hang: {job.likely_hang.why}")
        say(f"  its stacks: gpudeck dump {job.id}")  # issue 34: one command away
    for found in job.stragglers:
        say(f"  straggler: {found.why}")
    if job.why:
        say(f"  why: {job.why}")
    for line in advice_lines(job.advice):  # the seeds' troubleshooting, from evidence (issue 34)
        say(line)
    if job.ending_node.get("reason"):
        say(f"  stopped by: {job.ending_node['reason']}")
    notice = job.ending_node.get("notice")
    if isinstance(notice, dict):  # a spot preemption notice ended it (remote_agent/preempt/)
        say(
            f"  preemption notice: {notice.get('provider')} {notice.get('action')}, host goes at {notice.get('time')}"
        )
    held = held_until(job.nodes)
    if held:
        say(f"  {held_text(held)}: `gpudeck ssh {job.id}` to look, `gpudeck stop {job.id}` to let it go")
    for line in job.gpus_held:
        say(f"  ! {line}")
    for freed in job.to_json()["gpus_freed"] or []:
        say(f"  GPU freed: {freed_text(freed)}")
    malformed = job.to_json()["malformed"]
    if malformed:
        say(f"  malformed journal records skipped: {malformed}")
    dropped = job.to_json()["output_dropped"]
    if dropped:
        say(f"  output dropped by the output cap: {dropped:,} bytes (logs marks the gap)")
    if first.get("tail"):
        say("  last output:")
        for line in first["tail"][-10:]:
            say(f"    {line}")
    return 0


def slurm_line(slurm: dict[str, object]) -> str:
    state = f"{slurm.get('state')}" + (f" ({slurm['reason']})" if slurm.get("reason") else "")
    start = (
        f", expected start {slurm['start']}" if slurm.get("state") == "PENDING" and slurm.get("start") else ""
    )
    nodes = f" on {slurm['nodes']}" if slurm.get("nodes") else ""
    return f"  slurm: job {slurm.get('job_id')} {state}{start}{nodes}; script {slurm.get('script')}"
