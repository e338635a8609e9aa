"""What a sync sends (tui/sync/walk.py, ignore.py, snapshot.py): git's ignore rules (nested
.gitignore files, negations, .git/info/exclude) plus .gpudeckignore, .git/ left out, the size
limit, exec bits, symlinks inside and outside, names that are not UTF-8; the hash cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from remote_agent.codestore.manifest import parse
from tui.sync.options import SyncError, SyncOptions, parse_size
from tui.sync.snapshot import take_snapshot
from tui.sync.walk import walk

BAD_NAME = b"caf\xe9-latin1.txt"  # not UTF-8


def _tree(root: Path) -> Path:
    files = {
        "train.py": "print('train')\n",
        ".gitignore": "*.log\n!keep.log\nbuild/\n/top-only.txt\n",
        "a.log": "ignored\n",
        "keep.log": "kept by the negation\n",
        "top-only.txt": "ignored at the top only\n",
        "build/out.o": "ignored dir\n",
        "pkg/__init__.py": "",
        "pkg/top-only.txt": "kept: the pattern is anchored to the top\n",
        "pkg/.gitignore": "*.tmp\n!important.log\n",
        "pkg/x.tmp": "ignored below pkg\n",
        "pkg/important.log": "re-included below pkg\n",
        "other/y.tmp": "not ignored here: pkg's rule is pkg's\n",
        ".gpudeckignore": "data/\n*.ckpt\n",
        "data/big.bin": "left out by .gpudeckignore\n",
        "model.ckpt": "left out\n",
        ".git/config": "[core]\n",
        ".git/info/exclude": "secret.txt\n",
        "secret.txt": "excluded by .git/info/exclude\n",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    (root / "run.sh").chmod(0o755)
    os.symlink("pkg/__init__.py", root / "inside.py")
    os.symlink("/etc/hostname", root / "pkg" / "outside")
    with open(os.path.join(os.fsencode(root), BAD_NAME), "wb") as f:
        f.write(b"bytes\n")
    return root


def _rels(root: Path, **kw: object) -> set[str]:
    return {f.rel for f in walk(SyncOptions(str(root), **kw))}  # type: ignore[arg-type]


def test_ignore_rules_follow_git(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    (root / "pkg" / "outside").unlink()  # the refusal has its own test
    got = _rels(root)
    assert {"train.py", "keep.log", "pkg/top-only.txt", "pkg/important.log", "other/y.tmp"} <= got
    assert {"run.sh", "inside.py", ".gitignore", "pkg/.gitignore", ".gpudeckignore"} <= got
    for left_out in ("a.log", "top-only.txt", "build/out.o", "pkg/x.tmp", "data/big.bin", "model.ckpt"):
        assert left_out not in got, left_out
    assert "secret.txt" not in got  # .git/info/exclude
    assert not any(r.startswith(".git/") for r in got)
    assert ".git/config" in _rels(root, include_git=True)


def test_exec_bits_links_and_non_utf8_names_reach_the_manifest(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    (root / "pkg" / "outside").unlink()
    snap = take_snapshot(SyncOptions(str(root)))
    entries = {e.path: e for e in parse(snap.manifest)}  # the agent's own reader accepts it
    assert entries[b"run.sh"].exec and not entries[b"train.py"].exec
    assert entries[b"inside.py"].kind == "l" and entries[b"inside.py"].target == b"pkg/__init__.py"
    assert entries[BAD_NAME].size == 6  # the name's bytes survive the JSON round trip
    assert [e.path for e in parse(snap.manifest)] == sorted(entries)


def test_a_link_outside_the_tree_is_refused_naming_it(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    with pytest.raises(SyncError, match=r"pkg/outside is a symlink to /etc/hostname, outside"):
        walk(SyncOptions(str(root)))
    (root / "pkg" / "outside").unlink()
    os.symlink("../../elsewhere", root / "pkg" / "up")
    with pytest.raises(SyncError, match=r"pkg/up is a symlink to \.\./\.\./elsewhere, outside"):
        walk(SyncOptions(str(root)))
    (root / "pkg" / ".gitignore").write_text("up\n")  # an ignored link is not sent, so not refused
    assert "pkg/up" not in _rels(root)


def test_a_file_over_the_limit_is_refused_unless_included(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / "small.py").write_text("x = 1\n")
    (root / "weights.pt").write_bytes(b"\0" * 2000)
    with pytest.raises(
        SyncError, match=r"weights\.pt is 0\.0 MB, over the 0\.001 MB limit.*--include weights\.pt"
    ):
        walk(SyncOptions(str(root), max_file_size=1000))
    assert "weights.pt" in _rels(root, max_file_size=1000, include=("weights.pt",))
    (root / ".gpudeckignore").write_text("*.pt\n")
    assert "weights.pt" not in _rels(root, max_file_size=1000)
    assert "weights.pt" in _rels(root, max_file_size=1000, include=("weights.pt",))  # listed: in anyway
    assert parse_size("100M") == 100_000_000 and parse_size("2G") == 2_000_000_000
    with pytest.raises(SyncError, match="--max-file-size 'lots'"):
        parse_size("lots")


def test_an_unchanged_tree_is_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "home"))
    root = tmp_path / "src"
    root.mkdir()
    for i in range(20):
        (root / f"m{i}.py").write_text(f"x = {i}\n")
    first = take_snapshot(SyncOptions(str(root)))
    read: list[str] = []
    import tui.sync.hashcache as hashcache

    real = hashcache.file_sha256
    monkeypatch.setattr(hashcache, "file_sha256", lambda p: read.append(p) or real(p))
    assert take_snapshot(SyncOptions(str(root))).id == first.id and read == []
    (root / "m3.py").write_text("x = 'edited'\n")
    second = take_snapshot(SyncOptions(str(root)))
    assert [os.path.basename(p) for p in read] == ["m3.py"] and second.id != first.id
    cached = json.loads(next((tmp_path / "home" / "sync").glob("hashes-*.json")).read_text())
    assert set(cached["files"]) == {f"m{i}.py" for i in range(20)}
