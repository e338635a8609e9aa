"""The job journal (`events.jsonl`): one writer numbering records, any number of readers.

A run of same-named metric points written together is one `points` line (metriclines.py writes
it, records.py is the one place that reads it); readers here hand out the metric records it holds.
Readers ignore a last line without its newline: the writer may be mid-write, or was killed there.
The writer bounds every record (MAX_RECORD_BYTES) and survives a full disk: a write that fails is
cut back to the last whole line, metric/heartbeat records are dropped (counted), state records are
kept to be written first, after a `disk_full` event saying what was dropped, once the disk has room.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..clock import wall
from .files import describe_os_error, open_private
from .jsonio import dumps, loads_object
from .metriclines import point_runs, run_lines
from .records import POINTS, expand, last_seq_of

MAX_RECORD_BYTES = 64 << 10  # a record is at most this long; long strings are cut with a marker
MAX_STRING = 2000
MAX_LIST = 100
KEEP_KINDS = ("state",)  # never dropped on a full disk: written as soon as the disk has room


def _cut(value: Any, limit: int) -> Any:
    """Long strings cut with a marker saying how much; long lists keep their last items."""
    if isinstance(value, str) and len(value) > limit:
        return "%s…[%d more characters cut]" % (value[:limit], len(value) - limit)
    if isinstance(value, dict):
        return {k: _cut(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = list(value)[-MAX_LIST:]
        return [_cut(v, limit) for v in items]
    return value


def bounded_line(record: Dict[str, Any]) -> str:
    """The record as one line of at most about MAX_RECORD_BYTES."""
    line = dumps(record)
    if len(line) <= MAX_RECORD_BYTES // 4 or len(line.encode("utf-8")) <= MAX_RECORD_BYTES:
        return line  # (a character is at most 4 bytes: short lines need no encoding to know)
    head = {k: record[k] for k in ("seq", "t", "kind")}
    for limit in (MAX_STRING, 200):
        body = {k: _cut(v, limit) for k, v in record.items() if k not in head}
        line = dumps(dict(head, truncated=True, **body))
        if len(line.encode("utf-8")) <= MAX_RECORD_BYTES:
            return line
    small = {
        k: v for k, v in record.items() if k not in head and isinstance(v, (int, float, bool, type(None)))
    }
    if isinstance(record.get("state"), str):
        small["state"] = record["state"][:40]
    return dumps(dict(head, truncated=True, **small))


class JournalWriter:
    """Appends records with a gap-free `seq`. Thread-safe: output and timers write from two threads."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._seq = self._recover()
        self._fd = open_private(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        self._kept: List[Tuple[str, Dict[str, Any]]] = []  # state records a failed write could not store
        self.dropped_records = 0
        self.dropped_bytes = 0
        self.write_error: Optional[str] = None  # the last failed write's error, until one succeeds

    def _recover(self) -> int:
        """Continue after the last complete record; drop a torn last line so seq stays gap-free."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return 0
        end = data.rfind(b"\n") + 1
        if end < len(data):
            try:
                with open(str(self.path), "r+b") as f:
                    f.truncate(end)
            except OSError:
                pass
        last = 0
        for raw in data[:end].splitlines():
            seq = last_seq_of(raw)
            if seq is not None:
                last = seq
        return last

    @property
    def last_seq(self) -> int:
        return self._seq

    @property
    def behind(self) -> bool:
        """True while records wait for the disk (a retry() or the next append writes them)."""
        return self.write_error is not None

    def append(self, kind: str, **fields: Any) -> Optional[Dict[str, Any]]:
        """The record written, or None when it could not be written (yet: state records are kept)."""
        records = self.append_many([(kind, fields)])
        return records[0] if records else None

    def retry(self) -> bool:
        """Writes what a failed write kept; True when nothing is behind any more."""
        self.append_many([])
        return not self.behind

    def append_many(self, entries: List[Tuple[str, Dict[str, Any]]]) -> List[Dict[str, Any]]:
        """Numbers and writes several records with one write: a burst of output costs one syscall.
        Never raises for a failed write (a full disk): the job goes on, the loss is counted."""
        with self._lock:
            batch = list(entries)
            if self.write_error is not None:
                note = (
                    "event",
                    {
                        "event": "disk_full",
                        "data": {
                            "records_dropped": self.dropped_records,
                            "bytes_dropped": self.dropped_bytes,
                            "error": self.write_error,
                        },
                    },
                )
                batch = [note] + self._kept + batch
            if not batch:
                return []
            now = round(wall(), 6)
            records: List[Dict[str, Any]] = []
            for offset, (kind, fields) in enumerate(batch, start=1):
                # seq first, always: readers find it with a prefix match instead of a JSON parse.
                record: Dict[str, Any] = {"seq": self._seq + offset, "t": now, "kind": kind}
                record.update(fields)
                records.append(record)
            lines = self._lines(batch, records, dumps(now))
            data = ("\n".join(lines) + "\n").encode("utf-8")
            try:
                self._write_whole(data)
            except OSError as exc:
                if self.write_error is None:
                    self._kept = []
                else:
                    batch = batch[1 + len(self._kept) :]  # the note and the kept ones are already counted
                self.write_error = describe_os_error(exc)
                for kind, fields in batch:
                    if kind in KEEP_KINDS and len(self._kept) < 100:
                        self._kept.append((kind, fields))
                    else:
                        self.dropped_records += 1
                        self.dropped_bytes += len(dumps(fields)) + 40
                return []
            self._seq += len(batch)
            self._kept, self.write_error = [], None
            self.dropped_records = self.dropped_bytes = 0
            return records[len(records) - len(entries) :] if entries else []

    @staticmethod
    def _lines(
        batch: List[Tuple[str, Dict[str, Any]]], records: List[Dict[str, Any]], t_text: str
    ) -> List[str]:
        """One line per record, except runs of same-named metric points: one `points` line each."""
        runs = point_runs(batch)
        if not runs:
            return [bounded_line(r) for r in records]
        lines: List[str] = []
        index = 0
        while index < len(records):
            end = runs.get(index)
            if end is None:
                lines.append(bounded_line(records[index]))
                index += 1
                continue
            points = [batch[i][1]["values"] for i in range(index, end)]
            lines.extend(run_lines(records[index]["seq"], t_text, points, MAX_RECORD_BYTES,
                                   lambda seq, _point: bounded_line(records[seq - records[0]["seq"]])))  # fmt: skip
            index = end
        return lines

    def _write_whole(self, data: bytes) -> None:
        """Whole lines only: a write that fails part way is cut back, so no torn line stays.
        (The one writer appends: where it began is the size now less what it wrote, so a burst
        costs one syscall, not an fstat before it too.)"""
        written = 0
        try:
            while written < len(data):
                written += os.write(self._fd, data[written:])
        except OSError:
            if written:
                try:
                    os.ftruncate(self._fd, os.fstat(self._fd).st_size - written)
                except OSError:
                    pass
            raise

    def close(self) -> None:
        with self._lock:
            os.close(self._fd)


class JournalReader:
    """Reads complete records incrementally from a byte offset (tail -f without a gap)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.offset = 0
        self.last_seq = 0
        self.skipped = 0  # lines skipped: longer than a whole read, or not a record
        # The last read filled max_bytes, so the journal may hold more: a reader that wants it
        # all reads again only then (a short read of a file is its end, for now).
        self.more = False
        self.cuts = 0  # times the file was found cut under what was read of it
        # After a cut the journal is read again from its start: read_new skips the records at or
        # below the seq read before the cut (the raw readers filter by seq themselves).
        self.cut_below = 0

    def read_new_raw(self, max_bytes: int = 1 << 20) -> List[bytes]:
        """Complete lines added since the last call, as written; at most about max_bytes per call."""
        self.more = False
        try:
            fd = os.open(str(self.path), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return []
        try:
            # From the byte before the offset (one syscall where lseek + read took two): a read
            # always ends at a line's end, so that byte is a newline unless the journal was cut
            # under us — shorter now, or cut and written past the offset again since, where the
            # offset lands inside a later record and the records between would be skipped.
            data = os.pread(fd, max_bytes + 1, self.offset - 1) if self.offset else os.pread(fd, max_bytes, 0)
            if self.offset:
                if data[:1] == b"\n":
                    data = data[1:]
                else:  # read it again from its start; seqs tell what was seen (tail filters by them)
                    self.offset = 0
                    self.cuts += 1
                    self.cut_below = max(self.cut_below, self.last_seq)
                    data = os.pread(fd, max_bytes, 0)
            self.more = len(data) >= max_bytes
            end = data.rfind(b"\n") + 1
            if end == 0 and len(data) >= max_bytes:
                # One line longer than a whole read (a writer without bounds): skip it, count it.
                skipped = self._skip_long_line(fd)
                if skipped:
                    self.offset += skipped
                    self.skipped += 1
                    return self.read_new_raw(max_bytes)
        finally:
            os.close(fd)
        if end == 0:
            return []
        self.offset += end
        lines = data[:end].splitlines()
        if lines:
            seq = last_seq_of(lines[-1])
            if seq is not None:
                self.last_seq = max(self.last_seq, seq)  # a re-read after a cut starts lower
        return lines

    def _skip_long_line(self, fd: int) -> int:
        """Bytes up to and including the next newline from self.offset (0: no newline yet)."""
        os.lseek(fd, self.offset, os.SEEK_SET)
        length = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return 0
            newline = chunk.find(b"\n")
            if newline >= 0:
                return length + newline + 1
            length += len(chunk)

    def read_new(self, max_bytes: int = 1 << 20) -> List[Dict[str, Any]]:
        """Records completed since the last call; at most about max_bytes per call so no journal hogs."""
        records: List[Dict[str, Any]] = []
        for raw in self.read_new_raw(max_bytes):
            record = loads_object(raw.decode("utf-8", "replace"))
            if record is None or not isinstance(record.get("seq"), int):
                self.skipped += 1
                continue
            meant = [record] if record.get("kind") != POINTS else expand(record)  # points: several
            if not meant:
                self.skipped += 1
                continue
            self.last_seq = max(self.last_seq, meant[-1]["seq"])
            records.extend(r for r in meant if r["seq"] > self.cut_below)  # none folded twice
        return records


_SEQ_PREFIX = re.compile(rb'^\{"seq":(\d+),')


def seq_of(line: bytes) -> Optional[int]:
    """A line's (first) seq without parsing it: the writer puts seq first (JSON fallback otherwise).
    A `points` line holds several: records.seq_range gives both ends."""
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


TAIL_BYTES = 65536  # a job's end, and the stop before it, are among its journal's last records


def tail_records(path: Path, nbytes: int = TAIL_BYTES) -> Optional[List[Dict[str, Any]]]:
    """The records in the journal's last `nbytes`, oldest first (a host's many ended jobs are read
    by their tail, never whole); the cut first line and a torn last one are skipped; None when it
    cannot be read."""
    try:
        with open(str(path), "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - nbytes))
            lines = f.read().splitlines()
    except OSError:
        return None
    out: List[Dict[str, Any]] = []
    for raw in lines:
        try:
            rec = json.loads(raw.decode("utf-8"))
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out
