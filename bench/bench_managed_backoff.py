"""Provider calls a sold-out cloud candidate costs while a managed job waits for capacity: one chain
whose host was taken, its only --fallback candidate an Aliyun spot type refused for stock at every
launch (the local Aliyun endpoint, tests/support/aliyun.py), the controller's pass every --every
seconds for --hours on an injected clock (no sleeping). Side by side in the same run: the back-off
(tui/managed/backoff.py) and none (BASE = 0: every pass asks again, what the controller did before).
Counts are exact, not timed: RunInstances and all ECS calls, and when the chain gave up.

    python bench/bench_managed_backoff.py [--every 10] [--hours 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support import aliyun as fake  # noqa: E402
from tests.test_managed import Starts  # noqa: E402
from tests.test_managed_nodes import (
    JOB,  # noqa: E402
    Agents,  # noqa: E402
)
from tui.actions.options import LaunchOptions  # noqa: E402
from tui.managed import backoff  # noqa: E402
from tui.managed.cloud import ManagedCloud  # noqa: E402
from tui.managed.records import Managed, ManagedDir, Policy  # noqa: E402
from tui.managed.recover import managed_pass  # noqa: E402
from tui.settings import CloudSettings, Settings  # noqa: E402
from tui.settings_cloud_access import ProviderLaunch  # noqa: E402

CANDIDATE = "aliyun:cn-hangzhou-i:ecs.gn7i-c8g1.2xlarge:spot:img-1"


def one_run(every: float, hours: float, base: float) -> tuple[int, int, float | None]:
    """(RunInstances calls, ECS calls, seconds until the chain gave up or None)."""
    with (
        pytest.MonkeyPatch.context() as mp,
        fake.serving(mp) as server,
        tempfile.TemporaryDirectory() as home,
    ):
        mp.setenv("GPUDECK_HOME", home)
        mp.setattr(backoff, "BASE", base)
        mdir = ManagedDir(Path(home) / "managed")
        opts = LaunchOptions(argv=("python", "train.py"), host="a", name="spot")
        mdir.save(Managed(JOB, JOB, "a", opts, Policy(fallback=(CANDIDATE,))))
        agents = Agents({"a": {"0": {"state": "stopped", "reason": "preempted"}}})
        settings = Settings(cloud=CloudSettings(aliyun=ProviderLaunch(networks={"cn-hangzhou-i": "vsw-i"})))
        cloud = ManagedCloud(agents, settings)
        start, t0, gave_up = Starts(), 1_000_000.0, None
        steps = int(hours * 3600 / every)
        for k in range(steps + 1):
            server.account.faults.append(("RunInstances", "nostock"))  # sold out at every ask
            now = t0 + k * every
            records = managed_pass(
                agents, None, mdir, clock=lambda now=now: now, start=start, cloud=cloud.launch
            )
            if any(r["outcome"] == "gave_up" for r in records):
                gave_up = now - t0
                break
        calls = server.account.calls
        runs = sum(1 for c in calls if c.get("Action") == "RunInstances")
        return runs, len(calls), gave_up


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--every", type=float, default=10.0, help="seconds between controller passes")
    parser.add_argument("--hours", type=float, default=1.0)
    args = parser.parse_args()
    os.environ.pop("GPUDECK_HOME", None)
    print(f"one sold-out candidate, a pass every {args.every:g} s for {args.hours:g} h (simulated clock)")
    for label, base in (
        ("no back-off (every pass asks)", 0.0),
        (f"back-off {backoff.BASE:g} s ×2, cap {backoff.CAP:g} s", backoff.BASE),
    ):
        runs, calls, gave_up = one_run(args.every, args.hours, base)
        said = f"gave up after {gave_up:.0f} s" if gave_up is not None else "still waiting"
        print(f"  {label:34s} RunInstances {runs:5d}   ECS calls {calls:5d}   {said}")


if __name__ == "__main__":
    main()
