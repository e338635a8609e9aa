"""A resize chain from the fleet's jobs (tui/fleet/chain.py): ancestors by `resized_from`, their
points joined into one series, each part cut where its successor resumed, and the jobs table's rows
folded into the newest job."""

from __future__ import annotations

from tui.fleet import Fleet
from tui.fleet.chain import ancestors, joined, successors
from tui.widgets.jobs_table import arrange


def _fleet(*links: tuple[str, str | None]) -> Fleet:
    """Jobs id → the id each was resized from (None: not resized)."""
    fleet = Fleet(clock=lambda: 100.0)
    fleet.set_host_status("local", "connected")
    fleet.apply_jobs(
        "local",
        [
            {
                "id": jid,
                "name": "chain",
                "node": "0",
                "state": "stopped",
                **({"resized_from": {"job": frm, "nodes": 2}} if frm else {}),
            }
            for jid, frm in links
        ],
    )
    return fleet


def test_ancestors_are_oldest_first_and_stop_at_an_unknown_job_or_a_cycle() -> None:
    fleet = _fleet(("a", None), ("b", "a"), ("c", "b"), ("x", "gone"), ("p", "q"), ("q", "p"))
    jobs = fleet.jobs
    assert [j.id for j in ancestors(jobs, jobs["c"])] == ["a", "b"]
    assert ancestors(jobs, jobs["a"]) == []
    assert ancestors(jobs, jobs["x"]) == []  # its ancestor was removed: the chain starts at x
    assert [j.id for j in ancestors(jobs, jobs["p"])] == ["q"]  # a corrupt cycle ends, at the job itself
    assert successors(jobs) == {"a": "b", "b": "c", "p": "q", "q": "p"}


def test_joined_cuts_each_part_where_the_next_one_resumed() -> None:
    old = [(1.0, 9.0), (2.0, 8.0), (3.0, 7.0), (4.0, 6.0), (5.0, 5.0)]
    mid = [(4.0, 6.5), (5.0, 5.5), (6.0, 4.5), (7.0, 3.5)]
    new = [(6.0, 4.0), (7.0, 3.0), (8.0, 2.0)]
    assert joined([old, mid, new]) == [*old[:3], *mid[:2], *new]
    assert joined([old, [], new]) == [*old, *new]  # a part with no points (yet) cuts nothing
    assert joined([new]) == new and joined([]) == []


def test_the_jobs_table_folds_a_chain_into_its_newest_job_unless_asked_not_to() -> None:
    fleet = _fleet(
        ("20261201-050000-aaaaaa", None),
        ("20261201-050100-bbbbbb", "20261201-050000-aaaaaa"),
        ("20261201-050200-cccccc", "20261201-050100-bbbbbb"),
        ("20261201-050300-dddddd", None),
    )
    ids = lambda jobs: [j.id[-6:] for j in jobs]  # noqa: E731
    assert ids(arrange(fleet, "", "default", fold=True)) == ["dddddd", "cccccc"]
    assert ids(arrange(fleet, "", "default", fold=False)) == ["dddddd", "cccccc", "bbbbbb", "aaaaaa"]
    # the successor filtered out: its ancestor is a row again (nothing it folds into is listed)
    assert ids(arrange(fleet, "bbb", "default", fold=True)) == ["bbbbbb"]
