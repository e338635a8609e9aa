"""The `series` op: a job's metric, step → time and GPU series, downsampled on the host.

Opening a week-long job must not ship a million records to the client before its chart draws
(issue 13: ~20 s and 450 MB). Here the journal is folded into min/max envelopes (each kept point
is the minimum or the maximum of a run of points, so a loss spike survives) of at most
`2 * KEEP` points per series; the answer downsamples those to the width asked for.

The fold up to a byte offset is cached beside the journal (`series.cache.json`), so the next
open reads only what was written since; the journal stays the truth (a cache that does not fit
it is folded again). Dense `points` lines (a burst of points, as the journal writer writes them)
are taken as columns straight from their text (storage/pointcolumns.py), and every metric point
of a read is folded as one batch (foldbatch.py): a million points in about 0.65 s of CPU, 5.8x
less than one dict per point. Plain metric lines (an older journal) are decoded a block at a time
(one regex pass, one JSON call for all their values). Anything else goes through the ordinary
decoder, and lands in the same batch in journal order.

What x means follows the client's model (tui/fleet/jobs.py): a series whose first point came
with a `step` is drawn against steps, otherwise against the host's time; a stepless point in a
step series lands at the latest step seen.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..storage.files import write_private_atomic
from ..storage.journal import JournalReader
from ..storage.jsonio import dumps, loads_object
from ..storage.pointcolumns import point_columns
from ..storage.records import POINTS, expand, last_seq_of
from .foldbatch import MetricBatch

CACHE_NAME = "series.cache.json"
CACHE_VERSION = 1
KEEP = 2000  # pairs kept per series in the fold; an answer is at most `width` points per series
MAX_SERIES = 64  # as the client's model: ever-new keys must not grow without bound
MAX_GPUS = 64
READ_BYTES = 8 << 20
# A plain metric line as the writer writes it (storage/metriclines.py): seq, t, kind, flat values.
# The time is matched as a strict JSON number, so float() of it cannot fail halfway through a block.
_METRIC = re.compile(
    rb'\{"seq":\d+,"t":(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?),"kind":"metric","values":(\{[^\n]*\})\}\n'
)
_PLAIN = b'"kind":"metric","values":{'

Points = List[List[float]]
_NUMBER_TYPES = frozenset({int, float})


def _number(v: Any) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:  # an integer too big for a float (JSON allows it): no point to draw
        return None
    return f if f == f and f not in (float("inf"), float("-inf")) else None


def envelope(points: Points, size: int) -> Points:
    """At most ~size points of `points` (in order): the min and max of each of size/2 equal runs."""
    if len(points) <= size:
        return points
    return [points[k] for k in _extremes([p[1] for p in points], size)]


def _extremes(ys: List[Any], size: int) -> List[int]:
    """The indexes, in order, of the min and the max of each of size/2 equal runs of `ys`."""
    n = len(ys)
    runs = max(1, size // 2)
    out: List[int] = []
    for r in range(runs):
        lo, hi = r * n // runs, (r + 1) * n // runs
        if hi <= lo:
            continue
        seg = ys[lo:hi]
        i, j = lo + seg.index(min(seg)), lo + seg.index(max(seg))
        if i > j:
            i, j = j, i
        out.append(i)
        if j != i:
            out.append(j)
    return out


def _all_finite_numbers(column: List[Any]) -> bool:
    """Every value an int or a float (no bool, None or string) and finite, checked in C: a min and
    a max look only at the ends, and a bool or a nan anywhere else slipped through them."""
    if not set(map(type, column)) <= _NUMBER_TYPES:
        return False
    try:
        total = sum(
            column
        )  # nan or inf when any value is (or the sum overflows: the careful path is right too)
    except OverflowError:  # an integer too big to add to a float
        return False
    return total == total and total not in (float("inf"), float("-inf"))


def _column_envelope(xs: List[Any], ys: List[Any], size: int) -> Points:
    """envelope() of the points (x, y), from two columns: when every y is a number (the usual
    block) only the kept points are made, and min()/max() scan in C."""
    if None in xs or not _all_finite_numbers(ys):  # a stepless point, a string ("nan"), a bool, a nan
        return envelope(
            [
                [x, y]
                for x, y in zip(xs, ys)  # noqa: B905 (strict= is 3.10+)
                if _number(y) is not None and x is not None
            ],
            size,
        )
    if len(ys) <= size:
        return [[x, y] for x, y in zip(xs, ys)]  # noqa: B905 (the agent runs on 3.8)
    return [[xs[k], ys[k]] for k in _extremes(ys, size)]


class SeriesFold:
    """The fold of one node's journal: envelopes per metric, step → time, and per-GPU util/mem."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.reader = JournalReader(self.dir / "events.jsonl")
        self.step: Optional[float] = None  # the latest step seen (where a stepless point lands)
        self.axis: Dict[str, str] = {}
        self.metrics: Dict[str, Points] = {}
        self.step_time: Points = []
        self.gpus: Dict[str, Dict[str, Any]] = {}  # uuid (or "index:N") -> {"index", "util", "mem"}
        self.events: List[Dict[str, Any]] = []  # the last `event` records (resize marks, checkpoints)
        self.skipped = 0

    # -- the cache -------------------------------------------------------------------------------

    def load(self) -> None:
        try:
            with open(str(self.dir / CACHE_NAME), "rb") as f:
                cached = json.loads(f.read().decode("utf-8"))
            size = os.stat(str(self.reader.path)).st_size
            if cached.get("version") != CACHE_VERSION or not 0 < cached["offset"] <= size:
                return
            self.reader.offset, self.reader.last_seq = int(cached["offset"]), int(cached["last_seq"])
            self.step, self.axis, self.metrics = cached["step"], dict(cached["axis"]), dict(cached["metrics"])
            self.step_time, self.gpus, self.events = (
                list(cached["step_time"]),
                dict(cached["gpus"]),
                list(cached["events"]),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.__init__(self.dir)  # type: ignore[misc]  # a cache that does not fit: fold it all again

    def save(self) -> None:
        body = {
            "version": CACHE_VERSION,
            "offset": self.reader.offset,
            "last_seq": self.reader.last_seq,
            "step": self.step,
            "axis": self.axis,
            "metrics": self.metrics,
            "step_time": self.step_time,
            "gpus": self.gpus,
            "events": self.events,
        }
        try:
            write_private_atomic(self.dir / CACHE_NAME, dumps(body).encode("utf-8"))
        except OSError:
            pass  # a cache that cannot be written only costs time

    # -- folding -----------------------------------------------------------------------------------

    def update(self) -> None:
        """Fold what the journal gained since the last update (or the cache)."""
        path = str(self.reader.path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        try:
            while True:
                os.lseek(fd, self.reader.offset, os.SEEK_SET)
                data = os.read(fd, READ_BYTES)
                end = data.rfind(b"\n") + 1
                if end == 0:
                    if len(data) >= READ_BYTES:  # one line longer than a read: the reader skips it
                        self.reader.read_new_raw(READ_BYTES)
                        continue
                    break
                block = data[:end]
                self.reader.offset += end
                last = block[block.rfind(b"\n", 0, end - 1) + 1 :]
                seq = last_seq_of(last)  # a `points` line ends at its last point's seq
                self.reader.last_seq = seq if seq is not None else self.reader.last_seq
                self._block(block)
        finally:
            os.close(fd)
        for key, pts in self.metrics.items():
            self.metrics[key] = envelope(pts, 2 * KEEP)
        self.step_time = envelope(self.step_time, 2 * KEEP)
        for g in self.gpus.values():
            g["util"], g["mem"] = envelope(g["util"], 2 * KEEP), envelope(g["mem"], 2 * KEEP)

    def _block(self, block: bytes) -> None:
        """Complete lines: plain metric lines a block at a time, every other record one by one."""
        if b'"kind":"points"' in block:
            self._dense_block(block)
            return
        found = _METRIC.findall(block)
        rest: List[bytes] = []
        if found:
            values: Any = None
            if len(found) == block.count(_PLAIN):
                try:
                    values = json.loads(b"[" + b",".join(v for _, v in found) + b"]")
                except ValueError:
                    values = None
            fast = isinstance(values, list) and len(values) == len(found)  # each one an object, by the regex
            if fast:
                try:
                    self._points([t for t, _ in found], values)
                except (ValueError, TypeError, AttributeError):  # not expected (the regex and the decoder
                    fast = False  # vouch for every line): line by line rather than fail the answer
            if fast and len(found) < block.count(b"\n"):
                rest = [ln for ln in block.split(b"\n") if ln and _PLAIN not in ln]
            elif not fast:
                rest = block.split(b"\n")
        else:
            rest = block.split(b"\n")
        batch = MetricBatch()
        for raw in rest:  # records of every other kind (and anything unusual), one at a time
            self._record(raw, batch)
        self._fold(batch)

    def _dense_block(self, block: bytes) -> None:
        """A block with `points` lines: those taken as columns straight from their text, every
        metric point of the block gathered in journal order and folded as one batch (the other
        kinds do not touch the metric series, so they are taken as they come)."""
        batch = MetricBatch()
        for raw in block.split(b"\n"):
            dense = (
                point_columns(raw) if raw.startswith(b'{"seq":') and b'"kind":"points"' in raw[:96] else None
            )
            if dense is not None:
                batch.add_columns(dense.t, dense.rows, dense.columns)
            else:
                self._record(raw, batch)
        self._fold(batch)

    def _record(self, raw: bytes, batch: MetricBatch) -> None:
        """One line decoded the ordinary way: its metric points into the batch, the rest kept."""
        if not raw:
            return
        rec = loads_object(raw.decode("utf-8", "replace"))
        t = _number(rec.get("t")) if rec else None
        if rec is None or t is None:
            self.skipped += 1
            return
        kind = rec.get("kind")
        if kind == "metric" and isinstance(rec.get("values"), dict):
            batch.add_values([t], [rec["values"]])
        elif kind == POINTS:  # a burst's dense line not in the writer's plain form: one dict per row
            points = expand(rec)
            if not points:
                self.skipped += 1
                return
            batch.add_values([t] * len(points), [p["values"] for p in points])
        elif kind == "gpu" and isinstance(rec.get("gpus"), list):
            self._gpu(t, rec["gpus"])
        elif kind == "event" and isinstance(rec.get("event"), str):
            self.events = (self.events + [rec])[-200:]

    def _points(self, ts: List[bytes], values: List[Dict[str, Any]]) -> None:
        """Plain metric points in journal order (one dict each), folded as one batch."""
        batch = MetricBatch()
        batch.add_values(ts, values)
        self._fold(batch)

    def _fold(self, batch: MetricBatch) -> None:
        """A batch of metric points in journal order, a column per key (slices and comprehensions,
        not a loop per point and key), enveloped before it is kept."""
        if not batch.n:
            return
        steps = batch.steps
        if not _all_finite_numbers(steps):  # stepless points (or odd steps): the latest step
            last = self.step
            for i, s in enumerate(steps):
                if s.__class__ in (int, float) and s == s:
                    last = s
                steps[i] = last
        times: Optional[List[float]] = None
        for key in sorted(batch.chunks):
            axis = self.axis.get(key)
            if axis is None:
                if len(self.axis) >= MAX_SERIES:
                    continue
                axis = self.axis[key] = "step" if _number(batch.first_step[key]) is not None else "time"
                self.metrics[key] = []
            if axis == "step":
                xs = steps
            else:
                times = times if times is not None else [float(t) for t in batch.ts]
                xs = times
            self.metrics[key].extend(_column_envelope(*batch.column(key, xs), 2 * KEEP))
        # step -> time is monotone: a sample of each batch (and its last point) maps it well enough.
        every = max(1, len(steps) // KEEP)
        picks = list(range(0, len(steps), every))
        if picks and picks[-1] != len(steps) - 1:
            picks.append(len(steps) - 1)
        self.step_time.extend([steps[i], float(batch.ts[i])] for i in picks if _number(steps[i]) is not None)
        if self.step_time:
            self.step = self.step_time[-1][0]

    def _gpu(self, t: float, gpus: List[Any]) -> None:
        for i, d in enumerate(gpus[:MAX_GPUS]):
            if not isinstance(d, dict):
                continue
            raw_index, uuid = d.get("index"), d.get("uuid")
            index: int = raw_index if isinstance(raw_index, int) else i
            key: str = uuid if isinstance(uuid, str) else "index:%d" % index
            g = self.gpus.get(key)
            if g is None:
                if len(self.gpus) >= MAX_GPUS:
                    continue
                g = self.gpus[key] = {"index": index, "util": [], "mem": []}
            for field, name in (("util", "util"), ("mem_used_mib", "mem")):
                y = _number(d.get(field))
                if y is not None:
                    g[name].append([t, y])
                    if len(g[name]) > 8 * KEEP:
                        g[name] = envelope(g[name], 2 * KEEP)

    # -- the answer ----------------------------------------------------------------------------------

    def answer(self, width: int) -> Dict[str, Any]:
        return {
            "last_seq": self.reader.last_seq,
            "width": width,
            "metrics": {
                k: {"axis": self.axis[k], "points": envelope(p, width)} for k, p in self.metrics.items()
            },
            "step_time": envelope(self.step_time, width),
            "gpus": {
                k: {"index": g["index"], "util": envelope(g["util"], width), "mem": envelope(g["mem"], width)}
                for k, g in self.gpus.items()
            },
            "events": self.events,
        }


_LOCKS: Dict[str, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


def _lock_for(directory: Path) -> threading.Lock:
    """One fold of a directory at a time: a request and the warmer (serieswarm.py) share its cache."""
    with _LOCKS_LOCK:
        return _LOCKS.setdefault(str(directory), threading.Lock())


def folded(directory: Path) -> SeriesFold:
    """The directory's fold, brought up to date with its journal (and cached when it moved)."""
    with _lock_for(directory):
        fold = SeriesFold(directory)
        fold.load()
        before = fold.reader.offset
        fold.update()
        if fold.reader.offset != before:
            fold.save()
        return fold


def series_of_records(records: List[Dict[str, Any]], width: int) -> Dict[str, Any]:
    """The `series` answer for journal records already in hand (a replayed recording's)."""
    fold = SeriesFold(Path("."))
    fold._block(b"".join(dumps(r).encode("utf-8") + b"\n" for r in records))
    seqs: List[int] = [r["seq"] for r in records if isinstance(r.get("seq"), int)]
    fold.reader.last_seq = max(seqs) if seqs else 0
    return fold.answer(width)


def series(directory: Path, width: int) -> Tuple[Dict[str, Any], int]:
    """The `series` answer for a node's directory (and how many lines the fold skipped)."""
    fold = folded(directory)
    return fold.answer(width), fold.skipped
