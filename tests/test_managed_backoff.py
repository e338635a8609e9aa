"""Issue 31, capacity back-off and give-up, on the controller's injected clock (no sleeps): a refused
candidate is not asked again before its next try (1, 2, 4… minutes, at most 30, journaled), the
other candidates still are, and after --give-up-after since the first refusal the chain gives up
through the `gave_up` path with the reason. `inspect` lists each refusal."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import gpudeck
from tests.test_managed import Starts
from tests.test_managed_cloud import JOB, NO_CAPACITY, ON_DEMAND, SPOT, TAKEN_ON_A, Agents, Cloud, one_node
from tui.actions.options import LaunchOptions
from tui.managed import backoff
from tui.managed.records import Managed, ManagedDir, Policy
from tui.managed.recover import managed_pass


def at(mdir: ManagedDir, cloud: Cloud, t: float) -> list[dict]:
    return managed_pass(Agents(TAKEN_ON_A), None, mdir, clock=lambda: t, start=Starts(), cloud=cloud)


def test_a_refused_candidate_cools_down_exponentially_with_a_cap() -> None:
    assert [backoff.delay(n) for n in (1, 2, 3, 4, 5, 6, 7, 50)] == [60, 120, 240, 480, 960, 1800, 1800, 1800]


def test_a_refused_candidate_is_not_asked_again_before_its_next_try(tmp_path: Path) -> None:
    mdir = one_node(tmp_path, (SPOT, ON_DEMAND), give_up_after=36000.0)
    cloud = Cloud(refuse={SPOT: NO_CAPACITY, ON_DEMAND: NO_CAPACITY})
    first = at(mdir, cloud, 1000.0)
    assert [(r["outcome"], r.get("next_try")) for r in first] == [
        ("candidate_failed", 1060.0),
        ("candidate_failed", 1060.0),
        ("waiting", None),
    ]
    assert at(mdir, cloud, 1030.0)[-1]["outcome"] == "waiting" and len(cloud.calls) == 2  # no API call
    del cloud.refuse[ON_DEMAND]
    second = at(mdir, cloud, 1061.0)  # both may be asked again: SPOT is refused a second time
    assert second[0]["candidate"] == SPOT and second[0]["next_try"] == 1061.0 + 120
    assert second[-1]["outcome"] == "recovered" and second[-1]["to_host"] == "i-0000"
    [m] = mdir.all()
    assert backoff.since_last_recovery(m) == []  # a recovery starts the count again


def test_the_chain_gives_up_after_give_up_after_with_the_reason(tmp_path: Path) -> None:
    mdir = one_node(tmp_path, (SPOT,), give_up_after=600.0)
    cloud = Cloud(refuse={SPOT: NO_CAPACITY})
    for t in (1000.0, 1061.0, 1182.0, 1423.0):
        assert at(mdir, cloud, t)[-1]["outcome"] == "waiting"
    assert len(cloud.calls) == 4
    records = at(mdir, cloud, 1600.0)  # cooling until 1903, but 600 s have passed since the first
    assert len(cloud.calls) == 4 and records[-1]["outcome"] == "gave_up"
    why = records[-1]["why"]
    assert why.startswith(
        f"gave up: no candidate could be had for 10m00s ({SPOT}: InsufficientInstanceCapacity ×4)"
    )
    [m] = mdir.all()
    assert m.finished == why


def test_run_reads_give_up_after_and_refuses_a_bad_one(gpudeck_home: Path, workdir: Path) -> None:
    r = gpudeck("run", "--managed", "--give-up-after", "soon", "--", "true", cwd=workdir)
    assert r.returncode == 2 and "--give-up-after: expected a duration" in r.stderr
    r = gpudeck("run", "--give-up-after", "2h", "--", "true", cwd=workdir)
    assert r.returncode == 2 and "go with --managed" in r.stderr


def test_inspect_lists_each_refused_candidate_with_its_code_and_time(
    gpudeck_home: Path, workdir: Path
) -> None:
    import time

    r = gpudeck("run", "--name", "spot", "--", "true", cwd=workdir)
    job = r.stdout.strip().splitlines()[-1]
    mdir = ManagedDir()
    opts = LaunchOptions(argv=("true",), name="spot")
    refused = (
        {
            "candidate": SPOT,
            "code": "InsufficientInstanceCapacity",
            "capacity": True,
            "at": 1000.0,
            "next_try": 1060.0,
        },
        {
            "candidate": ON_DEMAND,
            "code": None,
            "capacity": False,
            "error": "launch: quota",
            "at": 1001.0,
            "next_try": 1061.0,
        },
    )
    mdir.save(Managed(job, job, "local", opts, Policy(fallback=(SPOT, ON_DEMAND)), refused=refused))
    shown = gpudeck("inspect", job, cwd=workdir).stdout
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(1000.0))
    nxt = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(1060.0))
    assert f"refused {SPOT}: InsufficientInstanceCapacity (no capacity) at {stamp}, next try {nxt}" in shown
    assert f"refused {ON_DEMAND}: launch: quota at" in shown


def test_a_long_wait_keeps_its_first_refusal_past_the_record_bound(tmp_path: Path) -> None:
    from tui.managed.records import MAX_REFUSED

    opts = LaunchOptions(argv=("true",), name="spot")
    m = Managed(JOB, JOB, "a", opts, Policy(fallback=(SPOT,), give_up_after=3600.0))
    failed = {"outcome": "candidate_failed", "candidate": SPOT, "code": "InsufficientInstanceCapacity"}
    for k in range(MAX_REFUSED + 50):  # many refusals: the oldest go, but not the loss's first
        m = backoff.noted(m, [dict(failed)], 1000.0 + k)
    assert len(m.refused) == MAX_REFUSED and m.refused[0]["at"] == 1000.0
    assert backoff.gave_up_why(m, 4599.0) is None and backoff.gave_up_why(m, 4600.0) is not None
