"""The catalog's figures are the source rows' figures (issue 32, item 2): each filled AWS price is the
on-demand price and the spot low/high over the us-east-1 zones of the skypilot-catalog rows it names;
each Aliyun size has the documented vCPUs, memory and GPU count; and a vertical move out of gn7i's
largest one-GPU size lands on a multi-GPU size with one process per GPU there."""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tui.actions.find import Job
from tui.cost import catalog
from tui.policy.bigger import family, next_larger
from tui.policy.controller import Controller
from tui.policy.inputs import HostInstance, JobFacts, Point
from tui.policy.journal import PolicyJournal
from tui.policy.rules import load

DATA = Path(__file__).parent / "data" / "catalog"


def _rows(name: str) -> list[dict[str, str]]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return list(csv.DictReader(line for line in lines if not line.startswith("#")))


def test_filled_aws_prices_are_the_source_rows_on_demand_and_spot_range() -> None:
    by_type: dict[tuple[str, str, str], list[dict[str, str]]] = defaultdict(list)
    for row in _rows("skypilot_us_east_1.csv"):
        by_type[(row["instance_type"], row["path"], row["commit"])].append(row)
    assert len(by_type) == 12
    for (kind, path, commit), rows in by_type.items():
        entry = catalog.find("aws", kind, "us-east-1")
        assert entry is not None and entry.region == "us-east-1", kind
        assert f"skypilot-org/skypilot-catalog {path} @{commit}" in entry.source, (kind, entry.source)
        assert entry.as_of, kind  # a price carries the date it was true
        [on_demand] = {float(r["price"]) for r in rows}  # one list price per region
        assert entry.on_demand_usd_per_hour == on_demand, kind
        spot = [float(r["spot_price"]) for r in rows if r["spot_price"]]
        low, high = (min(spot), max(spot)) if spot else (None, None)
        assert (entry.spot_usd_per_hour_low, entry.spot_usd_per_hour_high) == (low, high), kind


def test_aliyun_sizes_have_the_documented_cpus_memory_and_gpus() -> None:
    documented = _rows("aliyun_gpu_families.csv")
    for row in documented:
        entry = catalog.find("aliyun", row["instance_type"])
        assert entry is not None, row["instance_type"]
        assert (entry.vcpus, entry.memory_gib, entry.gpus) == (
            int(row["vcpus"]),
            float(row["memory_gib"]),
            int(row["gpus"]),
        ), row["instance_type"]
        assert "Alibaba Cloud ECS documentation" in entry.source
        assert entry.on_demand_usd_per_hour is None  # no public price was read: unknown, never a guess
    listed = {e.instance_type for e in catalog.entries() if e.provider == "aliyun"}
    assert listed == {row["instance_type"] for row in documented}  # every documented size, nothing else


def test_every_row_of_the_gpu_families_says_how_much_memory_it_has() -> None:
    for e in catalog.entries():
        assert e.memory_gib, (e.provider, e.instance_type)


SMALL = "ecs.gn7i-c56g1.14xlarge"  # gn7i's largest one-GPU size


@dataclass
class _Busy:
    """small's GPU at 95 % for the last 10 minutes."""

    instance_type: str

    def sync(self, jobs: list[Job]) -> list[str]:
        return []

    def view(self, job: Job, now: float) -> JobFacts:
        return JobFacts(
            job.id,
            job.name,
            1,
            ("small",),
            instance=HostInstance("aliyun", self.instance_type, None, "on-demand"),
            gpu={("small", "gpu_util"): [Point(now - 600 + i * 30, 95.0) for i in range(21)]},
        )


@dataclass
class _FreeOn:
    host: str

    def free(self, hosts: Sequence[str]) -> Mapping[str, int]:
        return {h: 8 for h in hosts if h == self.host}

    def price(self, pool: object) -> float | None:
        return None

    def release(self, host: Mapping[str, str], how: str) -> str:
        return host.get("instance_id", "")


def test_a_vertical_move_from_gn7i_one_gpu_sets_one_process_per_gpu_of_the_next_size(tmp_path: Path) -> None:
    entries = catalog.entries()
    proposal = next_larger(entries, "aliyun", SMALL, None, "on-demand")
    assert proposal.current is not None and proposal.next is not None
    bigger = proposal.next
    assert family("aliyun", bigger.instance_type) == "gn7i" and bigger.gpus and bigger.gpus > 1
    host_types = {"small": SMALL, "big": bigger.instance_type}
    (tmp_path / "policies.toml").write_text(
        '[pool.a10]\nhosts = ["small", "big"]\n\n[[rule]]\nname = "bigger"\nkind = "vertical"\n'
        'pool = "a10"\nabove = 90\nfor = "5m"\nauto = true\n'
    )
    procs: list[int | None] = []

    def move(job: Job, hosts: dict[str, str], gpus: int | None) -> str:
        procs.append(gpus)
        return "j-moved"

    ctl = Controller(
        jobs=lambda: [Job("j1", "train", [{"host": "small", "node": "0", "state": "running"}])],
        observer=_Busy(SMALL),
        policies=load(tmp_path / "policies.toml"),  # type: ignore[arg-type]
        journal=PolicyJournal(tmp_path / "journal.jsonl"),
        resize=lambda *a: "unused",
        catalog=entries,
        clock=lambda: 1_800_000_000.0,
        capacity=_FreeOn("big"),
        move=move,
        host_settings={
            name: {"provider": "aliyun", "instance_type": kind, "market": "on-demand"}
            for name, kind in host_types.items()
        },
    )
    [applied] = ctl.tick()
    assert (applied["outcome"], applied["from"], applied["to"]) == ("applied", SMALL, bigger.instance_type)
    assert procs == [bigger.gpus] and applied["nproc_per_node"] == bigger.gpus
