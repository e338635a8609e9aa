"""Every event file under a LOGDIR (recursively, as `tensorboard --logdir` finds them), read as it
grows: each file from where the last read stopped. Scalars logged at one step, one after the
other, make one point `{"step": S, key: value...}`. The offsets are kept in a small state file,
so a supervisor that adopts the job goes on where its predecessor stopped."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

from ..storage.files import write_private_atomic
from .event import read_event
from .names import point_key
from .records import Corrupt, read_records
from .wire import WireError

MAX_FILES = 1000  # event files followed at most (a LOGDIR is runs, not a dataset)
MAX_DEPTH = 6


class LogdirReader:
    def __init__(self, logdir: str, state_path: Optional[str] = None) -> None:
        self.logdir = logdir
        self.state_path = state_path
        self.offsets: Dict[str, int] = {}  # path relative to logdir -> bytes read
        self.broken: Dict[str, int] = {}  # files found not to be record files (at that size)
        self.skipped = 0  # records that were no Event
        self._plugins: Dict[str, Dict[str, str]] = {}  # per file: tag -> plugin
        self._load()

    def _load(self) -> None:
        if not self.state_path:
            return
        try:
            with open(self.state_path) as f:
                state = json.load(f)
            offsets = state.get("offsets") if isinstance(state, dict) else None
        except (OSError, ValueError):
            return
        if isinstance(offsets, dict):
            self.offsets = {k: v for k, v in offsets.items() if isinstance(v, int) and v >= 0}

    def save(self) -> None:
        if self.state_path:
            data = json.dumps({"logdir": self.logdir, "offsets": self.offsets}).encode()
            try:
                write_private_atomic(self.state_path, data)
            except OSError:
                pass  # only an adopter would read it again, and re-read some points at worst

    def event_files(self) -> List[str]:
        found: List[str] = []
        base = self.logdir.rstrip("/")
        for root, dirs, files in os.walk(base):
            depth = root[len(base) :].count("/")
            if depth >= MAX_DEPTH:
                dirs[:] = []
            dirs.sort()
            for name in sorted(files):
                if "tfevents" in name:
                    found.append(os.path.relpath(os.path.join(root, name), base))
            if len(found) >= MAX_FILES:
                break
        return found[:MAX_FILES]

    def poll(self) -> List[Dict[str, Any]]:
        """The points written since the last poll, file by file."""
        points: List[Dict[str, Any]] = []
        for rel in self.event_files():
            path = os.path.join(self.logdir, rel)
            try:
                size = os.path.getsize(path)
            except OSError:
                continue
            offset = self.offsets.get(rel, 0)
            if size < offset:  # replaced or truncated: read it afresh
                offset = 0
                self._plugins.pop(rel, None)
            if size == offset or self.broken.get(rel) == size:
                continue
            try:
                records, offset = read_records(path, offset)
            except Corrupt:
                self.broken[rel] = size
                continue
            except OSError:
                continue
            self.offsets[rel] = offset
            points += self._points(records, os.path.dirname(rel), self._plugins.setdefault(rel, {}))
        return points

    def _points(self, records: List[bytes], run: str, plugins: Dict[str, str]) -> List[Dict[str, Any]]:
        points: List[Dict[str, Any]] = []
        current: Optional[Dict[str, Any]] = None
        for data in records:
            try:
                event = read_event(data, plugins)
            except WireError:
                self.skipped += 1
                continue
            if not event.scalars:
                continue
            if current is None or current["step"] != event.step:
                current = {"step": event.step}
                points.append(current)
            for tag, value in event.scalars:
                current[point_key(tag, run)] = value
        return points
