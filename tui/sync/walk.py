"""The files of a sync: DIR walked once with os.scandir, ignore rules applied per directory (an
ignored directory is never entered, so, as in git, nothing below it can be re-included), `.git/`
left out unless asked. Regular files and symlinks are kept; a symlink must point inside DIR; a
file over the size limit is refused unless listed with --include."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from .ignore import Rules, root_rules
from .options import SyncError, SyncOptions


@dataclass(frozen=True)
class Found:
    rel: str  # '/'-separated, relative to DIR (names that are not UTF-8: surrogateescape)
    kind: str  # "f" or "l"
    exec: bool = False
    size: int = 0
    mtime_ns: int = 0
    ino: int = 0
    target: str = ""  # links: relative, inside DIR

    @property
    def key(self) -> bytes:
        return self.rel.encode("utf-8", "surrogateescape")


def walk(opts: SyncOptions) -> list[Found]:
    """Every file to send, sorted by its path's bytes (the manifest's order)."""
    root = os.path.abspath(os.path.expanduser(opts.directory))
    if not os.path.isdir(root):
        what = "not a directory" if os.path.exists(root) else "no such directory"
        raise SyncError(f"sync: {opts.directory}: {what}")
    forced = _explicit(root, opts.include)
    found: list[Found] = []
    too_big: list[Found] = []
    _walk_dir(root, "", root_rules(root), opts, found, too_big, forced)
    have = {f.rel for f in found}
    for rel in forced - have:  # listed with --include: in even when ignored
        f = _one(root, rel)
        if f is not None:
            found.append(f)
    too_big = [f for f in too_big if f.rel not in forced]
    if too_big:
        biggest = max(too_big, key=lambda f: f.size)
        more = f" (and {len(too_big) - 1} more)" if len(too_big) > 1 else ""
        raise SyncError(
            f"sync: {os.path.join(opts.directory, biggest.rel)} is {biggest.size / 1e6:.1f} MB, over the "
            f"{opts.max_file_size / 1e6:g} MB limit{more}: ignore it (.gpudeckignore), "
            f"or send it anyway with --include {biggest.rel} (or raise --max-file-size)"
        )
    found.sort(key=lambda f: f.key)
    return found


def _walk_dir(
    root: str,
    rel_dir: str,
    rules: Rules,
    opts: SyncOptions,
    found: list[Found],
    too_big: list[Found],
    forced: set[str],
) -> None:
    try:
        entries = list(os.scandir(os.path.join(root, rel_dir) if rel_dir else root))
    except OSError as exc:
        raise SyncError(
            f"sync: cannot read {os.path.join(opts.directory, rel_dir)}: {exc.strerror}"
        ) from None
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        if entry.name == ".git" and not opts.include_git:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # removed while we looked
        is_dir = stat.S_ISDIR(st.st_mode)
        if rules.ignored(rel, is_dir) and rel not in forced:
            continue
        if is_dir:
            _walk_dir(root, rel, rules.entering(root, rel), opts, found, too_big, forced)
        elif stat.S_ISREG(st.st_mode):
            f = Found(rel, "f", bool(st.st_mode & stat.S_IXUSR), st.st_size, st.st_mtime_ns, st.st_ino)
            (too_big if st.st_size > opts.max_file_size else found).append(f)
        elif stat.S_ISLNK(st.st_mode):
            found.append(Found(rel, "l", target=_inside_target(root, rel, opts.directory)))
        # fifos, sockets, devices: not code; left out as git leaves them


def _inside_target(root: str, rel: str, shown: str) -> str:
    """The link's target, relative; refused when it leads outside DIR."""
    target = os.readlink(os.path.join(root, rel))
    parent = os.path.dirname(rel)
    if os.path.isabs(target):
        real = os.path.normpath(target)
        if real != root and not real.startswith(root + os.sep):
            raise SyncError(
                f"sync: {os.path.join(shown, rel)} is a symlink to {target}, outside {shown}: "
                "make it point inside, or ignore it (.gpudeckignore)"
            )
        return os.path.relpath(real, os.path.join(root, parent)) or "."
    joined = os.path.normpath(os.path.join(parent, target))
    if joined == ".." or joined.startswith("../") or os.path.isabs(joined):
        raise SyncError(
            f"sync: {os.path.join(shown, rel)} is a symlink to {target}, outside {shown}: "
            "make it point inside, or ignore it (.gpudeckignore)"
        )
    return target


def _explicit(root: str, paths: tuple[str, ...]) -> set[str]:
    out = set()
    for path in paths:
        full = os.path.normpath(os.path.join(root, os.path.expanduser(path)))
        if not full.startswith(root + os.sep):
            raise SyncError(f"--include {path}: not inside the synced directory")
        if not os.path.isfile(full):
            raise SyncError(f"--include {path}: no such file")
        out.add(os.path.relpath(full, root).replace(os.sep, "/"))
    return out


def _one(root: str, rel: str) -> Found | None:
    st = os.lstat(os.path.join(root, rel))
    if not stat.S_ISREG(st.st_mode):
        return None
    return Found(rel, "f", bool(st.st_mode & stat.S_IXUSR), st.st_size, st.st_mtime_ns, st.st_ino)
