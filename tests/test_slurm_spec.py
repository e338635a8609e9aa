"""A Slurm placement of the one job spec (issue 30): its wire form and the field each refusal names."""

from __future__ import annotations

from dataclasses import fields

import pytest

from remote_agent.slurm.queue import parse_sacct, parse_scontrol, parse_squeue
from remote_agent.slurm.script import sbatch_argv
from remote_agent.spec import JobSpec, SlurmPlacement, SpecError

BASE = {"id": "20261205-000000-abcdef", "name": "t", "argv": ["python3", "t.py"]}
PLACEMENT = {
    "kind": "slurm",
    "nodes": 2,
    "gpus_per_node": 2,
    "time": "1-02:00:00",
    "partition": "gpu",
    "account": "lab",
    "qos": "normal",
    "sbatch_args": ["--exclusive", "--constraint=a100&ib"],
    "launcher": "torchrun",
    "nproc_per_node": 2,
    "master_port": 29501,
    "warn_before": 120,
}


def test_a_slurm_placement_round_trips_every_field() -> None:
    spec = JobSpec.from_wire({**BASE, "placement": PLACEMENT})
    assert spec.placement is not None and spec.placement.nodes == 2
    assert spec.to_wire()["placement"] == PLACEMENT
    assert {f.name for f in fields(SlurmPlacement)} == set(PLACEMENT)


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("nodes", 0, "spec.placement.nodes"),
        ("time", "2 hours", "spec.placement.time"),
        ("partition", "gpu; rm -rf ~", "spec.placement.partition"),
        ("sbatch_args", ["exclusive"], "spec.placement.sbatch_args[0]"),
        ("sbatch_args", ["--x\n#SBATCH --y"], "spec.placement.sbatch_args[0]"),
        ("launcher", "mpirun", "spec.placement.launcher"),
        ("kind", "k8s", "spec.placement.kind"),
        ("nodez", 1, "spec.placement: unknown field 'nodez'"),
    ],
)
def test_a_bad_placement_field_is_named(key: str, value: object, named: str) -> None:
    with pytest.raises(SpecError) as caught:
        JobSpec.from_wire({**BASE, "placement": {**PLACEMENT, key: value}})
    assert named in str(caught.value)


def test_a_slurm_job_takes_no_multinode_plan() -> None:
    multinode = {"nodes": 2, "rank": 0, "host": "a", "hosts": ["a", "b"]}
    with pytest.raises(SpecError, match="spec.placement"):
        JobSpec.from_wire({**BASE, "placement": PLACEMENT, "multinode": multinode})


def test_sbatch_gets_each_option_as_one_argument(tmp_path) -> None:
    spec = JobSpec.from_wire({**BASE, "placement": PLACEMENT}).to_wire()
    argv = sbatch_argv(spec, tmp_path / "s.sbatch", tmp_path)
    assert argv[:2] == ["sbatch", "--parsable"]
    assert "--constraint=a100&ib" in argv and "--partition=gpu" in argv and "--gpus-per-node=2" in argv
    assert "--time=1-02:00:00" in argv and "--signal=B:USR1@120" in argv  # the batch shell's warning
    assert f"--output={tmp_path.resolve()}/slurm-%j.out" in argv  # absolute: never the submit dir's
    assert argv[-1] == str((tmp_path / "s.sbatch").resolve())


def test_slurm_text_output_is_read_totally() -> None:
    queue = parse_squeue("7|PENDING|Resources|||N/A\n8|RUNNING|None|n[1-2]|2026-12-05T10:00:00\ngarbage\n")
    assert set(queue) == {"8"}  # a line of another shape is skipped
    queue = parse_squeue("7|PENDING|(Resources)||N/A\n")
    assert queue["7"].state == "PENDING" and queue["7"].reason == "Resources"
    ended = parse_sacct("9|FAILED|3:0|n1\n9.batch|FAILED|3:0|n1\n10|CANCELLED by 0|0:15|n2\n")
    assert (ended["9"].state, ended["9"].exit_code) == ("FAILED", 3)
    assert ended["10"].state == "CANCELLED" and "9.batch" not in ended
    job = parse_scontrol("JobId=11 JobName=x JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15 NodeList=n3")
    assert job is not None and (job.state, job.reason, job.nodes, job.signal) == (
        "TIMEOUT",
        "TimeLimit",
        "n3",
        15,
    )


def test_gres_gpu_counts_read_every_form_sinfo_prints() -> None:
    from remote_agent.slurm.probe import gpu_count

    assert gpu_count("gpu:2") == 2
    assert gpu_count("gpu:a100:4(S:0-1)") == 4
    assert gpu_count("gpu:a100:4(S:0-1),gpu:v100:2") == 6
    assert gpu_count("gpu:a100:1(IDX:0)") == 1
    assert gpu_count("(null)") == 0
