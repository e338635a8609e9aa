"""A small Aliyun account for the Cloud tab's pictures (the snapshot test and docs/screenshots.py):
an idle instance, a busy one that is a gpudeck host, one without a GPU metric, a stopped one.
Every time is relative to `now`, so a stopped clock gives the same picture on every run."""

from __future__ import annotations

from tests.support.aliyun import Account
from tui.hosts_file import HostEntry, add_host, set_host_fields

SHOT_SIZE = (200, 24)  # the table's columns want ~190 cells


def minutes(now: float, count: int, value: float) -> list[tuple[float, float]]:
    return [(now - 60 * k, value) for k in range(count)]


def fill(account: Account, now: float) -> dict[str, str]:
    """The instances (name → id); hosts.toml (GPUDECK_HOME) gets the busy one as host `gpu1`."""
    acc = account
    ids = {
        "forgotten-a10": acc.add(
            name="forgotten-a10", started=now - 5 * 3600, tags={"gpudeck-managed": "true"}
        ),
        "llm-finetune": acc.add("ecs.gn7-c12g1.3xlarge", name="llm-finetune", started=now - 3 * 3600 - 1260),
        "eval-box": acc.add(name="eval-box", started=now - 1800),
        "old-notebook": acc.add(name="old-notebook", status="Stopped", started=now - 86400),
    }
    acc.instances[ids["llm-finetune"]]["GPUSpec"] = "NVIDIA A100"
    acc.metrics[ids["forgotten-a10"]] = minutes(now, 120, 1.5)
    acc.metrics[ids["llm-finetune"]] = [(t, 88.0 + (k % 7)) for k, (t, _v) in enumerate(minutes(now, 120, 0))]
    add_host(HostEntry(name="gpu1", target="root@127.0.0.1:22"))
    set_host_fields("gpu1", {"provider": "aliyun", "instance_id": ids["llm-finetune"]})
    return ids
