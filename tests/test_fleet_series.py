"""Series: bounded memory, downsampling that keeps spikes, non-finite values, merge semantics."""

from __future__ import annotations

import math
import sys

import pytest

from tui.fleet.series import Series, minmax_downsample


def _held_bytes(s: Series) -> int:
    """What the series' storage occupies: its arrays (8 bytes a value) and the pending bucket."""
    return sum(sys.getsizeof(a) for a in (s._rx, s._ry, s._hx, s._hy)) + 64 * len(s._pend)


def _wave(i: int) -> float:
    return math.sin(i / 500.0)


@pytest.mark.slow
def test_million_points_stay_bounded_and_spike_survives():
    s = Series()
    for i in range(10_000):
        s.add(i, _wave(i))
    small = _held_bytes(s)
    for i in range(10_000, 1_000_000):
        s.add(i, 1000.0 if i == 123_457 else -1000.0 if i == 654_321 else _wave(i))
    assert s.count == 1_000_000
    assert len(s) <= s.capacity
    assert _held_bytes(s) < 2 * small  # a million more points cost (almost) nothing
    assert _held_bytes(s) < 16 * s.capacity * 2  # O(capacity): two doubles per point, with slack
    assert s.min == -1000.0 and s.max == 1000.0
    for width in (1, 2, 10, 80, 200, 1000):
        pts = s.downsample(width)
        assert len(pts) <= max(width, 2)
        assert all(a[0] < b[0] for a, b in zip(pts, pts[1:], strict=False))
    pts = s.downsample(80)
    ys = [y for _, y in pts]
    assert 1000.0 in ys and -1000.0 in ys  # both spikes, old as they are
    assert (123_457.0, 1000.0) in pts
    assert pts[0][0] < 25_000 and pts[-1][0] > 975_000  # the whole run, first bucket to last


def test_history_resolution_is_uniform():
    s = Series(recent=64, buckets=64)
    for i in range(100_000):
        s.add(i, float(i % 7))
    pts = s.points()
    assert len(pts) <= s.capacity
    # History buckets all cover the same number of raw points: x gaps in the old part are even.
    old = [x for x, _ in pts if x < 50_000]
    assert len(old) > 20
    assert max(b - a for a, b in zip(old, old[1:], strict=False)) <= 2 * s.bucket_size


def test_recent_points_keep_full_resolution():
    s = Series(recent=100, buckets=8)
    for i in range(10_000):
        s.add(i, float(i))
    xs = [x for x, _ in s.points()]
    assert xs[-50:] == [float(i) for i in range(9950, 10_000)]


def test_short_series_downsample_returns_everything():
    s = Series()
    for i in range(50):
        s.add(i, i * 2.0)
    assert s.downsample(200) == [(float(i), i * 2.0) for i in range(50)]
    assert s.downsample(0) == []
    assert Series().downsample(10) == []
    assert Series().last is None


def test_downsample_is_cached_until_next_add():
    s = Series()
    for i in range(5000):
        s.add(i, _wave(i))
    a = s.downsample(100)
    assert s.downsample(100) is a
    s.add(5000, 0.0)
    assert s.downsample(100) is not a


def test_non_finite_values_are_kept_counted_and_do_not_break_min_max():
    s = Series(recent=16, buckets=8)
    for i in range(1000):
        y = math.nan if i % 10 == 3 else math.inf if i == 500 else -math.inf if i == 501 else float(i % 50)
        s.add(i, y)
    assert s.nan_count == 100 and s.inf_count == 2
    assert s.min == 0.0 and s.max == 49.0
    s.add(1000, math.nan)
    assert math.isnan(s.last[1])  # representable: the latest value really was NaN
    for width in (4, 20, 100, 5000):
        pts = s.downsample(width)
        assert pts and all(math.isfinite(y) for _, y in pts)
        assert max(y for _, y in pts) == 49.0 and min(y for _, y in pts) == 0.0


def test_all_nan_series_downsamples_to_nothing():
    s = Series(recent=8, buckets=4)
    for i in range(100):
        s.add(i, math.nan)
    assert s.downsample(10) == []
    assert s.min is None and s.max is None and s.nan_count == 100


def test_same_x_replaces_latest_wins_and_late_points_insert():
    s = Series()
    s.add(1, 1.0)
    s.add(3, 3.0)
    s.add(3, 30.0)  # same step from another node: one point, the latest
    s.add(2, 2.0)  # a node's batch arriving late: inserted in order
    assert s.points() == [(1.0, 1.0), (2.0, 2.0), (3.0, 30.0)]
    assert s.count == 3


def test_points_older_than_recent_window_are_dropped_not_misplaced():
    s = Series(recent=8, buckets=4)
    for i in range(100):
        s.add(i, 0.0)
    assert not s.add(0, 5.0)
    assert s.dropped == 1
    assert not s.add(math.nan, 1.0)
    xs = [x for x, _ in s.points()]
    assert xs == sorted(set(xs))


def test_minmax_downsample_edges():
    xs = [float(i) for i in range(1000)]
    ys = [0.0] * 1000
    ys[777] = 9.0
    pts = minmax_downsample(xs, ys, 10)
    assert len(pts) <= 10 and (777.0, 9.0) in pts
    assert minmax_downsample(xs, ys, 10, all_finite=True) == pts


def test_bad_construction():
    with pytest.raises(ValueError):
        Series(recent=2)
    with pytest.raises(ValueError):
        Series(buckets=7)
