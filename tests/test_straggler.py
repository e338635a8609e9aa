"""Issue 34, the slow node: the straggler judgement (remote_agent/pace/straggler.py) on injected
clocks — margin, sustain, catch-up, missing data, GPU utilisation for nodes without steps — and the
points each node's reader keeps (pace/points.py)."""

from __future__ import annotations

from remote_agent.pace.points import KEEP, add_point
from remote_agent.pace.straggler import NodePace, Settings, judge, latest, settings

S = Settings(window=30.0, margin=0.25, sustain=120.0)


def stepping(node: str, rates: list[tuple[float, float]], now: float = 0.0, t0: float = -600.0) -> NodePace:
    """A node that stepped at `rate` steps/s from each (since, rate) on, through `now`, its points
    kept as its agent keeps them (one per second)."""
    points: list[list[float]] = []
    step, t = 0.0, t0
    while t <= now:
        rate = next(r for since, r in reversed(rates) if t >= since)
        add_point(points, t, step)
        step += rate * 0.5
        t += 0.5
    return NodePace(node, now, points)


def test_equal_nodes_are_never_named() -> None:
    nodes = [stepping(str(i), [(-1e9, 2.0)]) for i in range(3)]
    assert judge(nodes, S) == []
    assert latest(nodes, S)["1"][0] is not None and abs(latest(nodes, S)["1"][0] - 2.0) < 0.05


def test_a_node_lagging_by_the_margin_for_the_sustain_is_named_with_why() -> None:
    nodes = [
        stepping("0", [(-1e9, 2.0)]),
        stepping("1", [(-1e9, 2.0), (-180, 0.8)]),
        stepping("2", [(-1e9, 2.0)]),
    ]
    found = judge(nodes, S)
    assert [g.node for g in found] == ["1"]
    assert found[0].measure == "steps/s" and abs(found[0].value - 0.8) < 0.05
    assert found[0].why == "node 1 at 0.8 steps/s vs 2.0 on the others, for 3 min"


def test_the_margin_is_25_percent() -> None:
    slower = [stepping("0", [(-1e9, 2.0)]), stepping("1", [(-1e9, 1.6)])]  # 20 % slower
    assert judge(slower, S) == []
    much = [stepping("0", [(-1e9, 2.0)]), stepping("1", [(-1e9, 1.4)])]  # 30 % slower
    assert [g.node for g in judge(much, S)] == ["1"]


def test_a_lag_shorter_than_the_sustain_is_no_straggler() -> None:
    for since, named in ((-90.0, False), (-119.0, False), (-135.0, True)):
        nodes = [stepping("0", [(-1e9, 2.0)]), stepping("1", [(-1e9, 2.0), (since, 0.5)])]
        assert bool(judge(nodes, S)) is named, since


def test_a_brief_hiccup_is_no_straggler() -> None:
    """A 40 s checkpoint on one node, then its own pace again: never named."""
    nodes = [stepping("0", [(-1e9, 2.0)]), stepping("1", [(-1e9, 2.0), (-100, 0.0), (-60, 2.0)])]
    assert judge(nodes, S) == []


def test_a_node_that_catches_up_is_cleared() -> None:
    slow = [stepping("0", [(-1e9, 2.0)]), stepping("1", [(-1e9, 2.0), (-300, 0.5)])]
    assert judge(slow, S)
    caught = [stepping("0", [(-1e9, 2.0)]), stepping("1", [(-1e9, 2.0), (-300, 0.5), (-30, 2.0)])]
    assert judge(caught, S) == []


def test_missing_data_names_no_one() -> None:
    fast = stepping("0", [(-1e9, 2.0)])
    assert judge([fast, NodePace("1", 0.0)], S) == []  # a node with no points at all
    young = stepping("1", [(-1e9, 0.5)], t0=-60.0)  # its history is shorter than the sustain
    assert judge([fast, young], S) == []
    assert judge([fast], S) == []  # one node: nobody to lag
    stopped = [stepping(str(i), [(-1e9, 2.0), (-300, 0.0)]) for i in range(2)]
    assert judge(stopped, S) == []  # everyone waits (a hang): the stall's business, not a straggler


def test_nodes_without_steps_are_judged_on_gpu_utilisation() -> None:
    def busy(node: str, util: float) -> NodePace:
        return NodePace(node, 0.0, (), [[float(t), util] for t in range(-300, 1, 5)])

    assert [g.node for g in judge([busy("0", 95.0), busy("1", 40.0)], S)] == ["1"]
    assert judge([busy("0", 95.0), busy("1", 90.0)], S) == []
    assert judge([busy("0", 95.0), busy("1", 40.0)], S)[0].why.startswith("node 1 at 40 % GPU vs 95")


def test_each_host_clock_is_its_own() -> None:
    """Nodes whose host clocks differ by an hour are compared window by window on their own clocks."""
    a = stepping("0", [(-1e9, 2.0)], now=0.0)
    b = stepping("1", [(-1e9, 2.0)], now=3600.0, t0=3000.0)
    assert judge([a, b], S) == []


def test_settings_come_from_the_environment_when_sane() -> None:
    env = {
        "GPUDECK_STRAGGLER_WINDOW": "2",
        "GPUDECK_STRAGGLER_MARGIN": "0.4",
        "GPUDECK_STRAGGLER_SUSTAIN": "5",
    }
    s = settings(env)
    assert (s.window, s.margin, s.sustain, s.windows) == (2.0, 0.4, 5.0, 4)
    bad = settings({"GPUDECK_STRAGGLER_MARGIN": "1.5", "GPUDECK_STRAGGLER_WINDOW": "soon"})
    assert bad == Settings()


def test_points_keep_one_per_second_and_no_more_than_keep() -> None:
    points: list[list[float]] = []
    for i in range(4000):
        add_point(points, i * 0.25, i)
    assert len(points) <= KEEP + 1 and points[-1] == [999.75, 3999]
    assert len({int(p[0]) for p in points}) == len(points)  # one per 1 s slot, its newest
    assert points[-2] == [998.75, 3995]
    add_point(points, 10.0, 1)  # back in time: ignored
    add_point(points, "x", 1)
    assert points[-1] == [999.75, 3999]
