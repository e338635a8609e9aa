"""A bounded time series for one metric, and min/max downsampling for display.

Memory is O(capacity) whatever the job's length: the newest `recent` points are kept at full
resolution; older points spill into `buckets` history buckets of `k` raw points each, every bucket
keeping its minimum and its maximum point (so a spike survives). When the history is full,
neighbouring buckets merge pairwise and `k` doubles: the whole history keeps a uniform resolution,
halved as the job grows, and a week-long run costs as much to draw as a minute-long one.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections.abc import Sequence

_INF = math.inf


def _finite(y: float) -> bool:
    return y == y and y != _INF and y != -_INF


def _pick(xs: Sequence[float], ys: Sequence[float], lo: int, hi: int) -> tuple[int, int]:
    """Indices of the finite min and max of ys[lo:hi], in x order; (lo, lo) if none is finite."""
    imin = imax = -1
    for i in range(lo, hi):
        y = ys[i]
        if not _finite(y):
            continue
        if imin < 0 or y < ys[imin]:
            imin = i
        if imax < 0 or y > ys[imax]:
            imax = i
    if imin < 0:
        return lo, lo
    return (imin, imax) if imin <= imax else (imax, imin)


def minmax_downsample(
    xs: Sequence[float], ys: Sequence[float], width: int, all_finite: bool = False
) -> list[tuple[float, float]]:
    """At most ~`width` finite points of (xs, ys), sorted by x: the min and max of each of width/2
    equal x-range buckets. Min/max rather than mean or LTTB because a loss spike or a NaN-adjacent
    blow-up is what the user must see. `all_finite` lets C-level min()/max() do the scan."""
    n = len(xs)
    if width <= 0 or n == 0:
        return []
    if n <= width:
        return [(x, y) for x, y in zip(xs, ys, strict=False) if _finite(y)]
    nb = max(1, width // 2)
    x0, span = xs[0], xs[-1] - xs[0]
    out: list[tuple[float, float]] = []
    lo = 0
    for b in range(1, nb + 1):
        # Bucket edges by bisect: O(nb log n) instead of touching every point twice.
        hi = n if b == nb else bisect_left(xs, x0 + span * b / nb, lo)
        if hi <= lo:
            continue
        if all_finite:
            seg = ys[lo:hi]
            i, j = lo + seg.index(min(seg)), lo + seg.index(max(seg))
            if i > j:
                i, j = j, i
        else:
            i, j = _pick(xs, ys, lo, hi)
            if not _finite(ys[i]):
                lo = hi
                continue
        out.append((xs[i], ys[i]))
        if j != i:
            out.append((xs[j], ys[j]))
        lo = hi
    return out


class Series:
    """Points (x, y) of one metric with x strictly increasing; a second point at the same x replaces
    the first (latest wins). Non-finite y values are stored as float nan/inf and counted, and are
    ignored by min/max and by `downsample` (a chart cannot draw them; `nan_count` says they came)."""

    def __init__(self, recent: int = 1024, buckets: int = 1536) -> None:
        if recent < 4 or buckets < 4 or buckets % 2:
            raise ValueError("recent >= 4 and an even buckets >= 4 are required")
        self.recent_capacity = recent
        self.bucket_capacity = buckets
        self._rx = array("d")  # recent, full resolution
        self._ry = array("d")
        self._hx = array("d")  # history: two entries (min/max point in x order) per bucket
        self._hy = array("d")
        self._k = 1  # raw points per history bucket
        self._pend: list[tuple[float, float]] = []  # spilled points not yet a full bucket
        self._pend_n = 0
        self._last_spilled_x = -_INF
        self.count = 0  # distinct points accepted
        self.dropped = 0  # points older than the recent window (nothing left to replace or insert into)
        self.nan_count = 0
        self.inf_count = 0
        self.min: float | None = None  # finite extremes over every point ever added
        self.max: float | None = None
        self.version = 0  # bumps on every change; lets a view skip redraws
        self._cache: tuple[int, int, list[tuple[float, float]]] | None = None

    @property
    def capacity(self) -> int:
        """The most points held at once."""
        return self.recent_capacity + 2 * self.bucket_capacity + 2

    def __len__(self) -> int:
        return len(self._hx) + len(self._pend) + len(self._rx)

    @property
    def bucket_size(self) -> int:
        return self._k

    @property
    def last(self) -> tuple[float, float] | None:
        if self._rx:
            return self._rx[-1], self._ry[-1]
        return None

    def add(self, x: float, y: float) -> bool:
        """Add a point; False when x is not finite or is older than the recent window."""
        x, y = float(x), float(y)
        if not _finite(x):
            return False
        rx, ry = self._rx, self._ry
        if rx and x <= rx[-1]:
            if x < rx[0]:
                self.dropped += 1
                return False
            i = bisect_left(rx, x)
            if rx[i] == x:
                ry[i] = y
            else:
                rx.insert(i, x)
                ry.insert(i, y)
                self.count += 1
        elif not rx and x <= self._last_spilled_x:
            self.dropped += 1
            return False
        else:
            rx.append(x)
            ry.append(y)
            self.count += 1
        self._note(y)
        if len(rx) > self.recent_capacity:
            self._spill(len(rx) - self.recent_capacity // 2)
        self.version += 1
        return True

    def _note(self, y: float) -> None:
        if y != y:
            self.nan_count += 1
        elif y in (_INF, -_INF):
            self.inf_count += 1
        else:
            if self.min is None or y < self.min:
                self.min = y
            if self.max is None or y > self.max:
                self.max = y

    def _spill(self, n: int) -> None:
        """Move the n oldest recent points into history buckets (done in chunks so adds stay O(1)
        amortised)."""
        rx, ry = self._rx, self._ry
        self._last_spilled_x = rx[n - 1]
        i = 0
        while i < n:
            # A bucket's share at once: one min/max pick over it, not one per point (issue 36:
            # spilling was a quarter of applying a dense stream's records). Same points kept.
            take = min(n - i, self._k - self._pend_n)
            px = [p[0] for p in self._pend]
            py = [p[1] for p in self._pend]
            px.extend(rx[i : i + take])
            py.extend(ry[i : i + take])
            a, b = _pick(px, py, 0, len(px))
            self._pend = [(px[a], py[a])] if a == b else [(px[a], py[a]), (px[b], py[b])]
            self._pend_n += take
            i += take
            if self._pend_n >= self._k:
                self._close_bucket()
        del rx[:n]
        del ry[:n]

    def _shrink_pending(self) -> None:
        px = [p[0] for p in self._pend]
        py = [p[1] for p in self._pend]
        i, j = _pick(px, py, 0, len(px))
        self._pend = [self._pend[i]] if i == j else [self._pend[i], self._pend[j]]

    def _close_bucket(self) -> None:
        self._shrink_pending()
        a = self._pend[0]
        b = self._pend[-1]
        self._hx.extend((a[0], b[0]))
        self._hy.extend((a[1], b[1]))
        self._pend, self._pend_n = [], 0
        if len(self._hx) >= 2 * self.bucket_capacity:
            self._merge_history()

    def _merge_history(self) -> None:
        """Merge neighbouring buckets pairwise: half the entries, each bucket twice as wide."""
        hx, hy = self._hx, self._hy
        nx, ny = array("d"), array("d")
        for lo in range(0, len(hx), 4):
            i, j = _pick(hx, hy, lo, min(lo + 4, len(hx)))
            nx.extend((hx[i], hx[j]))
            ny.extend((hy[i], hy[j]))
        self._hx, self._hy = nx, ny
        self._k *= 2

    def _arrays(self) -> tuple[array[float], array[float]]:
        xs = array("d", self._hx)
        ys = array("d", self._hy)
        for x, y in self._pend:
            xs.append(x)
            ys.append(y)
        return xs + self._rx, ys + self._ry

    def points(self) -> list[tuple[float, float]]:
        """Every held point in x order (history buckets' duplicate entries folded)."""
        xs, ys = self._arrays()
        out: list[tuple[float, float]] = []
        for x, y in zip(xs, ys, strict=True):
            if out and out[-1][0] == x:
                continue
            out.append((x, y))
        return out

    def downsample(self, width: int) -> list[tuple[float, float]]:
        """At most ~width finite points for a chart `width` cells wide; cached until the next add."""
        c = self._cache
        if c is not None and c[0] == self.version and c[1] == width:
            return c[2]
        xs, ys = self._arrays()
        pts = minmax_downsample(xs, ys, width, all_finite=not (self.nan_count or self.inf_count))
        self._cache = (self.version, width, pts)
        return pts
