"""NCCL errors and timeouts: the line that said it (the client names the node that printed it
first), the variables the seeds set to debug it (troubleshooting 5.2: NCCL_DEBUG=INFO,
NCCL_SOCKET_IFNAME, NCCL_IB_DISABLE=1) unless the job sets them already, and the round trips the
multi-node pre-flight measured between the agents against the seeds' bar (under 2 ms)."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping

NCCL = re.compile(
    r"NCCL WARN|Watchdog caught collective operation timeout|NCCL (?:error|timeout)|"
    r"nccl(?:SystemError|InternalError|UnhandledCudaError|RemoteError|InvalidUsage)|"
    r"NCCL communicator was aborted|ProcessGroupNCCL's watchdog"
)
# WARN lines a healthy run prints too (no network plugin installed: NCCL uses its own)
BENIGN = re.compile(r"NET/Plugin|[Pp]lugin.*not found|No plugin found")
LATENCY_BAR_MS = 2.0  # the seeds: the network latency between nodes should be under 2 ms
_IFACE = re.compile(r"NCCL_SOCKET_IFNAME=(\S+)")


def advice(line: str, spec: Mapping[str, Any]) -> Dict[str, Any]:
    mn: Dict[str, Any] = _object(spec.get("multinode"))
    env: Dict[str, Any] = _object(spec.get("env"))
    keys = set(env) | set(mn.get("env_keys") or [])
    hints = [h for h in (mn.get("hints") or []) if isinstance(h, str)]
    trips = [t for t in (mn.get("round_trips") or []) if isinstance(t, str)]
    evidence: Dict[str, Any] = {"line": line.strip()[:300], "node": str(mn.get("rank", 0))}
    if trips:
        evidence["round_trips"] = trips
    slow = [h for h in hints if "round trip" in h]
    if slow:
        evidence["slow_round_trips"] = slow
    iface = next((m.group(1) for m in map(_IFACE.search, hints) if m), None)
    out: List[str] = []
    if "NCCL_DEBUG" not in keys:
        out.append(
            "NCCL_DEBUG=INFO: NCCL then says which rank, transport and interface failed (--env NCCL_DEBUG=INFO)"
        )
    latency = "check the network latency between the nodes: it should be under %g ms" % LATENCY_BAR_MS
    if trips:
        latency += " (measured at launch: %s)" % "; ".join(trips)
    out.append(latency)
    if "NCCL_SOCKET_IFNAME" not in keys:
        out.append(
            "NCCL_SOCKET_IFNAME=%s: the interface that carries the master address, so NCCL does not pick a "
            "wrong one (docker0, a VPN)" % (iface or "eth0")
        )
    if "NCCL_IB_DISABLE" not in keys:
        out.append("NCCL_IB_DISABLE=1: rules InfiniBand out when it is missing or misconfigured")
    why = "NCCL error on node %s: %s" % (evidence["node"], evidence["line"][:120])
    return {"kind": "nccl", "why": why, "evidence": evidence, "remedies": out}


def _object(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}
