"""The job's PATH: a symlink to a tree of hard links to cached objects. The tree is built under a
temporary name and renamed into place whole, and PATH is switched by renaming a new symlink over it,
so a reader sees the old data or the new, never a half-filled directory."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import List, Tuple

from ..spec import DataObject
from .cache import object_name


class PathTaken(Exception):
    pass


def ensure_tree(trees: Path, name: str, objects: Path, files: List[Tuple[str, DataObject]]) -> Path:
    """`trees/<name>` made of hard links to the objects (already there: kept as it is)."""
    tree = trees / name
    if tree.is_dir():
        return tree
    tmp = trees / (".%s.tmp.%d" % (name, os.getpid()))
    shutil.rmtree(str(tmp), ignore_errors=True)
    os.mkdir(str(tmp), 0o700)
    made = {str(tmp)}
    try:
        for rel, obj in files:
            target = tmp / rel
            parent = str(target.parent)
            if parent not in made:
                os.makedirs(parent, 0o700, exist_ok=True)
                made.add(parent)
            os.link(str(objects / object_name(obj)), str(target))
        try:
            os.rename(str(tmp), str(tree))
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):  # else: another job made it first
                raise
    finally:
        shutil.rmtree(str(tmp), ignore_errors=True)
    return tree


def place_link(path: Path, tree: Path, trees: Path) -> None:
    """Make `path` a symlink to `tree`, atomically. An existing `path` is replaced only when it is
    such a link (an earlier job's) or an empty directory: never the user's own files."""
    if os.path.lexists(str(path)):
        if path.is_symlink():
            if os.path.dirname(os.readlink(str(path))) != str(trees):
                raise PathTaken(
                    "%s: a symlink gpudeck did not make; move it away or choose another PATH" % path
                )
        elif path.is_dir() and not any(os.scandir(str(path))):
            os.rmdir(str(path))
        else:
            raise PathTaken("%s: already exists; move it away or choose another PATH" % path)
    os.makedirs(str(path.parent), exist_ok=True)
    tmp = path.with_name(".%s.gpudeck-link.%d" % (path.name, os.getpid()))
    if os.path.lexists(str(tmp)):
        os.unlink(str(tmp))
    os.symlink(str(tree), str(tmp))
    os.replace(str(tmp), str(path))
