"""Byte streams to an agent subcommand (tui/remote/agent_stream.py): the same bytes arrive over a
local pipe and over a channel of the host's SSH connection while serve's requests go on beside it,
and a subcommand that fails says its status and last line."""

from __future__ import annotations

import json

import pytest

from tests.support.sshd import SshHome
from tui.remote.client import AgentClient, AgentError
from tui.remote.reconnect import ReconnectingClient
from tui.session import transport_for


def _hello_over(stream_owner: AgentClient | ReconnectingClient) -> dict:
    with stream_owner.open_stream(["hello", "--stream"]) as stream:
        hello = json.loads(stream.readline())
        status, last = stream.finish()
    assert (status, last) == (0, "")
    return hello


def test_a_local_stream_carries_the_subcommands_bytes(client: AgentClient) -> None:
    assert _hello_over(client)["hostname"]
    # A stream subcommand's first line is its marker: chatter before it (a login shell's) is skipped.
    with pytest.raises(AgentError, match=r"ended before it began \(status 2\): .*invalid choice"):
        client.open_stream(["no-such-subcommand"])  # argparse's one line, not a hang


@pytest.mark.slow  # a real sshd and an agent deploy
def test_a_stream_over_ssh_shares_the_connection_with_serve(ssh_home: SshHome) -> None:
    ssh_home.trust()
    ssh_home.add_host()
    client = ReconnectingClient("box", lambda: transport_for("box"))
    client.connect(timeout=60)
    try:
        hello = _hello_over(client)  # the fixture's login shell prints a line first: skipped
        assert hello["agent_dir"] == str(ssh_home.agent_dir)  # --agent-dir reached the subcommand
        assert client.request("ping")["time"] > 0  # serve's channel is untouched by the stream's
        before = len(client.request("jobs")["jobs"])
        assert _hello_over(client)["hostname"] == hello["hostname"]  # a second stream, same login
        assert len(client.request("jobs")["jobs"]) == before
    finally:
        client.close()
