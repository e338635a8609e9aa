"""Every event file under a LOGDIR (recursively, as `tensorboard --logdir` finds them), read as it
grows: each file from where the last read stopped. Scalars logged at one step, one after the
other, make one point `{"step": S, key: value...}`. The offsets are kept in a small state file,
so a supervisor that adopts the job goes on where its predecessor stopped.

Keras with `update_freq` writes each value twice into its `train` run: `batch_loss` at the global
batch and `epoch_loss` at the epoch, two step scales. Once a run has shown `batch_NAME`, its
`epoch_NAME` is `KEY_epoch` (as Lightning names its epoch values: `loss_epoch`), so the loss curve
keeps one scale; a run that logs per epoch only charts `epoch_loss` as `loss`. The names are kept
with the offsets (an adopter reads the next epoch's value as its predecessor would)."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Set

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
        self.batch_names: Dict[str, Set[str]] = {}  # per run folder: the NAMEs of its `batch_NAME` tags
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
        names = state.get("batch_names") if isinstance(state, dict) else None
        if isinstance(names, dict):
            self.batch_names = {
                run: {n for n in got if isinstance(n, str)}
                for run, got in names.items()
                if isinstance(run, str) and isinstance(got, list)
            }

    def save(self) -> None:
        if self.state_path:
            batch = {run: sorted(names) for run, names in self.batch_names.items()}
            data = json.dumps({"logdir": self.logdir, "offsets": self.offsets, "batch_names": batch}).encode()
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
                current[self._key(tag, run)] = value
        return points

    def _key(self, tag: str, run: str) -> str:
        key = point_key(tag, run)
        if tag.startswith("batch_") and key != tag:  # a Keras batch value (a name the parser knows)
            self.batch_names.setdefault(run, set()).add(tag[len("batch_") :])
        elif (
            tag.startswith("epoch_") and key != tag and tag[len("epoch_") :] in self.batch_names.get(run, ())
        ):
            return key + "_epoch"  # the same value per epoch, beside the per-batch curve
        return key
