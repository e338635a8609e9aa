"""A Slurm job in the TUI's model (issue 30), without a cluster: every node's host is the login node,
so each node says which compute node its rank runs on (`slurm.node`, from Slurm's node list) and its
GPUs are shown under that node; `+`/`-` ask for a new allocation; the launch form's Slurm fields are
checked into the options `gpudeck run` makes."""

from __future__ import annotations

import pytest

from remote_agent.slurm.hostlist import expand, node_of_rank
from tui.actions.options import LaunchOptions
from tui.actions.slurm_form import SlurmForm, slurm_options
from tui.errors import GpudeckError
from tui.fleet import Fleet
from tui.screens.job_actions import resize_plan
from tui.widgets.gpu_strip import strip_lines
from tui.widgets.job_nodes import render_nodes

JOB = "20261206-010000-aaaaaa"


def test_slurm_node_lists_expand_in_slurms_order() -> None:
    assert expand("n[1-3]") == ["n1", "n2", "n3"]
    assert expand("gpu-a[08-10,12],login2,c[1-2]x") == [
        "gpu-a08",
        "gpu-a09",
        "gpu-a10",
        "gpu-a12",
        "login2",
        "c1x",
        "c2x",
    ]
    assert expand("n[3-1]") == [] and expand("n[1-") == [] and expand(None) == []  # not guessed
    assert node_of_rank("n[4-5]", "1") == "n5" and node_of_rank("n[4-5]", "2") is None


def _two_node_job(fleet: Fleet) -> None:
    slurm = {"job_id": "42", "state": "RUNNING", "nodes": "n[1-2]"}
    fleet.apply_jobs(
        "cl",
        [
            {
                "id": JOB,
                "name": "big",
                "node": str(rank),
                "state": "running",
                "pid": 10 + rank,
                "argv": ["python", "train.py", "--checkpoint-dir", "ck"],
                "slurm": dict(slurm, node=f"n{rank + 1}"),
            }
            for rank in (0, 1)
        ],
    )
    job = fleet.jobs[JOB]
    for rank, utils in ((0, (80, 60)), (1, (20, 40))):
        gpus = [{"index": i, "uuid": f"GPU-{rank}-{i}", "util": u} for i, u in enumerate(utils)]
        job.apply_record("cl", job.nodes[str(rank)], {"kind": "gpu", "gpus": gpus}, 990.0)


def test_each_node_shows_its_compute_nodes_gpus_and_plus_asks_a_new_allocation() -> None:
    fleet = Fleet(clock=lambda: 1000.0)
    fleet.set_host_status("cl", "connected")
    _two_node_job(fleet)
    job = fleet.jobs[JOB]
    assert job.cluster == "cl" and job.nodes["1"].where == "cl/n2"
    rows = [line.split() for line in render_nodes(job, fleet, 1000.0).plain.splitlines()[1:]]
    assert [r[:3] for r in rows] == [["0", "cl/n1", "running"], ["1", "cl/n2", "running"]]
    assert rows[0][5:7] == ["2", "70%"] and rows[1][5:7] == ["2", "30%"], rows  # each its own GPUs
    strip = [line.plain.split()[0] for line in strip_lines(job, 120)]
    assert strip == ["cl/n1", "cl/n2"]
    assert resize_plan(fleet, job, "+1") == ("a new allocation of 3 nodes on cl", ())
    assert resize_plan(fleet, job, "-1") == ("a new allocation of 1 node on cl", ())


def test_the_forms_slurm_fields_become_the_runs_options_or_one_line_naming_the_field() -> None:
    base = LaunchOptions(argv=("python", "train.py"), host="cl")
    form = SlurmForm.of_table({"partition": "gpu", "account": "lab"})
    assert form.placeholder("partition") == "the host's: gpu" and form.placeholder("qos") == "Slurm's default"
    fields = {"nodes": "2", "gpus_per_node": "4", "time": "2:00:00", "qos": "high"}
    got = slurm_options(base, fields, form)
    assert (got.nodes, got.gpus_per_node, got.time_limit, got.partition, got.qos) == (
        2,
        4,
        "2:00:00",
        None,
        "high",
    )
    for bad, field in (
        ({"nodes": "two"}, "nodes:"),
        ({"gpus_per_node": "-1"}, "gpus per node:"),
        ({"time": "soon"}, "time:"),
    ):
        with pytest.raises(GpudeckError) as refused:
            slurm_options(base, bad, form)
        assert str(refused.value).startswith(field), str(refused.value)
