"""A Slurm host's charge rate (issue 30), without a cluster: the settings it is written with, the
price it gives, and how the cost counters bill a node of an allocation (its own GPUs, not a share of
the login node)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.cost.counters import shares_for
from tui.cost.runs import NodeRun, update_from_job
from tui.cost.settings import PriceSettingsError, host_price, validate_price_settings


def test_a_gpu_hour_rate_is_checked_and_priced_per_gpu() -> None:
    assert validate_price_settings({"price_per_gpu_hour": "1.5"}) == {"price_per_gpu_hour": 1.5}
    with pytest.raises(PriceSettingsError, match="price_per_node_hour: expected a number >= 0"):
        validate_price_settings({"price_per_node_hour": "-2"})
    gpu = host_price({"price_per_gpu_hour": 1.5})
    assert (gpu.per_hour, gpu.per, gpu.source) == (1.5, "gpu", "hosts.toml price_per_gpu_hour")
    assert host_price({"price_per_node_hour": 8}).per == "node"
    assert host_price({"price_per_hour": 3, "price_per_gpu_hour": 1}).per == "host"  # the host's own wins


def test_each_slurm_node_is_billed_on_its_own_gpus() -> None:
    runs = []
    for job, gpus in (("a", 2), ("b", 4)):
        run = NodeRun(job=job, node="0", host="cl")
        update_from_job(run, {"id": job, "state": "running", "slurm": {"job_id": "7", "gpus_per_node": gpus}})
        runs.append(run)
    assert shares_for(runs, [], "gpu") == {("cl", "a", "0"): 2.0, ("cl", "b", "0"): 4.0}
    assert shares_for(runs, [], "node") == {("cl", "a", "0"): 1.0, ("cl", "b", "0"): 1.0}
    assert shares_for(runs, []) == {("cl", "a", "0"): 0.5, ("cl", "b", "0"): 0.5}  # an SSH host: split


def test_an_output_pattern_is_expanded_as_sbatch_does() -> None:
    from remote_agent.slurm.output import expand, field

    values = {"job": "42", "name": "train", "user": "ann", "node": "gpu07"}
    assert expand("/s/%x-%N-%j.%u.out", values) == "/s/train-gpu07-42.ann.out"
    assert expand("/s/%8j_%a-100%%.log", values) == "/s/00000042_%a-100%.log"  # arrays: left as written
    line = "JobId=42 StdErr=/a b/out-%N.log StdIn=/dev/null StdOut=/a b/out-%N.log Power="
    assert field(line, "StdOut") == "/a b/out-%N.log" and field(line, "Power") is None


def test_a_rate_in_hosts_toml_loads_and_a_bad_one_names_its_line(gpudeck_home: Path) -> None:
    from tui.hosts_file import HostsFileError, load_hosts

    path = gpudeck_home / "hosts.toml"
    path.write_text('[hosts.cl]\ntarget = "login"\nprice_per_gpu_hour = 2.5\n\n[hosts.cl.slurm]\n')
    assert load_hosts()["cl"].extra["price_per_gpu_hour"] == 2.5
    path.write_text('[hosts.cl]\ntarget = "login"\nprice_per_node_hour = -1\n')
    with pytest.raises(HostsFileError, match="price_per_node_hour"):
        load_hosts()
