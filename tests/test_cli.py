"""The CLI as a user runs it: a fresh interpreter per command, one-line errors, docker-like output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.waiting import wait_for
from tui.actions.options import default_name

LOSSES = """
import json, time
for step in range(1, 21):
    print(json.dumps({"step": step, "loss": round(2.0 / step, 4), "lr": 0.01}))
    time.sleep(0.01)
"""


def ps_json(cwd: Path, *extra: str) -> list[dict]:
    result = gpudeck("ps", "--json", *extra, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_run_metrics_logs_ps_round_trip(gpudeck_home: Path, workdir: Path) -> None:
    result = gpudeck(
        "run",
        "--name",
        "loss-demo",
        "--env",
        "API_KEY=hunter2",
        "--",
        sys.executable,
        "-c",
        LOSSES,
        cwd=workdir,
    )
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    assert len(job_id.splitlines()) == 1 and len(job_id) == 22  # the id alone

    follow = gpudeck("logs", "-f", "loss-demo", cwd=workdir)
    assert follow.returncode == 0
    lines = follow.stdout.splitlines()
    assert len(lines) == 20 and json.loads(lines[-1])["step"] == 20  # every line exactly once

    metrics = gpudeck("metrics", "--json", job_id, cwd=workdir)
    points = [json.loads(line) for line in metrics.stdout.splitlines()]
    assert [p["values"]["step"] for p in points] == list(range(1, 21))
    assert points[-1]["values"]["loss"] == 0.1
    human = gpudeck("metrics", job_id[:12], cwd=workdir).stdout
    assert "step=20  loss=0.1  lr=0.01" in human

    jobs = ps_json(workdir, "--all")
    assert [j["id"] for j in jobs] == [job_id]
    job = jobs[0]
    assert job["state"] == "exited" and job["exit_code"] == 0 and job["signal"] is None
    assert job["started_at"] <= job["ended_at"]
    assert job["nodes"] == [
        {
            "host": "local",
            "node": "0",
            "state": "exited",
            "pid": job["nodes"][0]["pid"],
            "gpus": None,  # what --gpus gave the node (none asked)
            "step_rate": None,  # a multi-node job's pace only (issue 34)
            "gpu_util": None,
        }
    ]
    assert ps_json(workdir) == []  # ended jobs only with --all
    for out in (
        json.dumps(jobs),
        gpudeck("inspect", "--json", job_id, cwd=workdir).stdout,
        gpudeck("ps", "-a", cwd=workdir).stdout,
    ):
        assert "hunter2" not in out


@pytest.mark.slow
def test_logs_follow_exits_with_the_jobs_exit_code(gpudeck_home: Path, workdir: Path) -> None:
    job_id = gpudeck("run", "--", "bash", "-c", "echo out; echo err >&2; exit 7", cwd=workdir).stdout.strip()
    follow = gpudeck("logs", "-f", job_id, cwd=workdir)
    assert follow.returncode == 7
    assert set(follow.stdout.split()) == {"out", "err"}
    inspect = gpudeck("inspect", job_id, cwd=workdir).stdout
    assert "failed(7)" in inspect and "why: exited with code 7" in inspect


@pytest.mark.slow
def test_stop_restart_and_rm(gpudeck_home: Path, workdir: Path) -> None:
    script = "import time, signal, sys\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\nprint('up', flush=True)\ntime.sleep(60)"
    job_id = gpudeck(
        "run", "--name", "svc", "--grace", "5", "--", sys.executable, "-c", script, cwd=workdir
    ).stdout.strip()
    wait_for(lambda: any(j["state"] == "running" for j in ps_json(workdir)), what="running")
    stop = gpudeck("stop", "svc", cwd=workdir)
    assert stop.returncode == 0 and stop.stdout.startswith(f"{job_id} stopped in ")

    restarted = gpudeck("restart", "svc", cwd=workdir)
    assert restarted.returncode == 0, restarted.stderr
    new_id = restarted.stdout.strip()
    jobs = {j["id"]: j for j in ps_json(workdir, "--all")}
    assert jobs[new_id]["restart_of"] == job_id and jobs[new_id]["name"] == "svc"
    # The name now means the live restart; the stopped one is reached by its id.
    killed = gpudeck("kill", "svc", cwd=workdir)
    assert killed.stdout.startswith(f"{new_id} killed")
    assert gpudeck("rm", job_id, cwd=workdir).returncode == 0
    assert job_id not in {j["id"] for j in ps_json(workdir, "--all")}


@pytest.mark.slow
def test_rm_refuses_a_live_job(gpudeck_home: Path, workdir: Path) -> None:
    job_id = gpudeck("run", "--", "sleep", "60", cwd=workdir).stdout.strip()
    result = gpudeck("rm", job_id, cwd=workdir)
    assert result.returncode == 1 and "stop or kill it first" in result.stderr
    gpudeck("kill", job_id, cwd=workdir)


@pytest.mark.slow  # the everyday subset stays under a minute serially
@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["logs", "no-such-job"], 3, "no job 'no-such-job'"),
        (["stop", "20990101-000000-abcdef"], 3, "no job"),
        (["run", "--name", "../../etc/passwd", "--", "true"], 2, "--name '../../etc/passwd'"),
        (["run", "--name", "ok", "--"], 2, "no command given"),
        (["run", "--env", "NOT_SET_ANYWHERE_XYZ", "--", "true"], 2, "not set in your environment"),
        (["run", "--env", "1BAD=x", "--", "true"], 2, "not a variable name"),
        (["run", "--workdir", "/no/such/dir", "--", "true"], 2, "--workdir /no/such/dir: no such directory"),
        (["run", "--host", "gpu-box", "--", "true"], 2, "no such host 'gpu-box'"),
        (["frobnicate"], 2, "invalid choice"),
        (["stop", "x", "--grace", "soon"], 2, "invalid float value"),
        (["stop", "x", "--grace", "-1"], 2, "--grace -1: must be a number of seconds from 0 to 86400"),
        (["stop", "x", "--grace", "nan"], 2, "--grace nan: must be"),
        (["run", "--grace", "inf", "--", "true"], 2, "--grace inf: must be"),
        (["run", "--budget", "nan", "--", "true"], 2, "--budget nan: must be"),
        (["run", "--budget", "1e309", "--", "true"], 2, "--budget inf: must be"),
        (["run", "--price-per-hour", "nan", "--", "true"], 2, "--price-per-hour nan: must be"),
        (["run", "--price-per-hour", "1e309", "--", "true"], 2, "--price-per-hour inf: must be"),
        (["run", "--name", "", "--", "true"], 2, "--name: an empty value"),
        (["run", "--workdir", "/etc/passwd", "--", "true"], 2, "--workdir /etc/passwd: not a directory"),
    ],
)
def test_bad_input_is_one_line_and_a_distinct_exit_code(
    gpudeck_home: Path, workdir: Path, args: list[str], code: int, message: str
) -> None:
    result = gpudeck(*args, cwd=workdir)
    assert result.returncode == code, (result.stdout, result.stderr)
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


@pytest.mark.slow
def test_env_key_alone_takes_the_callers_value(gpudeck_home: Path, workdir: Path) -> None:
    job_id = gpudeck(
        "run",
        "--env",
        "MY_TOKEN",
        "--",
        "bash",
        "-c",
        'echo "[$MY_TOKEN]"',
        cwd=workdir,
        env={"MY_TOKEN": "tok 1"},
    ).stdout.strip()
    assert gpudeck("logs", "-f", job_id, cwd=workdir).stdout == "[tok 1]\n"


@pytest.mark.slow  # the everyday subset stays under a minute serially
def test_hosts_lists_local_with_its_clock_and_gpu_report(gpudeck_home: Path, workdir: Path) -> None:
    hosts = json.loads(gpudeck("hosts", "--json", cwd=workdir).stdout)
    assert [h["name"] for h in hosts] == ["local"]
    local = hosts[0]
    assert local["reachable"] and local["agent_version"] and abs(local["clock_offset_s"]) < 1
    assert local["gpus"] == [] and local["gpu_reason"].startswith("no NVIDIA GPU")
    assert "no NVIDIA GPU" in gpudeck("hosts", cwd=workdir).stdout


@pytest.mark.slow
def test_metrics_follow_prints_points_as_they_come(gpudeck_home: Path, workdir: Path) -> None:
    script = "import time\nfor i in range(1, 4):\n    print(f'step={i} loss={1/i:.3f}', flush=True)\n    time.sleep(0.4)"
    job_id = gpudeck("run", "--", sys.executable, "-c", script, cwd=workdir).stdout.strip()
    result = gpudeck("metrics", "-f", job_id, cwd=workdir)  # returns when the job ends
    assert result.returncode == 0
    assert [line.split("  ", 1)[1] for line in result.stdout.splitlines()] == [
        "step=1  loss=1",
        "step=2  loss=0.5",
        "step=3  loss=0.333",
    ]


@pytest.mark.parametrize(
    ("argv", "stem"),
    [
        (["python", "-m", "trainer", "--steps", "5"], "trainer"),
        (["python3", "train.py", "--lr", "1"], "train.py"),
        (["torchrun", "--nproc-per-node=2", "train.py"], "train.py"),
        (["bash", "-c", "echo $RANDOM"], "bash"),
        (["./run job.sh"], "run-job.sh"),
    ],
)
def test_default_names_come_from_the_command(argv: list[str], stem: str) -> None:
    assert default_name(argv, "20261129-120000-abcdef") == f"{stem}-cdef"


@pytest.mark.slow
def test_budget_and_idle_stop_reach_the_spec(
    gpudeck_home: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an idle stop needs a GPU to watch: the host gets one fake NVML GPU
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join([str(Path(__file__).parent / "fakes" / "nvml"), os.environ.get("PYTHONPATH", "")]),
    )
    monkeypatch.setenv("PYNVML_FAKE", json.dumps([{"uuid": "GPU-aaaa"}]))
    job_id = gpudeck(
        "run",
        "--price-per-hour",
        "360",
        "--budget",
        "2",
        "--idle-stop",
        "90s@5%+0m",
        "--",
        "sleep",
        "120",
        cwd=workdir,
    ).stdout.strip()
    spec = json.loads((gpudeck_home / "local-agent" / "jobs" / job_id / "0" / "spec.json").read_text())
    assert spec["budget"] == 2.0 and spec["price"]["per_hour"] == 360.0
    assert spec["idle_stop"] == {"below_pct": 5.0, "minutes": 1.5, "grace_minutes": 0.0}
    assert gpudeck("autostop", "pause", job_id, cwd=workdir).stdout.strip() == f"{job_id} idle stop paused"
    # 0.1 USD/s: the supervisor stops it at the budget, about 20 s in (less its stop lead), which
    # leaves `autostop pause` time to act first however loaded the machine is.
    wait_for(lambda: ps_json(workdir, "--all")[0]["state"] == "stopped", timeout=60, what="the budget stop")


@pytest.mark.slow  # the everyday subset stays under a minute serially
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "5"], "this host's price is unknown"),
        (["--idle-stop", "soon@5%"], "--idle-stop 'soon@5%': expected e.g. 30m@10%"),
        (
            ["--price-per-hour", "1", "--budget", "-1"],
            "--budget -1: must be an amount more than 0, at most 1e+09",
        ),
    ],
)
def test_bad_cost_rules_are_refused(gpudeck_home: Path, workdir: Path, args: list[str], message: str) -> None:
    result = gpudeck("run", *args, "--", "true", cwd=workdir)
    assert result.returncode == 2 and message in result.stderr


@pytest.mark.slow
def test_a_local_job_keeps_the_path_it_was_launched_with(gpudeck_home: Path, workdir: Path) -> None:
    venv_bin = workdir / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    tool = venv_bin / "only-in-my-venv"
    tool.write_text("#!/bin/sh\necho from-the-venv\n")
    tool.chmod(0o755)
    # A login profile that resets PATH, as Debian's /etc/profile does.
    (Path(gpudeck_home.parent / "user") / ".profile").write_text("PATH=/usr/bin:/bin\n")
    import os

    job_id = gpudeck(
        "run", "--", "only-in-my-venv", cwd=workdir, env={"PATH": f"{venv_bin}:{os.environ['PATH']}"}
    ).stdout.strip()
    assert gpudeck("logs", "-f", job_id, cwd=workdir).stdout == "from-the-venv\n"


@pytest.mark.slow
def test_two_restarts_at_once_start_one_copy(gpudeck_home: Path, workdir: Path) -> None:
    job_id = gpudeck("run", "--name", "once", "--", "true", cwd=workdir).stdout.strip()
    wait_for(
        lambda: any(j["id"] == job_id and j["state"] == "exited" for j in ps_json(workdir, "--all")),
        what="exited",
    )
    env = {**os.environ}
    both = [
        subprocess.Popen(
            [sys.executable, "-m", "tui", "restart", job_id],
            cwd=workdir,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=60), p.stdout.read(), p.stderr.read()) for p in both]  # type: ignore[union-attr]
    ok = [r for r in results if r[0] == 0]
    refused = [r for r in results if r[0] != 0]
    assert len(ok) == 1 and len(refused) == 1, results
    new_id = ok[0][1].strip()
    # The loser either sees the winner's claim on the job (still under way) or its result.
    assert (
        f"job {job_id} was already restarted as {new_id}" in refused[0][2]
        or f"a restart is under way (as {new_id}" in refused[0][2]
    ), refused[0][2]
    assert len(refused[0][2].strip().splitlines()) == 1
    assert sorted(j["id"] for j in ps_json(workdir, "--all") if j["name"] == "once") == sorted(
        [job_id, new_id]
    )
    again = gpudeck("restart", job_id, cwd=workdir)  # later too: restart the new one instead
    assert again.returncode != 0 and new_id in again.stderr


@pytest.mark.slow
def test_rm_while_logs_follows_ends_the_follower_cleanly(gpudeck_home: Path, workdir: Path) -> None:
    import signal

    job_id = gpudeck("run", "--", "bash", "-c", "echo ready; sleep 600", cwd=workdir).stdout.strip()
    follower = subprocess.Popen(
        [sys.executable, "-m", "tui", "logs", "-f", job_id],
        cwd=workdir,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert follower.stdout is not None and follower.stdout.readline() == "ready\n"
        follower.send_signal(signal.SIGSTOP)  # the job is killed and removed while the follower sleeps
        assert gpudeck("kill", job_id, cwd=workdir).returncode == 0
        assert gpudeck("rm", job_id, cwd=workdir).returncode == 0
        follower.send_signal(signal.SIGCONT)
        code = follower.wait(timeout=60)
    finally:
        follower.kill()
    err = follower.stderr.read() if follower.stderr else ""
    # The agent pushed the job's end (killed) before the removal: that is what the follower reports.
    # (A removal seen before the end is one line and exit 3: tests/test_logs_follow.py.)
    assert code == 137 and err == "", err


# One argv per entry of the table --read-only reads: a verb, or each of its sub-verbs that writes.
WRITING_ARGV = {
    "run": ["run", "--", "true"],
    "watch": ["watch", "x.log"],
    "stop": ["stop", "x"],
    "kill": ["kill", "x"],
    "restart": ["restart", "x"],
    "rm": ["rm", "x"],
    "autostop": ["autostop", "pause", "x"],
    "scale": ["scale", "x", "+1"],
    "sync": ["sync", "."],
    "gc": ["gc"],
    "hosts add": ["hosts", "add", "h", "127.0.0.1", "--no-connect"],
    "hosts rm": ["hosts", "rm", "local"],
    "hosts set": ["hosts", "set", "local", "price_per_hour=9"],
    "hosts trust": ["hosts", "trust", "local"],
    "cloud stop": ["cloud", "stop", "i-1", "--yes"],
    "cloud start": ["cloud", "start", "i-1", "--yes"],
    "cloud terminate": ["cloud", "terminate", "i-1", "--yes"],
    "cloud enforce": ["cloud", "enforce", "--dry-run"],
    "cloud launch": ["cloud", "launch", "--provider", "aws", "--type", "g5.xlarge", "--yes"],
    "policy run": ["policy", "run", "--once"],
}


def test_the_refused_list_is_the_one_table_and_the_readme_and_help_say_it() -> None:
    from tui.cli import build_parser
    from tui.read_only import WRITING, refused_list

    assert set(WRITING_ARGV) == {
        v if s is None else f"{v} {x}" for v, subs in WRITING.items() for s in [subs] for x in (s or [None])
    }
    readme = " ".join((Path(__file__).parent.parent / "README.md").read_text().split())
    assert refused_list() in readme
    assert refused_list() in " ".join(build_parser().format_help().split())


@pytest.mark.slow
@pytest.mark.parametrize("verb", list(WRITING_ARGV))
def test_read_only_refuses_every_verb_that_writes(gpudeck_home: Path, workdir: Path, verb: str) -> None:
    hosts = gpudeck_home / "hosts.toml"
    hosts.write_text("# mine\n[hosts.local]\n")
    r = gpudeck("--read-only", *WRITING_ARGV[verb], cwd=workdir)
    assert r.returncode == 2 and r.stderr == f"gpudeck {verb}: refused: --read-only\n"
    assert hosts.read_text() == "# mine\n[hosts.local]\n"  # nothing written
    assert not (gpudeck_home / "known_hosts").exists()
    assert ps_json(workdir) == []  # nothing was launched


def test_read_only_still_watches(gpudeck_home: Path, workdir: Path) -> None:
    r = gpudeck("--read-only", "ps", cwd=workdir)
    assert r.returncode == 0, r.stderr


def test_read_only_without_a_verb_opens_the_tui_read_only(
    gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tui.app
    from tui import cli

    opened: list[dict] = []
    monkeypatch.setattr(tui.app, "main", lambda **kw: opened.append(kw) or 0)  # main returns the exit status
    assert cli.run(["--read-only"]) == 0
    assert opened == [{"replay": None, "read_only": True}]
