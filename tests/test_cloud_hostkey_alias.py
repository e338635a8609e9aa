"""A cloud host's key is known by its instance id (hosts.toml `host_key_alias`), not by its address,
which changes on every start: the real sshd on 127.0.0.1, gpudeck's own known_hosts."""

from __future__ import annotations

import pytest

from tests.support.sshd import SshHome, host_key_line
from tui.hosts_file import set_host_fields
from tui.remote.hostkey_errors import HostKeyUnknown
from tui.session import transport_for


def connect(name: str) -> None:
    transport = transport_for(name)
    try:
        transport.connect()  # type: ignore[attr-defined]
    finally:
        transport.close()


def test_the_key_is_looked_up_under_the_alias(ssh_home: SshHome) -> None:
    port = ssh_home.server.port
    ssh_home.add_host("cloudbox", target=f"root@127.0.0.1:{port}")
    set_host_fields("cloudbox", {"host_key_alias": "i-0abc"})
    known = ssh_home.gpudeck_home / "known_hosts"
    known.write_text(host_key_line(ssh_home.server))  # trusted under the address only
    with pytest.raises(HostKeyUnknown):
        connect("cloudbox")
    # under the instance id, as ssh stores a HostKeyAlias: the bare alias, no [alias]:port
    kind, blob = host_key_line(ssh_home.server).split()[1:3]
    known.write_text(f"i-0abc {kind} {blob}\n")
    connect("cloudbox")
