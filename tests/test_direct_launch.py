"""trainer.torchrun without torchrun: a restart-mode node (static rendezvous, one worker) becomes its
worker with torchrun's environment, instead of a torchrun that imports torch and spawns it."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from tests.support.sshd import free_port
from trainer.direct_launch import direct_worker
from tui.actions.nodes import elastic_flags, static_flags

PY = "/usr/bin/python3"
TRAIN = ["-m", "trainer", "--steps", "5"]


def test_the_flags_gpudeck_writes_for_a_restart_mode_node_become_the_workers_environment() -> None:
    flags = static_flags(3, 2, 1, "10.0.0.5", 29511)
    argv, env = direct_worker([*flags, *TRAIN], {"PATH": "/bin", "GPUDECK_JOB_KEY": "k"}, PY)
    assert argv == [PY, "-u", *TRAIN]  # torchrun's own way of running a module
    assert {
        k: env[k]
        for k in (
            "RANK",
            "LOCAL_RANK",
            "WORLD_SIZE",
            "LOCAL_WORLD_SIZE",
            "GROUP_RANK",
            "MASTER_ADDR",
            "MASTER_PORT",
        )
    } == {
        "RANK": "2",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "3",
        "LOCAL_WORLD_SIZE": "1",
        "GROUP_RANK": "2",
        "MASTER_ADDR": "10.0.0.5",
        "MASTER_PORT": "29511",
    }
    assert env["TORCHELASTIC_USE_AGENT_STORE"] == "False"  # rank 0's process group hosts the store
    assert env["PATH"] == "/bin" and env["GPUDECK_JOB_KEY"] == "k"  # the job's own environment kept
    assert direct_worker([*flags, *TRAIN], {"PYTHON_EXEC": "/opt/py"}, PY)[0][0] == "/opt/py"  # as torchrun


@pytest.mark.parametrize(
    "argv",
    [
        [*static_flags(2, 0, 2, "127.0.0.1", 29500), *TRAIN],  # two workers: torchrun spawns them
        [
            *elastic_flags((1, 3), 1, "127.0.0.1", 29500, "job", 0),
            *TRAIN,
        ],  # elastic: torchrun's agent re-forms
        [*static_flags(2, 0, 1, "127.0.0.1", 29500), "--log-dir=/tmp/x", *TRAIN],  # a flag we do not write
        [
            "--nnodes",
            "2",
            "--node-rank=0",
            "--nproc-per-node=1",
            "--master-addr=a",
            "--master-port=1",
            *TRAIN,
        ],
        [*static_flags(2, 0, 1, "127.0.0.1", 29500), "-m", "other"],  # not gpudeck's trainer
        [*static_flags(2, 0, 1, "127.0.0.1", 29500), "train.py"],
        [*static_flags(2, 2, 1, "127.0.0.1", 29500), *TRAIN],  # rank outside the world
        [*static_flags(2, 0, 1, "127.0.0.1", 0), *TRAIN],
        [
            "--nnodes=2",
            "--nnodes=2",
            "--node-rank=0",
            "--nproc-per-node=1",
            "--master-addr=a",
            "--master-port=1",
            *TRAIN,
        ],
    ],
    ids=["nproc2", "elastic", "log-dir", "spaced", "module", "script", "rank", "port", "twice"],
)
def test_anything_else_stays_with_torchrun(argv: list[str]) -> None:
    assert direct_worker(argv, {}, PY) is None


# -- the real thing: two nodes on this machine (torch, gloo) ------------------------------------------


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_two_nodes_train_as_the_launched_processes_stop_on_sigterm_and_resume_with_startup_marks(
    tmp_path: Path,
) -> None:
    pytest.importorskip("torch")
    from test_trainer import Trainer, events, metrics

    class Node(Trainer):
        def __init__(self, rank: int, port: int, *args: str) -> None:
            self.flags = static_flags(2, rank, 1, "127.0.0.1", port)
            super().__init__(*args)

        def command(self, args: tuple[str, ...]) -> list[str]:
            return [sys.executable, "-m", "trainer.torchrun", *self.flags, "-m", "trainer", *args]

    common = (
        "--synthetic-size",
        "64",
        "--batch-size",
        "12",
        "--image-size",
        "8",
        "--workers",
        "0",
        "--threads",
        "1",
        "--val-size",
        "8",
        "--checkpoint-dir",
        str(tmp_path / "ck"),
        "--run-id",
        "d",
    )

    def pair(*args: str) -> list[Node]:
        port = free_port()
        return [Node(rank, port, *common, *args) for rank in (0, 1)]

    nodes = pair("--steps", "100000")
    try:
        nodes[0].wait_for(lambda o: o.get("step", 0) >= 3 and o.get("world_size") == 2, timeout=90)
        # each launched process is the trainer itself: no torchrun parent, no worker below it
        assert [_children(n.proc.pid) for n in nodes] == [[], []]
        nodes[0].proc.send_signal(signal.SIGTERM)  # as the supervisor stops a node: the command's pid
        nodes[1].proc.send_signal(signal.SIGTERM)
        rc0, lines = nodes[0].finish(60)
        rc1, _ = nodes[1].finish(60)
    finally:
        for n in nodes:
            n.kill()
    assert (rc0, rc1) == (0, 0), nodes[0].stderr() + nodes[1].stderr()
    saved = events(lines, "checkpoint_saved")
    assert [s["reason"] for s in saved] == ["signal"]
    last = saved[0]["step"]

    nodes = pair("--steps", str(last + 2))
    try:
        rc0, again = nodes[0].finish(90)
        rc1, _ = nodes[1].finish(90)
    finally:
        for n in nodes:
            n.kill()
    assert (rc0, rc1) == (0, 0), nodes[0].stderr() + nodes[1].stderr()
    resumed = events(again, "resumed")
    assert [(r["step"], r["world_size"]) for r in resumed] == [(last, 2)]
    assert sorted(metrics(again)) == [last + 1, last + 2]
    marks = resumed[0]["startup"]
    assert "launcher_imported" not in marks  # no torchrun imported torch on the way
    order = ["process_started", "imported", "joined", "peers", "restored"]
    assert list(marks) == order and [marks[k] for k in order] == sorted(marks[k] for k in order), marks
