"""Streams journal records to the client: one thread polls every subscribed journal in turn.

Each round reads at most a bounded slice per journal, so a huge or fast job never starves the others.
A subscription asks for `events` pushes (records in a JSON array) or `journal` pushes (a header line,
then the journal's lines as written): a reader that reshapes text (`metrics --json` of a million
points) skips decoding and re-encoding every record on both ends.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..storage.journal import JournalReader, seq_of
from ..storage.jsonio import dumps
from ..storage.records import last_seq_of, lines_after_seq
from ..storage.watch import Watcher
from .output import LineWriter

POLL_SECONDS = 0.05
SLICE_BYTES = 256 * 1024
MAX_BATCH = 2000


class _Subscription:
    def __init__(self, path: Path, since_seq: int, as_text: bool) -> None:
        self.reader = JournalReader(path)
        self.since_seq = since_seq
        self.as_text = as_text


class TailHub:
    def __init__(self, out: LineWriter) -> None:
        self._out = out
        self._subs: Dict[Tuple[str, str], _Subscription] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._watch = Watcher()  # inotify on the journals: a new record is pushed within ~1 ms
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tailhub", daemon=True)
        self._thread.start()

    def subscribe(self, job: str, node: str, journal: Path, since_seq: int, as_text: bool = False) -> None:
        with self._lock:
            self._subs[(job, node)] = _Subscription(journal, since_seq, as_text)
        self._watch.add(str(journal))
        self._wake.set()
        self._watch.wake()

    def unsubscribe(self, job: str, node: str) -> bool:
        with self._lock:
            sub = self._subs.pop((job, node), None)
        if sub is not None:
            self._watch.remove(str(sub.reader.path))
        return sub is not None

    def close(self) -> None:
        self._stopped.set()
        self._wake.set()
        self._watch.wake()

    def _run(self) -> None:
        while not self._stopped.is_set():
            busy = False
            with self._lock:
                subs = list(self._subs.items())
            for key, sub in subs:
                lines = self._fresh_lines(sub)
                if not lines:
                    if not sub.reader.path.parent.is_dir():
                        self._end(key, sub)  # its directory was deleted: nothing more will come
                    continue
                busy = True
                with self._lock:
                    if self._subs.get(key) is not sub:
                        continue  # untailed (or re-tailed) meanwhile: the old reader must not push
                if sub.as_text:
                    self._out.send_raw(journal_push(key[0], key[1], lines, sub.since_seq))
                    sub.since_seq = sub.reader.last_seq
                    continue
                after = sub.since_seq  # each batch accounts for every seq after it (a cut's are gone)
                for start in range(0, len(lines), MAX_BATCH):
                    batch = lines[start : start + MAX_BATCH]
                    head = '{"push":"events","job":%s,"node":%s,"after":%d,"events":[' % (
                        dumps(key[0]),
                        dumps(key[1]),
                        after,
                    )
                    # Journal lines are complete JSON objects already: splice them, don't re-encode.
                    self._out.send_raw(head.encode() + b",".join(batch) + b"]}")
                    after = last_seq_of(batch[-1]) or after
                sub.since_seq = sub.reader.last_seq

            if not busy:
                # inotify (or the wake pipe) ends the wait early; the timeout is the fallback poll.
                # Nothing subscribed: nothing to poll, so an idle serve sleeps until subscribe or
                # close wakes it (the pipe keeps a wake that comes before the wait).
                self._watch.wait(POLL_SECONDS if subs else None)
                self._wake.clear()
        self._watch.close()

    def _end(self, key: Tuple[str, str], sub: _Subscription) -> None:
        with self._lock:
            if self._subs.get(key) is not sub:
                return
            del self._subs[key]
        self._watch.remove(str(sub.reader.path))
        job, node = key
        why = "its directory was deleted (stop or kill still ends its processes)"
        self._out.send({"push": "tail_end", "job": job, "node": node, "error": why})

    @staticmethod
    def _fresh_lines(sub: _Subscription) -> List[bytes]:
        lines = sub.reader.read_new_raw(SLICE_BYTES)
        if lines and (seq_of(lines[0]) or 0) <= sub.since_seq:
            lines = lines_after_seq(lines, sub.since_seq)  # a `points` line across since_seq is cut
        # A torn or foreign line has no seq: it is not a record, so it is never pushed.
        return [line for line in lines if line.startswith(b'{"seq":')] if lines else lines


def journal_push(job: str, node: str, lines: List[bytes], after: Optional[int] = None) -> bytes:
    """A `journal` push: the header line, then `bytes` bytes of journal lines, each with its newline
    (LineWriter adds the last one). One write, so no other push can come between the two parts.
    `after`: the seq this subscription's last push ended at. The push then accounts for every seq
    from after + 1 (first_seq says so): records the journal lost to a cut are no gap to wait on."""
    body = b"\n".join(lines)
    first = seq_of(lines[0])
    header = {
        "push": "journal",
        "job": job,
        "node": node,
        "first_seq": first if after is None or first is None else min(first, after + 1),
        "last_seq": last_seq_of(lines[-1]),
        "bytes": len(body) + 1,
    }
    return dumps(header).encode() + b"\n" + body
