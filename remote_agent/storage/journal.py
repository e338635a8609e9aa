"""The job journal (`events.jsonl`): one writer numbering records, any number of readers.

Readers ignore a last line without its newline: the writer may be mid-write, or was killed there.
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

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
        return self.append_many([(kind, fields)])[0]

    def append_many(self, entries: List[Tuple[str, Dict[str, Any]]]) -> List[Dict[str, Any]]:
        """Numbers and writes several records with one write: a burst of output costs one syscall."""
        with self._lock:
            now = round(time.time(), 6)
            records, lines = [], []
            for offset, (kind, fields) in enumerate(entries, start=1):
                # seq first, always: readers find it with a prefix match instead of a JSON parse.
                record: Dict[str, Any] = {"seq": self._seq + offset, "t": now, "kind": kind}
                record.update(fields)
                records.append(record)
                lines.append(dumps(record))
            data = ("\n".join(lines) + "\n").encode("utf-8")
            # Whole lines only; a reader never acts on a line until its newline is there.
            written = 0
            while written < len(data):
                written += os.write(self._fd, data[written:])
            self._seq += len(entries)
            return records

    def close(self) -> None:
        with self._lock:
            os.close(self._fd)


class JournalReader:
    """Reads complete records incrementally from a byte offset (tail -f without a gap)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.offset = 0
        self.last_seq = 0

    def read_new_raw(self, max_bytes: int = 1 << 20) -> List[bytes]:
        """Complete lines added since the last call, as written; at most about max_bytes per call."""
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
        lines = data[:end].splitlines()
        if lines:
            seq = seq_of(lines[-1])
            if seq is not None:
                self.last_seq = seq
        return lines

    def read_new(self, max_bytes: int = 1 << 20) -> List[Dict[str, Any]]:
        """Records completed since the last call; at most about max_bytes per call so no journal hogs."""
        records = []
        for raw in self.read_new_raw(max_bytes):
            record = loads_object(raw.decode("utf-8", "replace"))
            if record is None or not isinstance(record.get("seq"), int):
                continue
            self.last_seq = record["seq"]
            records.append(record)
        return records


_SEQ_PREFIX = re.compile(rb'^\{"seq":(\d+),')


def seq_of(line: bytes) -> Optional[int]:
    """A record's seq without parsing it: the writer puts seq first (JSON fallback otherwise)."""
    match = _SEQ_PREFIX.match(line)
    if match:
        return int(match.group(1))
    record = loads_object(line.decode("utf-8", "replace"))
    seq = record.get("seq") if record else None
    return seq if isinstance(seq, int) else None


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
