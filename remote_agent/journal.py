"""The job journal (`events.jsonl`): one writer numbering records, any number of readers.

Readers ignore a last line without its newline: the writer may be mid-write, or was killed there.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from .files import open_private
from .jsonio import dumps, loads_object


class JournalWriter:
    """Appends records with a gap-free `seq`. Thread-safe: output and timers write from two threads."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._seq = self._recover()
        self._fd = open_private(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)

    def _recover(self) -> int:
        """Continue after the last complete record; drop a torn last line so seq stays gap-free."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return 0
        end = data.rfind(b"\n") + 1
        if end < len(data):
            with open(str(self.path), "r+b") as f:
                f.truncate(end)
        last = 0
        for raw in data[:end].splitlines():
            record = loads_object(raw.decode("utf-8", "replace"))
            if record and isinstance(record.get("seq"), int):
                last = record["seq"]
        return last

    @property
    def last_seq(self) -> int:
        return self._seq

    def append(self, kind: str, **fields: Any) -> Dict[str, Any]:
        with self._lock:
            record: Dict[str, Any] = {"seq": self._seq + 1, "t": round(time.time(), 6), "kind": kind}
            record.update(fields)
            line = (dumps(record) + "\n").encode("utf-8")
            # One write per record: a reader never sees half a record with a newline after it.
            written = 0
            while written < len(line):
                written += os.write(self._fd, line[written:])
            self._seq += 1
            return record

    def close(self) -> None:
        with self._lock:
            os.close(self._fd)


class JournalReader:
    """Reads complete records incrementally from a byte offset (tail -f without a gap)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.offset = 0
        self.last_seq = 0

    def read_new(self, max_bytes: int = 1 << 20) -> List[Dict[str, Any]]:
        """Records completed since the last call; at most about max_bytes per call so no journal hogs."""
        try:
            fd = os.open(str(self.path), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return []
        try:
            os.lseek(fd, self.offset, os.SEEK_SET)
            data = os.read(fd, max_bytes)
        finally:
            os.close(fd)
        end = data.rfind(b"\n") + 1
        if end == 0:
            return []
        self.offset += end
        records = []
        for raw in data[:end].splitlines():
            record = loads_object(raw.decode("utf-8", "replace"))
            if record is None or not isinstance(record.get("seq"), int):
                continue
            self.last_seq = record["seq"]
            records.append(record)
        return records


def read_all(path: Path) -> List[Dict[str, Any]]:
    reader = JournalReader(path)
    out: List[Dict[str, Any]] = []
    while True:
        batch = reader.read_new(4 << 20)
        if not batch:
            return out
        out.extend(batch)


def last_record(records: List[Dict[str, Any]], kind: str) -> Optional[Dict[str, Any]]:
    for record in reversed(records):
        if record.get("kind") == kind:
            return record
    return None
