"""Jobs in containers (issue 28) with real podman: output and metrics as on the bare host, a stop
that reaches the trainer through a `sh -c` entrypoint, kill, adoption, and nothing left after."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remote_agent.containers.host import cdi_devices
from remote_agent.jobstate import supervisor_alive
from tests.conftest import gpudeck
from tests.support.containers import (
    BB_IMAGE,
    DASH_IMAGE,
    PY_IMAGE,
    cdi_turn,
    conmons_of,
    containers_named,
    fake_cdi_gpus,
    local_registry,
    podman,
)
from tests.support.jobs import journal, launch, wait_state
from tests.support.sshd import SSHD, Sshd, SshHome, make_sshd
from tests.support.waiting import wait_for
from tui.actions.node_spec import JobTerms, node_spec
from tui.actions.options import LaunchOptions, check
from tui.errors import GpudeckError
from tui.remote.client import AgentClient, AgentError

TRAIN = """\
import json, os, signal, sys, time
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
for step in range(1, 100000):
    print(json.dumps({"step": step, "loss": round(1.0 / step, 4)}), flush=True)
    if stop:
        with open("ckpt.txt", "w") as f:
            f.write("step %d\\n" % step)
        print(json.dumps({"event": "checkpoint_saved", "step": step}), flush=True)
        sys.exit(0)
    time.sleep(0.05)
"""


def output(agent_dir: Path, job_id: str) -> str:
    return (agent_dir / "jobs" / job_id / "0" / "output.log").read_text(errors="replace")


def name_of(job: dict[str, Any]) -> str:
    """Node 0's container name, or every node's prefix for a job without a node."""
    return f"gpudeck-{job['id']}-{job['node']}" if "node" in job else f"gpudeck-{job['id']}-"


def nothing_left(job: dict[str, Any]) -> bool:
    return not containers_named(name_of(job)) and not conmons_of(name_of(job))


def assert_nothing_left(job: dict[str, Any]) -> None:
    """No container (any state) and no conmon of the job's node remain."""
    try:
        wait_for(lambda: nothing_left(job), what="no container, no conmon")
    except AssertionError:
        raise AssertionError(
            f"left: containers {containers_named(name_of(job))}, conmons {conmons_of(name_of(job))}"
        ) from None


def container_job(
    client: AgentClient, workdir: Path, argv: list[str], image: str = PY_IMAGE, **extra: Any
) -> dict[str, Any]:
    runtime = {"image": image, "runtime": "podman", **extra.pop("runtime", {})}
    return launch(client, workdir, argv, runtime=runtime, **extra)


@pytest.mark.slow
def test_a_container_jobs_loss_is_journaled_and_nothing_is_left(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    script = (
        "import json\nfor s in range(1, 6): print(json.dumps({'step': s, 'loss': 1.0 / s}), flush=True)\n"
    )
    job = container_job(client, workdir, ["python3", "-c", script], env={"SECRET_TOKEN": "hunter2-xyz"})
    end = wait_state(client, job["id"], {"exited", "failed"}, timeout=60)
    assert end["state"] == "exited", output(agent_dir, job["id"])
    records = journal(agent_dir, job["id"])
    losses = [r["values"]["loss"] for r in records if r["kind"] == "metric"]
    assert losses == [1.0, 0.5, 1.0 / 3, 0.25, 0.2]
    events = {r.get("event"): r.get("data") for r in records if r["kind"] == "event"}
    assert events["container"]["name"] == name_of(job)
    assert_nothing_left(job)


def running_container_job(
    client: AgentClient, workdir: Path, agent_dir: Path, argv: list[str], **extra: Any
) -> dict[str, Any]:
    (workdir / "train.py").write_text(TRAIN)
    job = container_job(client, workdir, argv, **extra)
    wait_for(lambda: '"loss"' in output(agent_dir, job["id"]), timeout=60, what="the first loss line")
    return job


@pytest.mark.slow
@pytest.mark.parametrize("image", [PY_IMAGE, DASH_IMAGE], ids=["busybox-sh", "dash"])
def test_stop_reaches_the_trainer_through_a_sh_c_entrypoint_and_it_checkpoints(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path, image: str
) -> None:
    # A compound `sh -c` never execs python: the shell, not the trainer, is the wrapper's child
    # (and gpudeck's PID 1 runs under the image's own /bin/sh: busybox, or dash as in Debian images).
    job = running_container_job(
        client, workdir, agent_dir, ["sh", "-c", "python3 train.py; echo after"], image=image
    )
    final = client.request("stop", job=job["id"], node="0", grace=60, timeout=90)
    assert final["state"] == "stopped", output(agent_dir, job["id"])
    assert (workdir / "ckpt.txt").read_text().startswith("step ")
    assert [r for r in journal(agent_dir, job["id"]) if r.get("event") == "checkpoint_saved"]
    assert_nothing_left(job)


@pytest.mark.slow
def test_kill_leaves_nothing_in_the_runtime(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    job = running_container_job(client, workdir, agent_dir, ["python3", "train.py"])
    final = client.request("kill", job=job["id"], node="0", timeout=60)
    assert final["state"] == "killed"
    assert not (workdir / "ckpt.txt").exists()
    assert_nothing_left(job)


@pytest.mark.slow
def test_a_sigkilled_supervisor_is_adopted_then_stopped_with_a_checkpoint(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    job = running_container_job(client, workdir, agent_dir, ["python3", "train.py"], heartbeat_interval=0.2)
    supervisor = next(
        r["supervisor_pid"] for r in journal(agent_dir, job["id"]) if r.get("state") == "starting"
    )
    os.kill(supervisor, signal.SIGKILL)
    wait_for(
        lambda: not supervisor_alive(agent_dir / "jobs" / job["id"] / "0" / "lock"), what="the lock free"
    )
    client.request("jobs")  # whoever finds it lost hands it to a new supervisor
    wait_for(
        lambda: [r for r in journal(agent_dir, job["id"]) if r.get("event") == "adopted"],
        timeout=30,
        what="adopted",
    )
    final = client.request("stop", job=job["id"], node="0", grace=60, timeout=90)
    assert final["state"] == "stopped"
    assert (workdir / "ckpt.txt").read_text().startswith("step ")
    assert_nothing_left(job)


@pytest.mark.slow
def test_rm_of_an_ended_job_removes_a_container_the_runtime_kept(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    job = running_container_job(client, workdir, agent_dir, ["python3", "train.py"])
    client.request("kill", job=job["id"], node="0", timeout=60)
    assert_nothing_left(job)
    # A container of the job's name the runtime still holds (as after a crash mid-cleanup):
    podman("create", "--name", name_of(job), BB_IMAGE, "true")
    assert containers_named(name_of(job))
    client.request("rm", job=job["id"], node="0")
    assert not containers_named(name_of(job))


def test_gpus_the_runtime_cannot_pass_are_refused_in_one_line(
    podman_images: dict[str, str], client: AgentClient, workdir: Path
) -> None:
    with cdi_turn(exclusive=False):
        if cdi_devices():
            pytest.skip("this machine has CDI specs: its GPUs can be passed")
        with pytest.raises(AgentError) as err:
            container_job(client, workdir, ["true"], image=BB_IMAGE, runtime={"gpus": ["0"]})
    message = str(err.value)
    assert "spec.runtime.gpus" in message and "CDI" in message and "\n" not in message


def all_command_lines() -> str:
    lines = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                lines.append(
                    (Path("/proc") / entry / "cmdline")
                    .read_bytes()
                    .replace(b"\0", b" ")
                    .decode(errors="replace")
                )
            except OSError:
                continue
    return "\n".join(lines)


@pytest.mark.slow
def test_cli_image_job_inspect_shows_the_image_id_a_restart_runs_it_and_secrets_stay_out(
    podman_images: dict[str, str], gpudeck_home: Path, workdir: Path, agent_dir: Path
) -> None:
    secret = "s3cr3t-" + os.urandom(4).hex()
    run = gpudeck(
        "run",
        "--image",
        BB_IMAGE,
        "--runtime",
        "podman",
        "--env",
        f"TOKEN={secret}",
        "--",
        "sh",
        "-c",
        'echo "token=${#TOKEN}"; echo "loss=0.5"; sleep 30',
        cwd=workdir,
    )
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    wait_for(lambda: "loss=0.5" in output(agent_dir, job_id), timeout=60, what="the job's output")
    assert f"token={len(secret)}" in output(agent_dir, job_id)  # the value reached the process
    assert secret not in all_command_lines()  # never on a command line (ps)

    def inspected() -> str:
        text = gpudeck("inspect", job_id, cwd=workdir).stdout
        return text if "id sha256:" in text else ""

    shown = wait_for(inspected, what="inspect to show the image id")
    assert f"image: {BB_IMAGE} (runtime podman, id sha256:" in shown
    as_json = gpudeck("inspect", job_id, "--json", cwd=workdir).stdout
    assert secret not in shown + as_json + gpudeck("ps", "--json", cwd=workdir).stdout
    image_id = json.loads(as_json)["container"]["image_id"]
    assert gpudeck("stop", job_id, cwd=workdir).returncode == 0
    restart = gpudeck("restart", job_id, cwd=workdir)
    assert restart.returncode == 0, restart.stderr
    new_id = next(w for w in restart.stdout.split() if w.count("-") == 2 and w != job_id)
    spec = json.loads((agent_dir / "jobs" / new_id / "0" / "spec.json").read_text())
    assert spec["runtime"]["digest"] == image_id  # the same bytes, whatever the tag says now
    assert gpudeck("kill", new_id, cwd=workdir).returncode == 0
    for job in (job_id, new_id):
        assert_nothing_left({"id": job})


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"image": BB_IMAGE, "mounts": ("data:/data",)}, "--mount: expected HOST:CONTAINER[:ro]"),
        ({"image": BB_IMAGE, "mounts": ("/a:/b:rx",)}, "--mount: the third part is ro or rw"),
        ({"image": BB_IMAGE, "shm_size": "lots"}, "--shm-size: expected a size"),
        ({"image": BB_IMAGE, "ipc": "shareable"}, "--ipc: private or host"),
        ({"image": BB_IMAGE, "container_runtime": "lxc"}, "--runtime: auto, docker or podman"),
        ({"image": "-v /etc:/x"}, "--image: expected an image reference"),
    ],
)
def test_bad_container_options_are_one_line_naming_the_flag(changes: dict[str, Any], said: str) -> None:
    with pytest.raises(GpudeckError) as err:
        check(LaunchOptions(argv=("true",), **changes))
    assert said in str(err.value) and "\n" not in str(err.value) and err.value.code == 2


def test_container_flags_without_an_image_need_one(gpudeck_home: Path) -> None:
    terms = JobTerms.of_options(LaunchOptions(argv=("true",), mounts=("/a:/b",)), "20261205-000000-abcdef")
    with pytest.raises(GpudeckError, match="need --image"):
        node_spec(None, terms, "local")


@pytest.mark.slow
def test_a_bad_container_option_is_a_usage_error_of_the_cli(gpudeck_home: Path, workdir: Path) -> None:
    run = gpudeck("run", "--image", BB_IMAGE, "--mount", "data:/data", "--", "true", cwd=workdir)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "--mount:" in run.stderr, run.stderr


@pytest.mark.slow
def test_gpus_pass_as_cdi_devices_and_cuda_visible_devices_counts_from_zero_inside(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    with fake_cdi_gpus(2):
        script = 'echo "gpu0=${FAKE_GPU_0:-absent} gpu1=${FAKE_GPU_1:-absent} cvd=$CUDA_VISIBLE_DEVICES"'
        job = container_job(
            client, workdir, ["sh", "-c", script], image=BB_IMAGE, env={"CUDA_VISIBLE_DEVICES": "1"}
        )
        end = wait_state(client, job["id"], {"exited", "failed"}, timeout=60)
    assert end["state"] == "exited", output(agent_dir, job["id"])
    # The job's GPU 1 (its CUDA_VISIBLE_DEVICES on the host) and only it, numbered 0 inside.
    assert "gpu0=absent gpu1=present cvd=0" in output(agent_dir, job["id"])


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory, podman_images: dict[str, str]) -> Iterator[Sshd]:
    """This module's own sshd: its sessions carry podman's settings (CONTAINERS_CONF…), as a host's
    own configuration would."""
    if not os.path.exists(SSHD):
        pytest.skip("openssh-server is not installed (apt-get install openssh-server; .ci/run does)")
    root = tmp_path_factory.mktemp("sshd-podman")
    settings = " ".join(f"{k}={v}" for k, v in podman_images.items())
    server = make_sshd(
        root, extra=[f"SetEnv HOME={root / 'remote-home'} GPUDECK_TEST_SSHD=podman {settings}"]
    )
    yield server
    server.stop()


@pytest.mark.slow
def test_over_ssh_a_container_jobs_loss_streams_stop_checkpoints_and_nothing_is_left(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    ssh_home.trust()
    ssh_home.add_host()
    project = tmp_path / "work"
    (project / "proj").mkdir(parents=True)
    (project / "proj" / "__init__.py").write_text("")
    (project / "proj" / "train.py").write_text(TRAIN)
    check = gpudeck("hosts", "check", "box", cwd=tmp_path)
    assert check.returncode == 0 and "podman 4." in check.stdout, check.stdout + check.stderr
    run = gpudeck(
        "run",
        "--host",
        "box",
        "--image",
        PY_IMAGE,
        "--workdir",
        str(project),
        "--",
        "python3",
        "-m",
        "proj.train",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    # `metrics -f` over SSH: the loss the trainer prints inside the container, point by point.
    follower = subprocess.Popen(
        [sys.executable, "-m", "tui", "metrics", "-f", "--json", job_id],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follower.stdout is not None
        points = [json.loads(follower.stdout.readline()) for _ in range(3)]
        assert [p["values"]["loss"] for p in points] == [1.0, 0.5, 0.3333], points
        stop = gpudeck("stop", job_id, cwd=tmp_path, timeout=120)
        assert stop.returncode == 0, stop.stderr
        rest, _ = follower.communicate(timeout=60)  # it ends with the job
    finally:
        follower.kill()
    assert follower.returncode == 0 and '"loss"' in rest
    assert (project / "ckpt.txt").read_text().startswith("step ")
    ended = gpudeck("inspect", job_id, "--json", cwd=tmp_path)
    assert json.loads(ended.stdout)["state"] == "stopped"
    wait_for(
        lambda: not containers_named(f"gpudeck-{job_id}") and not conmons_of(f"gpudeck-{job_id}"),
        what="nothing left",
    )


@pytest.mark.slow
def test_an_image_that_cannot_be_pulled_fails_the_job_with_the_registrys_error_line(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    job = container_job(client, workdir, ["true"], image="localhost:1/nothing-here:1")
    end = wait_state(client, job["id"], {"exited", "failed"}, timeout=60)
    assert end["state"] == "failed"
    assert output(agent_dir, job["id"]).startswith("Trying to pull localhost:1/nothing-here:1")
    assert end["cause"].startswith(
        "container runtime: Error: initializing source docker://localhost:1/nothing-here:1"
    )
    assert "connection refused" in end["cause"]
    assert_nothing_left(job)


@pytest.mark.slow
def test_the_containers_processes_are_the_jobs_in_the_process_view(
    podman_images: dict[str, str], client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    """They run in the host's PID namespace with the job's marker: per-process GPU memory (NVML
    reports host pids) is attributed to the job as on the bare host."""
    job = running_container_job(client, workdir, agent_dir, ["python3", "train.py"])
    rows = client.request("procs", job=job["id"], node="0", interval=0.2)["processes"]
    trainer = [r for r in rows if r["command"].startswith("python3 train.py")]
    assert trainer and trainer[0]["role"] == "child", rows
    client.request("kill", job=job["id"], node="0", timeout=60)
    assert_nothing_left(job)


def node_specs_and_images(agent_dir: Path, job_id: str) -> dict[str, tuple[str | None, str | None]]:
    """node → (the spec's pinned digest, the image id its container ran)."""
    out = {}
    for node_dir in sorted((agent_dir / "jobs" / job_id).iterdir()):
        spec = json.loads((node_dir / "spec.json").read_text())
        ran = [
            r["data"].get("image_id")
            for r in journal(agent_dir, job_id, node_dir.name)
            if r.get("event") == "container_image"
        ]
        out[node_dir.name] = (spec["runtime"].get("digest"), ran[0] if ran else None)
    return out


@pytest.mark.slow
def test_a_two_node_job_and_its_scale_up_run_one_image(
    podman_images: dict[str, str], gpudeck_home: Path, workdir: Path, agent_dir: Path
) -> None:
    # A checkpoint dir written inside the container: the resize checks it on the host (bind mount).
    script = (
        'echo "rank=$GPUDECK_NODE_RANK of $GPUDECK_NNODES"; mkdir -p ckpt; touch ckpt/c$GPUDECK_NODE_RANK;'
        ' trap "exit 0" TERM; while :; do sleep 0.1; done'
    )
    run = gpudeck(
        "run",
        "--nodes",
        "2",
        "--launcher",
        "none",
        "--image",
        BB_IMAGE,
        "--runtime",
        "podman",
        "--",
        "sh",
        "-c",
        script,
        "node",
        "--checkpoint-dir",
        "ckpt",
        cwd=workdir,  # (a resize needs one)
    )
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()

    def all_ran(job: str, count: int) -> dict[str, tuple[str | None, str | None]] | None:
        found = node_specs_and_images(agent_dir, job)
        return found if len(found) == count and all(image for _, image in found.values()) else None

    first = wait_for(lambda: all_ran(job_id, 2), timeout=60, what="both nodes' containers")
    assert len({image for _, image in first.values()}) == 1
    for node in ("0", "1"):
        log = agent_dir / "jobs" / job_id / node / "output.log"
        said = f"rank={node} of 2"
        wait_for(lambda log=log, said=said: said in log.read_text(), timeout=30, what=said)
    scaled = gpudeck("scale", job_id, "+1", "--json", cwd=workdir, timeout=120)
    assert scaled.returncode == 0, scaled.stderr
    new_id = json.loads(scaled.stdout)["id"]
    after = wait_for(lambda: all_ran(new_id, 3), timeout=60, what="three nodes' containers")
    (image_id,) = {image for _, image in first.values()}
    assert {digest for digest, _ in after.values()} == {image_id}  # every new node pinned to it
    assert {image for _, image in after.values()} == {image_id}
    assert gpudeck("kill", new_id, cwd=workdir).returncode == 0
    for job in (job_id, new_id):
        assert_nothing_left({"id": job})  # every node's name starts gpudeck-<id>-


@pytest.mark.slow
def test_a_missing_image_is_pulled_with_its_progress_as_the_first_output(
    podman_images: dict[str, str], gpudeck_home: Path, workdir: Path, agent_dir: Path, tmp_path: Path
) -> None:
    with local_registry(tmp_path) as (address, env):
        image = f"{address}/bb-{os.urandom(3).hex()}:1"
        pushed = podman("push", "--tls-verify=false", BB_IMAGE, image, check=False)
        assert pushed.returncode == 0, pushed.stderr
        run = gpudeck(
            "run", "--image", image, "--runtime", "podman", "--", "echo", "trained", cwd=workdir, env=env
        )
        assert run.returncode == 0, run.stderr
        job_id = run.stdout.strip()
        log = agent_dir / "jobs" / job_id / "0" / "output.log"
        wait_for(lambda: "trained" in log.read_text(), timeout=60, what="the command's line after the pull")
        text = log.read_text()
        assert text.startswith(f"Trying to pull {image}..."), text
        assert text.index("Copying blob") < text.index("trained")

        def digest() -> str | None:
            shown = json.loads(gpudeck("inspect", job_id, "--json", cwd=workdir, env=env).stdout)
            return (shown.get("container") or {}).get("digest")

        assert wait_for(digest, what="the registry digest").startswith("sha256:")
    podman("rmi", "--force", image, check=False)


@pytest.fixture
def docker_host(dockerd: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Set before the agent starts (list it before `client`): its supervisors reach this dockerd."""
    monkeypatch.setenv("DOCKER_HOST", dockerd)
    return dockerd


def docker_containers(name: str, host: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"name={name}", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        env={**os.environ, "DOCKER_HOST": host},
        check=True,
    )
    return out.stdout.split()


@pytest.mark.slow
def test_with_docker_a_stop_checkpoints_through_sh_c_and_nothing_is_left(
    docker_host: str, client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    (workdir / "train.py").write_text(TRAIN)
    job = launch(
        client,
        workdir,
        ["sh", "-c", "python3 train.py; echo after"],
        runtime={"image": PY_IMAGE, "runtime": "docker"},
        env={"SECRET_TOKEN": "hunter2-docker"},
    )
    wait_for(lambda: '"loss"' in output(agent_dir, job["id"]), timeout=60, what="the first loss line")
    assert "hunter2-docker" not in all_command_lines()
    final = client.request("stop", job=job["id"], node="0", grace=60, timeout=90)
    assert final["state"] == "stopped", output(agent_dir, job["id"])
    assert (workdir / "ckpt.txt").read_text().startswith("step ")
    assert (workdir / "ckpt.txt").stat().st_uid == os.getuid()  # --user: the files are the user's
    wait_for(lambda: not docker_containers(name_of(job), docker_host), what="no docker container left")


@pytest.mark.slow  # (the session's dockerd starts in seconds)
def test_with_docker_gpus_without_the_nvidia_hook_are_refused(
    docker_host: str, client: AgentClient, workdir: Path
) -> None:
    if shutil.which("nvidia-container-runtime-hook"):
        pytest.skip("this machine has the NVIDIA hook")
    with pytest.raises(AgentError, match="nvidia-container-runtime-hook is not on PATH"):
        launch(client, workdir, ["true"], runtime={"image": BB_IMAGE, "runtime": "docker", "gpus": ["0"]})


def test_requirements_with_an_image_are_refused_in_one_line(client: AgentClient, workdir: Path) -> None:
    with pytest.raises(AgentError, match="spec.environment: not with an image yet"):
        launch(
            client, workdir, ["true"], runtime={"image": BB_IMAGE}, environment={"requirements": "numpy\n"}
        )


@pytest.mark.slow
def test_a_hosts_image_and_runtime_in_hosts_toml_apply_to_its_jobs(
    podman_images: dict[str, str], gpudeck_home: Path, workdir: Path, agent_dir: Path
) -> None:
    (gpudeck_home / "hosts.toml").write_text(
        f'[hosts.local]\nimage = "{BB_IMAGE}"\ncontainer_runtime = "podman"\n'
    )
    run = gpudeck("run", "--", "sh", "-c", "echo in=$GPUDECK_JOB_NAME", cwd=workdir)
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    spec = json.loads((agent_dir / "jobs" / job_id / "0" / "spec.json").read_text())
    assert spec["runtime"]["image"] == BB_IMAGE and spec["runtime"]["runtime"] == "podman"
    wait_for(lambda: "in=" in output(agent_dir, job_id), timeout=60, what="its output")
    (gpudeck_home / "hosts.toml").write_text('[hosts.local]\nimage = "-bad"\n')
    bad = gpudeck("run", "--", "true", cwd=workdir)
    assert bad.returncode == 2 and "[hosts.local] image/container_runtime" in bad.stderr, bad.stderr


@pytest.mark.slow
def test_gpu_checks_container_part_runs_a_gpudeck_container_job(
    podman_images: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench/gpu_check.py's `container` part, here with a fake nvidia.com/gpu CDI spec whose device
    mounts a fake nvidia-smi (the real one runs where a device machine is lent)."""
    from bench.gpucheck.context import Context
    from bench.gpucheck.part_container import container_job as container_part

    smi = tmp_path / "nvidia-smi"
    smi.write_text('#!/bin/sh\necho "GPU 0: Fake H100 (UUID: GPU-fake)"\n')
    smi.chmod(0o755)
    spec = {
        "cdiVersion": "0.3.0",
        "kind": "nvidia.com/gpu",
        "devices": [
            {
                "name": "0",
                "containerEdits": {
                    "mounts": [
                        {
                            "hostPath": str(smi),
                            "containerPath": "/usr/bin/nvidia-smi",
                            "options": ["ro", "bind"],
                        }
                    ]
                },
            }
        ],
    }
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("DOCKER_HOST", raising=False)  # a docker without its daemon: the part takes podman
    ctx = Context(quick=True, tmp=tmp_path, facts={}, options={"container_image": PY_IMAGE})
    ctx.deadline = time.monotonic() + 120
    with cdi_turn(exclusive=True):
        path = Path("/etc/cdi/gpudeck-test-nvidia.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(spec))
        try:
            result = container_part(ctx)
        finally:
            path.unlink()
    assert result.status == "ok", result
    assert "Fake H100" in result.number and "nothing left" in result.reason
