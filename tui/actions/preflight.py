"""Pre-flight of a multi-node job, before it starts (launch) or restarts (scale), from the seeds'
troubleshooting guide: the master port reachable from every node, each node's round trip to the
master (NCCL wants < 2 ms), torch/CUDA/NCCL the same on every node, and the interface that carries
the master address (NCCL_SOCKET_IFNAME). The agents do the probing (ops listen/probe/versions,
remote_agent/PROTOCOL.md); this module asks them and decides. A refusal is one line naming the
node and the reason; the rest becomes notices and the hints an NCCL timeout's cause carries.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..errors import GpudeckError
from .agents import Agents
from .nodes import NodePlan

RTT_WARN_MS = 2.0  # the guide's rule for NCCL over TCP
LISTEN_S = 60.0  # the master port is held at most this long if the client dies mid-check
VERSIONS_TIMEOUT = 120.0
_VERSION_KEYS = ("torch", "cuda", "nccl")


@dataclass(frozen=True)
class Checked:
    hints: tuple[str, ...]  # kept in the spec: an NCCL timeout's cause repeats them
    rtt_ms: dict[str, float]  # node (rank) on another host than the master -> median round trip
    ifaces: dict[str, str]  # host -> interface carrying the master address


@dataclass(frozen=True)
class Env:
    """Where the job's interpreter runs on a host: what a spec says (setup lines, PATH, workdir)."""

    setup: tuple[str, ...] = ()
    path: str | None = None
    workdir: str | None = None


def preflight(
    agents: Agents,
    plans: list[NodePlan],
    envs: dict[str, Env] | None = None,
    job_env: frozenset[str] = frozenset(),
    held_by_job: bool = False,
) -> Checked:
    """Refuse (GpudeckError) or return what was learnt. `envs` (host -> Env) asks for versions;
    `job_env`: the variables the job sets (no NCCL_SOCKET_IFNAME advice when it sets one);
    `held_by_job`: the running job being resized may hold the master port itself (then a busy
    port is probed as it is, without a listener of ours)."""
    mn = plans[0].multinode
    addr, port, master = mn.master_addr, mn.master_port, plans[0].host
    first: dict[str, str] = {}  # host -> its first node's rank (one probe per host)
    for p in plans:
        first.setdefault(p.host, p.node)
    # versions take a torch import per host (seconds): asked alongside the network checks, on a
    # daemon thread so that a refusal from those is not held up (nor is the process's exit)
    versions = _Background(lambda: _ask_versions(agents, plans, first, envs)) if envs else None
    token = None
    try:
        token = agents.request(master, "listen", port=port, seconds=LISTEN_S)["token"]
    except GpudeckError as exc:
        if not held_by_job:
            raise GpudeckError(
                f"pre-flight: node 0 on {master}: master port {port}: {_bare(exc, master)}"
            ) from None
    try:
        # no listener of ours (the job holds the port): nothing will send a banner, so none is awaited
        probes = _each(
            first,
            lambda h: agents.request(
                h, "probe", timeout=30.0, addr=addr, port=port, count=3, banner=token is not None
            ),
        )
    finally:
        if token is not None:
            with contextlib.suppress(GpudeckError):
                agents.request(master, "unlisten", port=port)
    for host, rank in first.items():
        got = probes[host]
        where = f"pre-flight: node {rank} on {host}"
        if isinstance(got, GpudeckError):
            raise GpudeckError(f"{where}: {_bare(got, host)}") from None
        if not got.get("reachable"):
            raise GpudeckError(f"{where} cannot reach the master at {addr}:{port}: {got.get('error')}")
        if token is not None and got.get("token") != token:
            raise GpudeckError(
                f"{where}: {addr}:{port} answers, but not from node 0's host {master}: "
                "is --master-addr that host's address?"
            )
    rtt = {
        first[h]: float(probes[h]["rtt_ms"])
        for h in first
        if h != master and probes[h].get("rtt_ms") is not None
    }
    ifaces = {h: str(probes[h]["iface"]) for h in first if probes[h].get("iface")}
    hints = _hints(addr, rtt, ifaces, first, "NCCL_SOCKET_IFNAME" in job_env)
    for line in hints:
        if len(first) > 1:  # nodes on one host talk over loopback and shared memory: nothing to advise
            agents.notice(f"pre-flight: {line}")
    if versions is not None:
        _same_versions(plans, first, versions.result())
    return Checked(tuple(hints), rtt, ifaces)


class _Background:
    """fn() on a daemon thread; result() waits for it (re-raising what it raised)."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn
        self._out: Any = None
        self._err: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="preflight-versions", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._out = self._fn()
        except BaseException as exc:  # handed to result()
            self._err = exc

    def result(self) -> Any:
        self._thread.join()
        if self._err is not None:
            raise self._err
        return self._out


def _hints(
    addr: str, rtt: dict[str, float], ifaces: dict[str, str], first: dict[str, str], ifname_set: bool
) -> list[str]:
    hints = [
        f"node {rank}'s round trip to the master is {ms:.2f} ms (NCCL wants < {RTT_WARN_MS:g} ms)"
        for rank, ms in sorted(rtt.items())
        if ms > RTT_WARN_MS
    ]
    names = sorted(set(ifaces.values()))
    if names and not ifname_set:
        on = (
            "every node"
            if len(ifaces) == len(first) and len(names) == 1
            else ", ".join(f"{first[h]}: {i}" for h, i in sorted(ifaces.items(), key=lambda x: first[x[0]]))
        )
        hints.append(f"NCCL_SOCKET_IFNAME={','.join(names)} carries {addr} ({on})")
    return hints


def _ask_versions(
    agents: Agents, plans: list[NodePlan], first: dict[str, str], envs: dict[str, Env]
) -> dict[str, Any] | None:
    """host -> the `versions` answer (or the refusal) of the job's interpreter; None when the
    command is not a Python one (which interpreter it uses is its own business)."""
    python = plans[0].multinode.command[0]
    if not os.path.basename(python).startswith("python"):
        return None

    def ask(host: str) -> Any:
        env = envs.get(host, Env())
        return agents.request(
            host,
            "versions",
            timeout=VERSIONS_TIMEOUT,
            python=python,
            setup=list(env.setup),
            path=env.path,
            workdir=env.workdir,
        )

    return _each(first, ask)


def _same_versions(plans: list[NodePlan], first: dict[str, str], answers: dict[str, Any] | None) -> None:
    """torch/CUDA/NCCL equal on every host (a torchrun job needs torch)."""
    if answers is None:
        return
    python = plans[0].multinode.command[0]
    seen: list[tuple[str, str, dict[str, Any]]] = []
    for host, rank in first.items():
        got = answers[host]
        if isinstance(got, GpudeckError):
            raise GpudeckError(f"pre-flight: node {rank} on {host}: {_bare(got, host)}") from None
        if got.get("torch") is None and plans[0].multinode.launcher == "torchrun":
            raise GpudeckError(
                f"pre-flight: node {rank} on {host}: {python} cannot import torch "
                f"({got.get('error') or 'not installed'}): torchrun needs it"
            )
        seen.append((host, rank, got))
    host0, rank0, v0 = seen[0]
    for host, rank, v in seen[1:]:
        if any(v.get(k) != v0.get(k) for k in _VERSION_KEYS):
            raise GpudeckError(
                f"pre-flight: node {rank} on {host} has {_versions(v)}, node {rank0} on {host0} has "
                f"{_versions(v0)}: every node needs the same"
            )


def _versions(v: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v.get(k) or 'none'}" for k in _VERSION_KEYS)


def _each(hosts: dict[str, str], ask: Any) -> dict[str, Any]:
    """ask(host) on every host in parallel; a refusal is returned, not raised."""

    def safe(host: str) -> Any:
        try:
            return ask(host)
        except GpudeckError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts)))) as pool:
        return dict(zip(hosts, pool.map(safe, hosts), strict=True))


def _bare(exc: GpudeckError, host: str) -> str:
    """The agent's reason without the `host: ` the session puts before it (we name the node)."""
    text = str(exc)
    return text[len(host) + 2 :] if text.startswith(f"{host}: ") else text
