"""The one job spec type (remote_agent/spec.py): what the client builds, the agent checks and the
readers read is one definition, its wire form round-trips, and every bad field is named."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from remote_agent.spec import JobSpec, Multinode, SpecError
from remote_agent.supervision.jobspec import validate_spec
from tui.actions.launch import build_spec
from tui.actions.nodes import plan
from tui.actions.options import LaunchOptions
from tui.fleet import Fleet

JOB = "20261201-000000-abcdef"


def _full(workdir: Path) -> dict:
    return {
        "id": JOB,
        "name": "train",
        "node": "1",
        "argv": ["python", "t.py"],
        "workdir": str(workdir),
        "env": {"A": "1"},
        "setup": ["source v/bin/activate"],
        "grace": 5.0,
        "stop_signal": "SIGINT",
        "path": "/bin",
        "created_at": 1.5e9,
        "output_cap": 2 << 20,
        "gpu_interval": 1.0,
        "heartbeat_interval": 2.0,
        "price": {"per_hour": 2.0, "share": 0.5, "currency": "USD", "market": "spot", "source": "catalog"},
        "budget": 10.0,
        "hold_on_fail": 3600.0,
        "idle_stop": {"below_pct": 5.0, "minutes": 30.0, "grace_minutes": 15.0},
        "multinode": {
            "nodes": 2,
            "rank": 1,
            "host": "b",
            "hosts": ["a", "b"],
            "launcher": "torchrun",
            "nproc_per_node": 2,
            "master_addr": "10.0.0.1",
            "master_port": 29500,
            "port_chosen": False,
            "command": ["python", "t.py"],
            "pool": ["a", "b", "c"],
            "pinned": [],
            "setup": [],
            "workdir": None,
            "env_keys": ["A"],
            "elastic": [1, 3],
            "hints": ["NCCL_SOCKET_IFNAME=eth0"],
            "round_trips": ["node 1: 0.42 ms"],
        },
        "restart_of": "20261130-000000-aaaaaa",
        "resized_from": {"job": "20261130-000000-aaaaaa", "nodes": 1, "why": "scale +1"},
        "code": {
            "snapshot": "ab" * 32,
            "home": "20261130-000000-aaaaaa",
            "files": 3,
            "bytes": 10,
            "source": "~/p",
        },
        "environment": {
            "requirements": "numpy==2.0\n",
            "source": "requirements.txt",
            "pip_options": ["--no-index"],
            "python": "python3",
        },
        "data": [
            {
                "url": "s3://bucket/prefix",
                "path": "data",
                "mode": "copy",
                "objects": [["prefix/a", 3, "etag"]],
                "endpoint_url": "http://127.0.0.1:9000",
            }
        ],
        "runtime": {
            "image": "localhost/py:test",
            "runtime": "podman",
            "digest": "sha256:" + "cd" * 32,
            "mounts": ["/data:/data:ro", "/cache:/root/.cache"],
            "shm_size": "16g",
            "ipc": "host",
            "user": "image",
            "gpus": ["0", "1"],
        },
        "gpus": {"count": 2, "model": "A100"},
        "notify": {"urls": ["json://127.0.0.1:9/hook"], "events": ["failed", "budget_stop"]},
        "stall": {"after": 600.0, "action": "restart", "restarts": 1},
        "notice": {"provider": "aws", "metadata_endpoint": "http://127.0.0.1:1338"},
        "pty": True,
        "tensorboard": "runs/exp",
        "logger_files": False,
    }


def test_the_wire_form_round_trips_every_field(tmp_path: Path) -> None:
    wire = _full(tmp_path)
    spec = JobSpec.from_wire(wire)
    assert spec.to_wire() == wire
    assert JobSpec.from_wire(spec.to_wire()) == spec
    assert spec.multinode is not None and spec.multinode.elastic == (1, 3) and spec.price is not None
    # every field exercised here (a Slurm placement excludes multinode: tests/test_slurm_spec.py)
    assert {f.name for f in fields(JobSpec)} == set(wire) | {"watch", "placement"}


@pytest.mark.parametrize("action", ["notify", "dump", "stop", "restart"])
def test_every_stall_action_round_trips(tmp_path: Path, action: str) -> None:
    wire = dict(_full(tmp_path), stall={"after": None, "action": action})
    spec = JobSpec.from_wire(wire)
    assert spec.stall is not None and spec.stall.action == action
    assert spec.to_wire()["stall"] == {"after": None, "action": action}


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        (("id",), "x", "spec.id"),
        (("name",), "bad name", "spec.name"),
        (("node",), "", "spec.node"),
        (("argv",), [], "spec.argv"),
        (("argv",), [1], "spec.argv[0]"),
        (("env",), {"A=": "1"}, "spec.env"),
        (("grace",), 1e23, "spec.grace"),
        (("grace",), float("nan"), "spec.grace"),
        (("stop_signal",), "SIGNOPE", "spec.stop_signal"),
        (("output_cap",), 5, "spec.output_cap"),
        (("price", "per_hour"), -1, "spec.price.per_hour"),
        (("budget",), 0, "spec.budget"),
        (("hold_on_fail",), 0, "spec.hold_on_fail"),
        (("idle_stop", "below_pct"), 101, "spec.idle_stop.below_pct"),
        (("multinode", "nodes"), 0, "spec.multinode.nodes"),
        (("multinode", "launcher"), "mpirun", "spec.multinode.launcher"),
        (("multinode", "master_port"), 70000, "spec.multinode.master_port"),
        (("multinode", "elastic"), [3, 1], "spec.multinode.elastic"),
        (("resized_from", "job"), "x", "spec.resized_from.job"),
        (("restart_of",), "nope", "spec.restart_of"),
        (("code", "snapshot"), "ABC", "spec.code.snapshot"),
        (("code", "home"), "../x", "spec.code.home"),
        (("environment", "requirements"), 5, "spec.environment.requirements"),
        (("data",), {"url": "s3://b"}, "spec.data: expected a list"),
        (("data", 0, "url"), "http://x/y", "spec.data[0].url"),
        (("data", 0, "mode"), "fuse", "spec.data[0].mode"),
        (("data", 0, "objects", 0), ["k", -1, "e"], r"spec.data[0].objects[0][1]"),
        (("runtime",), "img", "spec.runtime: expected an object"),
        (("gpus",), 2, "spec.gpus: expected an object"),
        (("notify", "urls"), ["mailto://x"], "spec.notify.urls[0]"),
        (("notify", "events"), ["recovered"], "spec.notify.events"),
        (("stall", "action"), "reboot", "spec.stall.action"),
        (("stall", "after"), -1, "spec.stall.after"),
        (("gpus", "count"), 0, "spec.gpus.count"),
        (("gpus", "count"), 65, "spec.gpus.count"),
        (("gpus", "model"), "A100\n", "spec.gpus.model"),
        (("notice", "provider"), "azure", "spec.notice.provider"),
        (("notice", "metadata_endpoint"), "file:///etc/passwd", "spec.notice.metadata_endpoint"),
        (("notice", "token"), "x", "spec.notice: unknown field 'token'"),
        (("runtime", "image"), "-v x", "spec.runtime.image"),
        (("runtime", "runtime"), "lxc", "spec.runtime.runtime"),
        (("runtime", "digest"), "sha256:XY", "spec.runtime.digest"),
        (("runtime", "mounts", 0), "data:/data", r"spec.runtime.mounts[0]"),
        (("runtime", "mounts", 1), "/a:/b:rx", r"spec.runtime.mounts[1]"),
        (("runtime", "shm_size"), "lots", "spec.runtime.shm_size"),
        (("runtime", "ipc"), "shareable", "spec.runtime.ipc"),
        (("runtime", "user"), "nobody", "spec.runtime.user"),
        (("runtime", "gpus"), ["all"], "spec.runtime.gpus"),
        (("runtime", "volumes"), [], "spec.runtime: unknown field 'volumes'"),
        (("typo_field",), 1, "unknown field 'typo_field'"),
        (("multinode", "nodez"), 1, "spec.multinode: unknown field 'nodez'"),
    ],
)
def test_each_bad_field_is_named(tmp_path: Path, path: tuple[str, ...], value: object, named: str) -> None:
    wire = _full(tmp_path)
    target = wire
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(SpecError, match=named.replace("[", r"\[").replace("]", r"\]")):
        JobSpec.from_wire(wire)
    assert JobSpec.read(wire) is None  # a reader gets None, never an exception


def test_what_the_client_builds_the_agent_takes_and_the_fleet_reads(
    gpudeck_home: Path, workdir: Path
) -> None:
    opts = LaunchOptions(
        argv=("python", "t.py"), workdir=str(workdir), nodes=2, pool=("local",), env=(("A", "1"),)
    )
    plans = plan(opts, JOB)
    spec = build_spec(None, opts, JOB, node="1").replace(multinode=plans[1].multinode)
    checked = validate_spec(spec.to_wire())  # the agent's check, on its host
    assert JobSpec.from_wire(checked) == spec
    assert Multinode.read(checked["multinode"]) == plans[1].multinode
    fleet = Fleet(clock=lambda: 0.0)
    fleet.apply_jobs(
        "local",
        [{"id": JOB, "name": spec.name, "node": "1", "state": "running", "multinode": checked["multinode"]}],
    )
    placement = fleet.jobs[JOB].placement
    assert placement is not None and placement.pool == ("local",) and placement.per_node == 1


def test_a_reader_survives_any_shape() -> None:
    for junk in (None, 5, "x", [], {"nodes": "2"}, {"nodes": 2}, {"rank": -1}):
        assert Multinode.read(junk) is None
        assert JobSpec.read(junk) is None


def test_only_a_whole_image_id_is_pinned_by_a_restart() -> None:
    from remote_agent.containers.fields import pin_image
    from remote_agent.containers.image import as_image_id

    assert as_image_id("ab" * 32) == as_image_id("sha256:" + "ab" * 32) == "sha256:" + "ab" * 32
    assert as_image_id("") is None and as_image_id("sha256:") is None and as_image_id(None) is None
    spec = {"runtime": {"image": "x"}}
    pin_image(spec, {"image_id": "sha256:"})
    assert spec == {"runtime": {"image": "x"}}
    pin_image(spec, {"image_id": "sha256:" + "ab" * 32})
    assert spec["runtime"]["digest"] == "sha256:" + "ab" * 32
