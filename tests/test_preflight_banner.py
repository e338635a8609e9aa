"""The pre-flight awaits a banner only from its own listener: a port the running job holds (its
rendezvous store, before an elastic join or a resize) sends none, and waiting for one cost 1 s per
connect (3 s of every elastic `scale +1`; bench/bench_scale.py --elastic)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.waiting import wait_for
from tui.actions.nodes import plan
from tui.actions.options import LaunchOptions
from tui.actions.preflight import preflight
from tui.errors import GpudeckError
from tui.remote.client import AgentClient, AgentError


@pytest.fixture
def silent_holder() -> Iterator[tuple[int, list[bytes]]]:
    """A listening port that accepts and never writes (as torch's TCPStore does to a stranger);
    what each connection sent before its peer closed it is recorded."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    got: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                got.append(conn.recv(64))  # b"": the prober closed without waiting for us

    threading.Thread(target=serve, daemon=True).start()
    yield int(srv.getsockname()[1]), got
    srv.close()


def test_a_probe_without_banner_reaches_a_silent_holder_and_reports_no_token(
    client: AgentClient, silent_holder: tuple[int, list[bytes]]
) -> None:
    port, got = silent_holder
    answer = client.request("probe", addr="127.0.0.1", port=port, count=3, banner=False)
    assert (
        answer["reachable"] and answer["error"] is None and answer["token"] is None and answer["rtt_ms"] >= 0
    )
    wait_for(lambda: len(got) == 3, timeout=10, what="the holder to see the three connects end")
    assert got == [b"", b"", b""]  # each closed by the prober, which sent nothing
    with pytest.raises(AgentError, match="banner: expected true or false, got 'no'"):
        client.request("probe", addr="127.0.0.1", port=port, banner="no")


class Answers:
    """The Agents protocol: the master's port is held (or not) by the job; probes are recorded."""

    def __init__(self, held: bool) -> None:
        self.held = held
        self.probes: list[dict[str, Any]] = []

    def hosts(self) -> list[str]:
        return ["local"]

    def notice(self, line: str) -> None:
        pass

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        if op == "listen":
            if self.held:
                raise GpudeckError(f"{host}: port {args['port']} is not free on this host")
            return {"port": args["port"], "token": "t0k", "seconds": args["seconds"]}
        if op == "unlisten":
            return {"was_listening": True}
        assert op == "probe", op
        self.probes.append(args)
        token = None if self.held or not args.get("banner", True) else "t0k"
        return {
            "reachable": True,
            "error": None,
            "rtt_ms": 0.05,
            "token": token,
            "local_addr": "127.0.0.1",
            "iface": "lo",
        }


@pytest.mark.parametrize(
    ("held", "banner"), [(True, False), (False, True)], ids=["job-holds-port", "our-listener"]
)
def test_the_preflight_awaits_a_banner_only_from_its_own_listener(held: bool, banner: bool) -> None:
    plans = plan(LaunchOptions(argv=("sleep", "300"), nodes=2, launcher="none", master_port=29555))
    agents = Answers(held)
    preflight(agents, plans, held_by_job=held)
    assert [p["banner"] for p in agents.probes] == [banner]  # one host: one probe
