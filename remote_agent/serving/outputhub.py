"""Pushes a job's output bytes to the client as they are written (`follow`), then one end marker.

One thread serves every followed (job, node) of a connection. inotify on output.log (new bytes)
and on events.jsonl (the job's end) wakes it within a millisecond; a slow poll is the fallback.
Each round sends at most one CHUNK_BYTES chunk per follow, so one loud job never starves the
others, and each chunk is written before the next is read: a client that reads slowly blocks
serve's stdout write (SSH's window, the pipe's buffer), so memory stays one chunk per follow.

The end marker goes out only once the job is over and every byte of its file was sent: the state
is read before the last read of the file, and a job that is over has written all of its output.

CPU inside a line's burst delays its push (sshd and the client want the same cores), so a round
costs one pread of output.log. (Folding a journal that merely grew a few ms after the burst instead
of at once was tried: an extra wake a line, ~25 % more CPU, no latency told apart; not kept.)
"""

from __future__ import annotations

import base64
import os
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from ..jobstate import TERMINAL_STATES, JobView, is_code_unknown
from ..storage.jsonio import dumps
from ..storage.watch import Watcher
from ..supervision.adoption import adopt_if_lost
from ..supervision.outputcap import DEFAULT_OUTPUT_CAP, gap_marker, hole_start
from .journalnews import JournalNews
from .output import LineWriter

CHUNK_BYTES = 64 * 1024
POLL_SECONDS = 0.25  # fallback only: inotify wakes the thread on every write
STATE_EVERY = 1.0  # a supervisor that died writes nothing: look at the lock this often anyway
# A read that ends inside a line waits this long for the line's end: a job's Python prints a line's
# text and its newline as two writes (PYTHONUNBUFFERED, jobspec.py), which were two pushes, each
# through SSH and the client, for one line (issue 33). A line left open longer (a prompt, a bar's
# frame) goes out then as it is.
HOLD_SECONDS = 0.005


class _Follow:
    def __init__(self, view: JobView, offset: int) -> None:
        self.view = view
        self.offset = offset
        self.push_head = b""  # how each of its pushes starts: encoded once, not per line
        self.fd = -1  # output.log, read with pread at self.offset: one syscall a round
        self.journal_size = -1
        self.news = JournalNews(str(view.files.journal))  # what the journal gained since the last fold
        self.state_at = 0.0
        self.state: Dict[str, Any] = {}
        self.watched = False
        self.adopting = False  # lost, but processes live and a new supervisor is taking over
        self.no_gap_below: Optional[float] = None  # bytes before this never fall in the cap's hole
        self.held_at: Optional[float] = None  # when a read that ended inside a line was first held

    def gap_floor(self) -> float:
        """Where the output cap's hole could start: reads below it skip the journal stat (and its
        re-read when it grew, ~25 µs) that otherwise sits between the read and the push.
        Unknown spec: 0, always look."""
        if self.no_gap_below is None:
            if self.view.spec is None:
                self.view.refresh()
            spec = self.view.spec
            cap = spec.get("output_cap", DEFAULT_OUTPUT_CAP) if isinstance(spec, dict) else None
            if spec is None:
                self.no_gap_below = 0
            elif isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
                self.no_gap_below = hole_start(cap)  # as the supervisor's OutputCap places it
            else:
                self.no_gap_below = float("inf")  # no cap: nothing is ever dropped
        return self.no_gap_below

    def holds(self, data: bytes, now: float) -> bool:
        """Whether to wait for the rest of the line this read ends inside (HOLD_SECONDS at most)."""
        if data.endswith((b"\n", b"\r")) or len(data) >= CHUNK_BYTES:
            self.held_at = None
            return False
        if self.held_at is None:
            self.held_at = now
        if now - self.held_at < HOLD_SECONDS:
            return True
        self.held_at = None
        return False

    def read(self) -> bytes:
        # A short read is not the end of the job: the end needs its state first (_pump).
        return os.pread(self.fd, CHUNK_BYTES, self.offset)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class OutputHub:
    def __init__(self, out: LineWriter) -> None:
        self._out = out
        self._subs: Dict[Tuple[str, str], _Follow] = {}
        self._lock = threading.Lock()
        self._watch = Watcher()
        self._stopped = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def follow(self, job: str, node: str, view: JobView, offset: int) -> None:
        """Push (job, node)'s output from byte offset on; replaces an earlier follow of it."""
        # A view of our own: the op threads refresh theirs concurrently.
        sub = _Follow(JobView(job, node, view.files.dir), offset)
        with self._lock:
            old = self._subs.get((job, node))
            self._subs[(job, node)] = sub
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="outputhub", daemon=True)
                self._thread.start()
        if old is not None:
            self._forget(old)
        self._watch.add(str(sub.view.files.journal))
        self._watch.wake()

    def unfollow(self, job: str, node: str) -> bool:
        with self._lock:
            sub = self._subs.pop((job, node), None)
        if sub is not None:
            self._forget(sub)
        return sub is not None

    def close(self) -> None:
        self._stopped.set()
        self._watch.wake()

    def _forget(self, sub: _Follow) -> None:
        self._watch.remove(str(sub.view.files.output))
        self._watch.remove(str(sub.view.files.journal))
        self._watch.wake()  # the hub thread closes its file

    def _run(self) -> None:
        while not self._stopped.is_set():
            busy = False
            with self._lock:
                subs = list(self._subs.items())
            for key, sub in subs:
                try:
                    busy = self._pump(key, sub) or busy
                except OSError as exc:  # unreadable output: say so once and stop following
                    self._end(key, sub, error="cannot read the output of job %s: %s" % (key[0], exc))
            if not busy:
                self._watch.wait(wait_seconds([sub for _, sub in subs], time.monotonic()))
            with self._lock:
                live = set(id(s) for s in self._subs.values())
            for _, sub in subs:
                if id(sub) not in live:
                    sub.close()
        self._watch.close()

    def _pump(self, key: Tuple[str, str], sub: _Follow) -> bool:
        """One step of one follow: True when there may be more to send at once (look again now).
        A short read reached the end of output.log: the hub waits, and a write since the read is
        an inotify event already (issue 33: the look that only found nothing was a line's cost)."""
        files = sub.view.files
        if sub.fd < 0:
            try:
                sub.fd = os.open(str(files.output), os.O_RDONLY | os.O_CLOEXEC)  # kept across rounds
            except FileNotFoundError:
                if not files.dir.is_dir():
                    self._end(key, sub, error=_removed(key))
                    return False
                if self._over(sub):  # ended before printing anything
                    self._end(key, sub)
                return False
        if not sub.watched:
            self._watch.add(str(files.output))
            sub.watched = True
        data = sub.read()
        if data and self._skip_gap(key, sub, data):
            return True
        if data and sub.holds(data, time.monotonic()):
            return False  # the line's end wakes the hub (inotify), or the hold's end (wait_seconds)
        if data:
            return self._send(key, sub, data) and len(data) == CHUNK_BYTES
        if not self._over(sub):
            return False
        # Over: the job wrote its last byte before its end was journaled. Read once more.
        data = sub.read()
        if data:
            return self._send(key, sub, data)
        if sub.state.get("state") == "lost" and not files.dir.is_dir():
            self._end(key, sub, error=_removed(key))
        else:
            self._end(key, sub)
        return False

    def _skip_gap(self, key: Tuple[str, str], sub: _Follow, data: bytes) -> bool:
        """Bytes just read that reach into the output cap's hole: send what lies before it, or
        one `gap` push saying how much was dropped, and go on after it. True when it handled them."""
        if sub.offset + len(data) <= sub.gap_floor():
            return False
        self._over(sub)  # refreshes the view when the journal grew (the hole is said first)
        gap = sub.view.fields.get("output_gap")
        if not gap or sub.offset + len(data) <= gap[0] or sub.offset >= gap[1]:
            return False
        if sub.offset < gap[0]:
            return self._send(key, sub, data[: gap[0] - sub.offset])  # the next read starts at the hole
        with self._lock:
            if self._subs.get(key) is not sub:
                return False
        marker = gap_marker(sub.offset, gap[1])
        line = '{"push":"output","job":%s,"node":%s,"offset":%d,"skip_to":%d,"data":"%s"}' % (
            dumps(key[0]),
            dumps(key[1]),
            sub.offset,
            gap[1],
            base64.b64encode(marker).decode("ascii"),
        )
        sub.offset = gap[1]
        self._out.send_raw(line.encode("ascii"))
        return True

    def _over(self, sub: _Follow) -> bool:
        """Whether the job is over, from a view refreshed when the journal grew, or every
        STATE_EVERY (a dead supervisor writes nothing)."""
        now = time.monotonic()
        try:
            size = os.stat(str(sub.view.files.journal)).st_size
        except OSError:
            size = -2
        due = now - sub.state_at >= STATE_EVERY
        if size != sub.journal_size or due:
            # A line's metric record (most growth) cannot end the job: no fold inside its push.
            routine = not due and size >= 0 and sub.news.only_routine(size)
            sub.journal_size = size
            if not routine:
                sub.state_at = now
                sub.state = sub.view.refresh()
                if sub.state.get("state") == "lost":
                    # Its processes may live on: a new supervisor adopts them and the follow goes on.
                    sub.adopting = adopt_if_lost(sub.view.files, "a log follow") == "adopting"
                    if not sub.adopting:
                        sub.state = sub.view.refresh()  # its end may be journaled now
                sub.news.offset = sub.view.reader.offset
        state = sub.state.get("state")
        return state in TERMINAL_STATES or (state == "lost" and not sub.adopting)

    def _send(self, key: Tuple[str, str], sub: _Follow, data: bytes) -> bool:
        with self._lock:
            if self._subs.get(key) is not sub:
                return False  # unfollowed (or followed anew) meanwhile: this reader must not push
        if not sub.push_head:
            sub.push_head = (
                '{"push":"output","job":%s,"node":%s,"offset":' % (dumps(key[0]), dumps(key[1]))
            ).encode()
        line = b'%s%d,"data":"%s"}' % (sub.push_head, sub.offset, base64.b64encode(data))
        sub.offset += len(data)
        self._out.send_raw(line)  # blocks while the client is not reading
        return True

    def _end(self, key: Tuple[str, str], sub: _Follow, error: Optional[str] = None) -> None:
        with self._lock:
            if self._subs.get(key) is not sub:
                return
            del self._subs[key]
        self._forget(sub)
        files = sub.view.files
        if (
            error is None
            and sub.state.get("state") == "lost"
            and not (files.dir.is_dir() and files.spec.exists())
        ):
            error = _removed(key)  # being deleted (its files go first, then its dir): nothing more will come
        state = sub.state
        self._out.send(
            {
                "push": "output_end",
                "job": key[0],
                "node": key[1],
                "offset": sub.offset,
                "state": None if error else state.get("state"),
                "exit_code": None if error else state.get("exit_code"),
                "signal": None if error else state.get("signal"),
                # ended with no parent to see its code (an adopted job): `logs -f` exits 1 for it
                "code_unknown": not error and is_code_unknown(state),
                "error": error,
            }
        )


def wait_seconds(subs: List[_Follow], now: float = 0.0) -> Optional[float]:
    """How long the hub may sleep: the fallback poll, until a held line's hold ends, or None (until
    follow or close wakes it) when it follows nothing."""
    held = [sub.held_at for sub in subs if sub.held_at is not None]
    if held:
        return max(0.0, min(held) + HOLD_SECONDS - now)
    return POLL_SECONDS if subs else None


def _removed(key: Tuple[str, str]) -> str:
    job, node = key
    where = "" if node == "0" else " (node %s)" % node  # a one-node job's node needs no naming
    return "job %s%s: its directory was deleted or removed while its log was followed" % (job, where)
