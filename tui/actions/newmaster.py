"""A restart-mode resize that drops node 0 (its host unreachable): the new node 0 runs on a host
that survived, so the master address and port the others rendezvous at must be that host's, not
the lost one's. The address is the one the new master's host has on its route to the old master
(the network the nodes shared), the port one free there; the pre-flight then checks both again."""

from __future__ import annotations

from .agents import Agents


def moved_master(agents: Agents, host: str, old_addr: str, old_port: int) -> tuple[str, int]:
    """(address, port) for node 0 on `host`. The old address is kept when `host` cannot say its
    route (the pre-flight then refuses it, naming the node, if it is wrong)."""
    route = agents.request(host, "probe", timeout=30.0, addr=old_addr, port=old_port, count=1)
    addr = route.get("local_addr") if isinstance(route, dict) else None
    held = agents.request(host, "listen", port=0, seconds=5)  # a port free there now (the kernel's pick)
    port = int(held["port"])
    agents.request(host, "unlisten", port=port)
    return (str(addr) if isinstance(addr, str) and addr else old_addr), port
