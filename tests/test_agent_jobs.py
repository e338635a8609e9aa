"""Jobs through a real agent: output, metrics, events, failures, detachment."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.jobs import collect, ended, journal, launch, wait_state
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport

LOSS_SCRIPT = """
import json
for step in range(1, 6):
    print(json.dumps({"step": step, "loss": 1.0 / step, "lr": 0.1}))
print(json.dumps({"event": "checkpoint_saved", "step": 5, "path": "ck.pt"}))
print("step=6 loss=0.125")
"""


def test_loss_lines_stream_as_metric_events(client: AgentClient, workdir: Path) -> None:
    job = launch(client, workdir, [sys.executable, "-c", LOSS_SCRIPT])
    client.tail(job["id"], "0", since_seq=0)
    records = collect(client, ended)
    metrics = [r["values"] for r in records if r["kind"] == "metric"]
    assert [m["step"] for m in metrics] == [1, 2, 3, 4, 5, 6]
    assert metrics[0]["loss"] == 1.0 and metrics[-1]["loss"] == 0.125
    events = [r for r in records if r["kind"] == "event"]
    assert events == [{**events[0], "event": "checkpoint_saved", "data": {"step": 5, "path": "ck.pt"}}]
    states = [r["state"] for r in records if r["kind"] == "state"]
    assert states == ["starting", "running", "exited"]
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))


def test_unflushed_output_is_seen_line_by_line_while_the_job_runs(client: AgentClient, workdir: Path) -> None:
    # No flush=True: PYTHONUNBUFFERED from the supervisor is what makes this line arrive. Buffered, it
    # would come out only at exit, which the job never reaches by itself (it waits for the kill).
    script = "import time\nprint('step=1 loss=0.5')\ntime.sleep(600)\nprint('step=2 loss=0.4')"
    job = launch(client, workdir, [sys.executable, "-c", script])
    client.tail(job["id"], "0", since_seq=0)
    records = collect(client, lambda rs: any(r["kind"] == "metric" for r in rs), timeout=30)
    assert [r["values"] for r in records if r["kind"] == "metric"] == [{"step": 1, "loss": 0.5}]
    assert not ended(records)
    client.request("kill", job=job["id"], node="0")


def test_progress_bar_redraws_are_journaled_once(client: AgentClient, workdir: Path, agent_dir: Path) -> None:
    script = r"""
import sys
for _ in range(50):
    sys.stdout.write("\rstep=7 loss=0.25")
sys.stdout.write("\rstep=8 loss=0.2\n")
"""
    job = launch(client, workdir, [sys.executable, "-c", script])
    wait_state(client, job["id"], {"exited"})
    metrics = [r["values"] for r in journal(agent_dir, job["id"]) if r["kind"] == "metric"]
    assert metrics == [{"step": 7, "loss": 0.25}, {"step": 8, "loss": 0.2}]


def test_output_bytes_are_kept_exactly(client: AgentClient, workdir: Path) -> None:
    payload = b"caf\xc3\xa9 \xff\xfe raw\r\nno newline at end"
    script = f"import sys; sys.stdout.buffer.write({payload!r})"
    job = launch(client, workdir, [sys.executable, "-c", script])
    wait_state(client, job["id"], {"exited"})
    got = client.request("logs", job=job["id"], node="0", offset=0)
    assert base64.b64decode(got["data"]) == payload and got["done"] is True
    tail = client.request("logs", job=job["id"], node="0", offset=5, limit=3)
    assert base64.b64decode(tail["data"]) == payload[5:8] and tail["size"] == len(payload)


def test_env_setup_and_workdir_reach_the_command(client: AgentClient, workdir: Path) -> None:
    (workdir / "activate.sh").write_text("export FROM_SETUP=yes\n")
    script = 'echo "$PWD $FROM_SETUP $SECRET_TOKEN $PYTHONUNBUFFERED $GPUDECK_JOB_NAME $GPUDECK_TEST_LOGIN_PROFILE"; echo "arg=[$1]"'
    job = launch(
        client,
        workdir,
        ["bash", "-c", script, "x", "a b;$(rm -rf /)"],
        name="envjob",
        env={"SECRET_TOKEN": "s3cr3t"},
        setup=["source activate.sh"],
    )
    wait_state(client, job["id"], {"exited"})
    out = base64.b64decode(client.request("logs", job=job["id"], node="0")["data"]).decode()
    assert f"{workdir} yes s3cr3t 1 envjob read" in out  # `read`: bash -l sourced the login profile
    assert "arg=[a b;$(rm -rf /)]" in out
    listed = str(client.request("jobs"))
    assert "s3cr3t" not in listed


def test_failed_setup_line_fails_the_job_with_its_line(client: AgentClient, workdir: Path) -> None:
    job = launch(client, workdir, ["true"], setup=["source does-not-exist.sh"])
    final = wait_state(client, job["id"], {"failed"})
    assert final["exit_code"] == 97
    assert any("setup line failed: source does-not-exist.sh" in line for line in final["tail"])


@pytest.mark.slow  # the everyday subset stays under a minute serially
def test_failure_causes_are_recognised(client: AgentClient, workdir: Path) -> None:
    cases = [
        (["no-such-binary-xyz"], "command not found: no-such-binary-xyz (check `--setup`"),
        ([sys.executable, "-c", "raise ValueError('bad shape (3, 4)')"], "ValueError: bad shape (3, 4)"),
        (
            [
                sys.executable,
                "-c",
                "import sys; print('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'); sys.exit(1)",
            ],
            "CUDA out of memory",
        ),
        (["bash", "-c", "kill -SEGV $$"], "terminated by SIGSEGV"),
    ]
    jobs = [(launch(client, workdir, argv), cause) for argv, cause in cases]
    for job, cause in jobs:
        final = wait_state(client, job["id"], {"failed"})
        assert final["cause"].startswith(cause), final
    assert wait_state(client, jobs[3][0]["id"], {"failed"})["signal"] == "SIGSEGV"


def test_the_launcher_exits_and_the_job_lives_on(agent_dir: Path, workdir: Path) -> None:
    first = AgentClient(LocalTransport(agent_dir))
    first.connect()
    job = launch(
        first,
        workdir,
        [sys.executable, "-c", "import time; print('step=1 loss=1', flush=True); time.sleep(30)"],
    )
    serve_pid = first.transport.proc.pid  # type: ignore[attr-defined]
    first.close()  # serve sees EOF and exits: the job must not notice
    assert subprocess.run(["kill", "-0", str(serve_pid)], capture_output=True).returncode != 0
    second = AgentClient(LocalTransport(agent_dir))
    second.connect()
    try:
        assert wait_state(second, job["id"], {"running"})["state"] == "running"
        assert second.request("kill", job=job["id"], node="0")["state"] == "killed"
    finally:
        second.close()


def test_restart_launches_the_same_spec_again(client: AgentClient, workdir: Path, agent_dir: Path) -> None:
    job = launch(client, workdir, ["bash", "-c", "echo run-$RANDOM"], env={"K": "v"})
    wait_state(client, job["id"], {"exited"})
    new_id = job["id"][:-6] + "ffffff"
    again = client.request("restart", job=job["id"], node="0", new_id=new_id)
    assert again["restart_of"] == job["id"] and again["argv"] == job["argv"]
    wait_state(client, new_id, {"exited"})
    import json

    spec = json.loads((agent_dir / "jobs" / new_id / "0" / "spec.json").read_text())
    assert spec["env"] == {"K": "v"} and spec["restart_of"] == job["id"]


def test_agent_files_are_owner_only(client: AgentClient, workdir: Path, agent_dir: Path) -> None:
    job = launch(client, workdir, ["true"])
    wait_state(client, job["id"], {"exited"})
    job_dir = agent_dir / "jobs" / job["id"] / "0"
    for d in (agent_dir, agent_dir / "jobs", job_dir.parent, job_dir):
        assert d.stat().st_mode & 0o777 == 0o700, d
    for f in job_dir.iterdir():  # stacks/: where a program's faulthandler opt-in writes (issue 34)
        assert f.stat().st_mode & 0o777 == (0o700 if f.is_dir() else 0o600), f
