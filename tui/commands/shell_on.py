"""`gpudeck ssh JOB|HOST [--node K] [-- CMD…]`: a shell (or CMD) on a job's node, in its working
directory, with its job variables (GPUDECK_JOB_ID, GPUDECK_NODE, the GPUs it was given — never the
values of its --env/--env-file, which stay with the job), over the host's SSH connection as gpudeck
resolves it (jump hosts, ProxyCommand, keys). A host name instead of a job: a login shell there.
A Slurm job's node is a compute node the client never reaches: the shell is a step inside the job's
allocation, `srun --jobid=ID --overlap` run on the login node (--relative picks the node)."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys

from ..actions.find import resolve
from ..errors import EXIT_USAGE, GpudeckError
from ..session import LOCAL, Session, ssh_connection


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ssh",
        help="a shell (or a command) on a job's node, in its working directory",
        description="Interactive: a PTY over the host's SSH connection. With `-- CMD`: runs CMD there, "
        "prints its output and exits with its status. The job's --env values are not set (they stay "
        "with the job); GPUDECK_JOB_ID, GPUDECK_NODE and the GPUs it was given (--gpus) are.",
    )
    p.add_argument("target", metavar="JOB|HOST", help="a job (id, prefix or name) or a host of hosts.toml")
    p.add_argument("--node", default="0", metavar="K", help="the job's node (default 0)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD", help="run CMD instead of a shell")


def job_lines(job_id: str, node: dict[str, object]) -> tuple[str | None, dict[str, str]]:
    """(the node's working directory, the variables a shell there gets)."""
    env = {"GPUDECK_JOB_ID": job_id, "GPUDECK_NODE": str(node.get("node", "0"))}
    assigned = node.get("gpus_assigned")
    if isinstance(assigned, dict) and isinstance(assigned.get("indices"), list):
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in assigned["indices"])
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    workdir = node.get("workdir")
    return (workdir if isinstance(workdir, str) else None), env


def remote_command(workdir: str | None, env: dict[str, str], command: list[str]) -> str:
    """One shell line: every word quoted (a hostile dir or argument stays a word)."""
    parts = []
    if workdir:
        parts.append(f"cd -- {shlex.quote(workdir)} || exit 1")
    parts += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    parts.append(f"exec {shlex.join(command)}" if command else 'exec "${SHELL:-/bin/sh}" -l')
    return "; ".join(parts)


def slurm_step(slurm_id: str, node: str, line: str, interactive: bool) -> str:
    """The login node's line for `line` as a step of Slurm job `slurm_id` on the job's node `node`
    (its index in the allocation: one srun task per node, in order). --overlap: the step shares the
    CPUs and GPUs the job's own steps hold, instead of waiting for them."""
    relative = node if node.isdigit() else "0"
    argv = ["srun", f"--jobid={slurm_id}", "--overlap", "--nodes=1", "--ntasks=1", f"--relative={relative}"]
    argv += ["--pty"] if interactive else ["--quiet"]
    return shlex.join([*argv, "bash", "-c", line])


def run(args: argparse.Namespace, session: Session) -> int:
    from ..remote.shell import run_remote

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    env: dict[str, str] = {}
    workdir: str | None = None
    slurm_id: str | None = None
    if args.target in session.hosts():
        host = args.target
    else:
        job = resolve(session, args.target)
        node = next((n for n in job.nodes if str(n.get("node")) == args.node), None)
        if node is None:
            have = ", ".join(str(n.get("node")) for n in job.nodes)
            raise GpudeckError(f"ssh: job {job.id} has no node {args.node!r} (nodes: {have})", EXIT_USAGE)
        host = str(node["host"])
        workdir, env = job_lines(job.id, node)
        slurm = job.to_json().get("slurm")
        if isinstance(slurm, dict) and slurm.get("job_id"):
            slurm_id = str(slurm["job_id"])
            if job.ended:
                raise GpudeckError(f"ssh: job {job.id} has {job.state}: its Slurm allocation is gone")
    interactive = not command and sys.stdin.isatty() and sys.stdout.isatty()
    if not command and not interactive:
        raise GpudeckError(
            "ssh: no terminal here for a shell: give a command (gpudeck ssh JOB -- CMD)", EXIT_USAGE
        )
    if host == LOCAL:
        line = remote_command(workdir, env, command)
        return subprocess.run(["sh", "-c", line], env=dict(os.environ)).returncode
    line = remote_command(workdir, env, command)
    if slurm_id is not None:
        line = slurm_step(slurm_id, args.node, line, interactive)
    conn = ssh_connection(host, session.settings)
    try:
        return run_remote(conn, line, interactive)
    finally:
        conn.close()
