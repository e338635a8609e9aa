"""A first sync to an empty code store pushes (tui/sync/push.py): blobs go ahead of their manifest
as the client hashes them, each verified by the host, the exec bit from the record; the sync that
follows finds the snapshot there."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from remote_agent.codestore.receive import EXEC_HINT
from remote_agent.codestore.store import CodeStore
from tui.actions.sync import sync_directory
from tui.remote.client import AgentClient
from tui.session import Session
from tui.sync.options import SyncOptions

pytestmark = pytest.mark.slow  # real agents and a CLI session pushing and relaying snapshots


def _frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack(">I", len(payload)) + payload


def _answer(stream: Any) -> dict[str, Any]:
    (n,) = struct.unpack(">I", stream.read_exactly(4))
    return dict(json.loads(stream.read_exactly(n)))


def _record(data: bytes, exec_bit: bool = False, damaged: bool = False) -> bytes:
    sha = hashlib.sha256(data).hexdigest()
    size = len(data) | (EXEC_HINT if exec_bit else 0)
    return sha.encode() + struct.pack(">Q", size) + (b"X" * len(data) if damaged else data)


def _manifest(files: dict[str, tuple[bytes, bool]]) -> bytes:
    entries = [[p, "f", int(x), len(b), hashlib.sha256(b).hexdigest()] for p, (b, x) in sorted(files.items())]
    return json.dumps({"version": 1, "entries": entries}, separators=(",", ":")).encode()


def test_pushed_blobs_before_the_manifest_are_stored_with_their_mode(
    client: AgentClient, agent_dir: Path
) -> None:
    files = {"a.py": (b"print('a')\n" * 50, False), "run.sh": (b"#!/bin/sh\necho hi\n", True)}
    assert client.request("code_have", snapshot=None)["empty"] is True
    stream = client.open_stream(["receive"])
    z = zlib.compressobj(1)
    pushed = z.compress(_record(files["a.py"][0])) + z.flush(zlib.Z_SYNC_FLUSH)
    stream.write(_frame(b"z", pushed) + _frame(b"r", _record(files["run.sh"][0], exec_bit=True)))
    manifest = _manifest(files)
    stream.write(_frame(b"M", zlib.compress(manifest)))
    asked = _answer(stream)
    assert asked["need"] == [] and not asked["have"]  # everything came ahead of the manifest
    stream.write(_frame(b"e", b""))
    done = _answer(stream)
    stream.finish()
    assert done["received"] == 2 and done["files"] == 2
    store = CodeStore(agent_dir)
    run_sha = hashlib.sha256(files["run.sh"][0]).hexdigest()
    assert os.stat(store.blob(run_sha, True)).st_mode & 0o777 == 0o555  # written as the exec variant
    assert not store.blob(run_sha).exists()  # no copy needed
    assert store.read_snapshot(hashlib.sha256(manifest).hexdigest()) == manifest
    assert client.request("code_have", snapshot=None)["empty"] is False


def test_a_damaged_pushed_blob_is_refused(client: AgentClient, agent_dir: Path) -> None:
    stream = client.open_stream(["receive"])
    stream.write(_frame(b"r", _record(b"some code\n", damaged=True)))
    assert "damaged" in _answer(stream)["error"]
    status, _ = stream.finish()
    assert status == 1
    assert CodeStore(agent_dir).is_empty()


class Recording:
    """The real session, its requests and streams noted."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.streams = 0

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        self.asked.append((op, args))
        return self.session.request(host, op, timeout=timeout, **args)

    def stream(self, host: str, argv: list[str]) -> Any:
        self.streams += 1
        return self.session.stream(host, argv)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


def test_a_first_sync_pushes_and_the_next_finds_the_snapshot(gpudeck_home: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    for i in range(30):
        (src / "pkg" / f"m{i}.py").write_text(f"x = {i}\n" * 40)
    (src / "same.py").write_text("x = 0\n" * 40)  # m0.py's bytes: sent once
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o755)
    (src / "big.bin").write_bytes(os.urandom(5 << 20))  # over push.SMALL: hashed, then streamed raw
    session = Session()
    try:
        agents = Recording(session)
        snap, (first,) = sync_directory(agents, SyncOptions(str(src)), ["local"])  # type: ignore[arg-type]
        assert [args.get("snapshot", "?") for op, args in agents.asked if op == "code_have"] == [None]
        assert agents.streams == 1 and not first.already
        assert first.files == 33 and first.sent_files == 32  # same.py = m0.py
        store = CodeStore(gpudeck_home / "local-agent")
        assert store.read_snapshot(snap.id) == snap.manifest
        entries = {e[0]: e for e in json.loads(snap.manifest)["entries"]}
        assert entries["run.sh"][2] == 1 and store.blob(entries["run.sh"][4], True).exists()
        assert store.blob(entries["big.bin"][4]).read_bytes() == (src / "big.bin").read_bytes()

        agents = Recording(session)
        again, (second,) = sync_directory(agents, SyncOptions(str(src)), ["local"])  # type: ignore[arg-type]
        assert again.id == snap.id and second.already and agents.streams == 0
        assert [args.get("snapshot") for op, args in agents.asked] == [snap.id]  # hashes cached: no push
    finally:
        session.close()


def test_a_snapshot_relays_from_one_store_to_another(gpudeck_home: Path, tmp_path: Path) -> None:
    from tui.remote.transport import LocalTransport
    from tui.sync.relay import relay

    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text("print('one')\n" * 30)
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o755)
    (src / "blob.bin").write_bytes(os.urandom(300 << 10))  # does not compress: raw frames
    session = Session()
    try:
        snap, _ = sync_directory(session, SyncOptions(str(src)), ["local"])
    finally:
        session.close()
    (src / "a.py").write_text("print('two')\n")  # the local tree moves on: the relay does not read it
    other = tmp_path / "other-agent"
    old, new = AgentClient(LocalTransport(gpudeck_home / "local-agent")), AgentClient(LocalTransport(other))
    old.connect()
    new.connect()
    try:
        up = relay(old.open_stream(["code_send", snap.id]), new.open_stream(["receive"]), snap.id, "a", "b")
        assert up.sent_files == 3 and not up.had_snapshot
        assert new.request("code_have", snapshot=snap.id)["have"] is True
        store = CodeStore(other)
        entries = {e[0]: e for e in json.loads(snap.manifest)["entries"]}
        assert store.blob(entries["a.py"][4]).read_bytes() == b"print('one')\n" * 30
        assert store.blob(entries["run.sh"][4], True).exists()
        assert store.blob(entries["blob.bin"][4]).stat().st_size == 300 << 10
        missing = old.open_stream(["code_send", "0" * 64])  # a snapshot the host lacks: one line
        head = missing.read_exactly(5)
        assert head[:1] == b"!" and b"not on this host" in missing.read_exactly(
            struct.unpack(">I", head[1:])[0]
        )
        assert missing.finish()[0] == 1
    finally:
        old.close()
        new.close()
