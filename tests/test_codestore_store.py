"""The host's code store (remote_agent/codestore): `receive` takes only verified blobs and writes the
manifest last; unsafe manifests are refused; materialize links the snapshot into the work dir,
keeping the job's own files; `code_gc` keeps what live jobs and recent syncs use."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import zlib
from pathlib import Path

import pytest

from remote_agent.codestore.materialize import materialize
from remote_agent.codestore.store import CodeStore
from remote_agent.prepare.entry import PrepareError
from remote_agent.spec import Code
from tests.support.jobs import launch, wait_state
from tui.remote.client import AgentClient

pytestmark = pytest.mark.slow  # real agents storing, materializing and collecting snapshots

HOME = "20261205-000000-abcdef"


def _manifest(
    files: dict[str, bytes], links: dict[str, str] | None = None, exec_: frozenset[str] = frozenset()
) -> bytes:
    entries: list[list[object]] = [
        [p, "f", int(p in exec_), len(b), hashlib.sha256(b).hexdigest()] for p, b in files.items()
    ]
    entries += [[p, "l", t] for p, t in (links or {}).items()]
    entries.sort(key=lambda e: str(e[0]).encode("utf-8", "surrogateescape"))
    return json.dumps({"version": 1, "entries": entries}, separators=(",", ":")).encode()


def _frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack(">I", len(payload)) + payload


def _answer(stream) -> dict:  # type: ignore[no-untyped-def]
    (n,) = struct.unpack(">I", stream.read_exactly(4))
    return json.loads(stream.read_exactly(n))


def _receive(
    client: AgentClient, manifest: bytes, blobs: dict[str, bytes], damage: bool = False
) -> tuple[dict, dict]:
    stream = client.open_stream(["receive"])
    stream.write(_frame(b"M", zlib.compress(manifest)))
    asked = _answer(stream)
    if "error" in asked:
        stream.finish()
        return asked, {}
    records = b"".join(
        sha.encode() + struct.pack(">Q", len(blobs[sha])) + (b"X" * len(blobs[sha]) if damage else blobs[sha])
        for sha in asked["need"]
    )
    half = len(records) // 2  # one half through zlib, one raw: both kinds of frame
    z = zlib.compressobj(1)
    stream.write(
        _frame(b"z", z.compress(records[:half]) + z.flush(zlib.Z_SYNC_FLUSH)) + _frame(b"r", records[half:])
    )
    stream.write(_frame(b"e", b""))
    done = _answer(stream)
    stream.finish()
    return asked, done


def _by_sha(files: dict[str, bytes]) -> dict[str, bytes]:
    return {hashlib.sha256(b).hexdigest(): b for b in files.values()}


def test_receive_stores_each_blob_once_and_the_manifest_last(client: AgentClient, agent_dir: Path) -> None:
    files = {"a.py": b"print(1)\n", "b.py": b"print(1)\n", "run.sh": b"#!/bin/sh\n", "empty": b""}
    manifest = _manifest(files, {"link.py": "a.py"}, exec_={"run.sh"})
    sid = hashlib.sha256(manifest).hexdigest()
    assert client.request("code_have", snapshot=sid) == {"snapshot": sid, "have": False}
    asked, done = _receive(client, manifest, _by_sha(files))
    assert asked["snapshot"] == sid and not asked["have"] and len(asked["need"]) == 3  # a.py = b.py
    assert done == {"snapshot": sid, "files": 5, "bytes": 28, "received": 3, "received_bytes": 19}
    store = CodeStore(agent_dir)
    exe = store.blob(hashlib.sha256(b"#!/bin/sh\n").hexdigest(), True)
    assert exe.stat().st_mode & 0o777 == 0o555
    assert store.blob(hashlib.sha256(b"print(1)\n").hexdigest()).stat().st_mode & 0o777 == 0o444
    assert client.request("code_have", snapshot=sid)["have"]
    # the same tree again: nothing asked for
    asked, done = _receive(client, manifest, {})
    assert asked["have"] and asked["need"] == [] and done["received"] == 0
    # one file changed: only its blob
    files["a.py"] = b"print(2)\n"
    asked, _ = _receive(client, _manifest(files), _by_sha(files))
    assert asked["need"] == [hashlib.sha256(b"print(2)\n").hexdigest()]


def test_a_damaged_blob_and_unsafe_manifests_are_refused(client: AgentClient, agent_dir: Path) -> None:
    files = {"a.py": b"data\n"}
    manifest = _manifest(files)
    _, done = _receive(client, manifest, _by_sha(files), damage=True)
    assert "arrived damaged" in done["error"]
    assert not client.request("code_have", snapshot=hashlib.sha256(manifest).hexdigest())["have"]
    assert list((agent_dir / "code" / "tmp").iterdir()) == []  # no half blob left
    for bad, said in (
        (_manifest({"../up.py": b"x"}), "unsafe path"),
        (_manifest({"/abs.py": b"x"}), "unsafe path"),
        (_manifest({}, {"l": "../../etc"}), "outside the tree"),
        (_manifest({"a": b"x", "a/b": b"y"}), "lies below"),
    ):
        asked, _ = _receive(client, bad, {})
        assert said in asked["error"], (said, asked)


def _stored(client: AgentClient, files: dict[str, bytes], links: dict[str, str] | None = None) -> Code:
    manifest = _manifest(files, links)
    _receive(client, manifest, _by_sha(files))
    return Code(snapshot=hashlib.sha256(manifest).hexdigest(), home=HOME)


def test_materialize_links_the_snapshot_and_keeps_the_jobs_files(
    client: AgentClient, agent_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    first = _stored(client, {"a.py": b"one\n", "old.py": b"old\n", "pkg/m.py": b"m\n"}, {"l.py": "a.py"})
    materialize(agent_dir, first, work)
    assert (work / "a.py").read_bytes() == b"one\n" and os.readlink(work / "l.py") == "a.py"
    blob = CodeStore(agent_dir).blob(hashlib.sha256(b"m\n").hexdigest())
    assert (work / "pkg" / "m.py").stat().st_ino == blob.stat().st_ino  # a link, no copy
    if os.geteuid() != 0:  # root writes through any mode
        with pytest.raises(PermissionError):
            (work / "a.py").write_bytes(b"a job writing into a blob")
    (work / "checkpoint.pt").write_bytes(b"the job's")
    (work / "a.py").unlink()
    (work / "a.py").write_bytes(b"edited on the host\n")
    second = _stored(client, {"a.py": b"one\n", "pkg/m.py": b"m\n", "new.py": b"new\n"})
    materialize(agent_dir, second, work)
    out = capsys.readouterr().out
    assert f"[gpudeck] code {second.snapshot[:12]}: 3 files" in out and "1 kept" in out
    assert (work / "a.py").read_bytes() == b"one\n"  # put right
    assert not (work / "old.py").exists() and not (work / "l.py").exists()  # the earlier snapshot's
    assert (work / "checkpoint.pt").read_bytes() == b"the job's"  # the job's own stays
    with pytest.raises(PrepareError, match="not on this host"):
        materialize(agent_dir, Code(snapshot="ab" * 32, home=HOME), work)


def test_gc_keeps_live_and_recent_snapshots(client: AgentClient, agent_dir: Path, workdir: Path) -> None:
    live = _stored(client, {"shared.py": b"s\n", "live.py": b"live\n"})
    old = _stored(client, {"shared.py": b"s\n", "old.py": b"old\n"})
    job = launch(client, workdir, ["sleep", "60"], code=live.to_wire())
    wait_state(client, job["id"], {"running"})
    store = CodeStore(agent_dir)
    for sid in (live.snapshot, old.snapshot):
        os.utime(store.snapshot(sid), (1, 1))  # used long ago
    done = client.request("code_gc", keep_days=1)
    assert done["snapshots_removed"] == 1 and done["live"] == 1 and done["blobs_removed"] == 1
    assert client.request("code_have", snapshot=live.snapshot)["have"]
    assert not client.request("code_have", snapshot=old.snapshot)["have"]
    assert store.blob(hashlib.sha256(b"s\n").hexdigest()).exists()  # the live one names it
    client.request("kill", job=job["id"], node="0", timeout=60)
    os.utime(store.snapshot(live.snapshot), (1, 1))
    assert client.request("code_gc", keep_days=1)["snapshots_removed"] == 1
    with pytest.raises(Exception, match="spec.code.snapshot: not on this host"):
        launch(client, workdir, ["true"], code=live.to_wire())
