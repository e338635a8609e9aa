"""One meaning, one exit code, in every verb (#25, findings 15-16): a bad option value is refused
with 2 before anything is sent (empty strings included: an empty value is never the default), an
unknown host is 2 wherever it is named, a provider that could not be asked is 1 in text and JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck


def _refused(result, *needles: str) -> None:  # type: ignore[no-untyped-def]
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and "internal error" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


BAD_VALUES = {
    "empty idle stop": (["run", "--idle-stop", "", "--", "true"], "--idle-stop: an empty value"),
    "empty workdir": (["run", "--workdir", "", "--", "true"], "--workdir: an empty value"),
    "empty workdir, = form": (["run", "--workdir=", "--", "true"], "--workdir: an empty value"),
    "empty since": (["cost", "--since", ""], "--since: an empty value"),
    "empty at": (["policy", "eval", "--at", ""], "--at: an empty value"),
    "grace beyond a day": (["run", "--grace", "1e23", "--", "true"], "--grace 1e+23"),
    "a price past the spec's bound": (
        ["run", "--price-per-hour", "1e23", "--", "true"],
        "--price-per-hour 1e+23",
    ),
    "a budget past the spec's bound": (["run", "--budget", "1e23", "--", "true"], "--budget 1e+23"),
    "missing workdir": (
        ["run", "--workdir", "/nonexistent/dir", "--", "true"],
        "--workdir /nonexistent/dir: no such directory",
    ),
    "pid beyond any pid": (
        ["watch", "--pid", "99999999999999999999", "/tmp/x.log"],
        "--pid 99999999999999999999",
    ),
    "interval inf": (["policy", "run", "--interval", "inf", "--once"], "--interval inf"),
    "name like an id": (
        ["run", "--name", "2026", "--", "true"],
        "--name '2026': looks like the start of a job id",
    ),
    "name like a longer id prefix": (
        ["run", "--name", "20261205-1", "--", "true"],
        "looks like the start of a job id",
    ),
    "unknown host, run": (["run", "--host", "nope", "--", "true"], "'nope'"),
    "unknown host, hosts rm": (["hosts", "rm", "nope"], "'nope'"),
    "unknown host, hosts set": (["hosts", "set", "nope", "price_per_hour=1"], "'nope'"),
    "unknown host, hosts trust": (["hosts", "trust", "nope"], "'nope'"),
    "unknown host, run --pool": (["run", "--pool", "nope", "--", "true"], "--pool: no such host 'nope'"),
    "master addr a path": (
        ["run", "--nodes", "2", "--master-addr", "../../etc/passwd", "--", "true"],
        "--master-addr '../../etc/passwd': expected a host name",
    ),
    "control characters in a host's field": (
        ["hosts", "add", "box", "127.0.0.1:1", "--no-connect", "--python", "py\x1b[2J"],
        "--python py\\x1b[2J: control characters",
    ),
}


@pytest.mark.slow  # the everyday subset stays under a minute serially
@pytest.mark.parametrize("case", list(BAD_VALUES))
def test_a_bad_value_is_refused_with_2_before_anything_is_sent(
    gpudeck_home: Path, workdir: Path, case: str
) -> None:
    argv, said = BAD_VALUES[case]
    _refused(gpudeck(*argv, cwd=workdir), said)
    assert not (gpudeck_home / "local-agent" / "jobs").exists() or not any(
        (gpudeck_home / "local-agent" / "jobs").iterdir()
    )


def test_cloud_launch_refuses_a_bad_port_before_asking(gpudeck_home: Path) -> None:
    result = gpudeck(
        "cloud",
        "launch",
        "--provider",
        "aws",
        "--type",
        "g5.xlarge",
        "--ssh-port",
        "-1",
        env={"AWS_DEFAULT_REGION": "us-east-1"},
    )
    _refused(result, "--ssh-port -1")
    assert "Launch a" not in result.stderr + result.stdout  # never asked


def test_a_value_only_the_host_can_judge_is_still_2(gpudeck_home: Path, workdir: Path) -> None:
    """A pid that is a pid but not alive there: the agent's refusal of a spec field is bad usage too."""
    log = workdir / "train.log"
    log.write_text("step 1\n")
    _refused(gpudeck("watch", "--pid", "4194000", str(log), cwd=workdir), "spec.watch.pid")


@pytest.mark.slow  # the everyday subset stays under a minute serially
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
@pytest.mark.parametrize("verb", ["ls", "idle"])
def test_cloud_says_1_when_no_provider_could_be_asked_text_or_json(
    gpudeck_home: Path, verb: str, json_flag: list[str]
) -> None:
    env = {"AWS_DEFAULT_REGION": "", "AWS_REGION": "", "ALIBABA_CLOUD_REGION_ID": ""}
    result = gpudeck("cloud", verb, *json_flag, env=env)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "no region" in result.stderr and "no instance idle" not in result.stdout
    if json_flag:
        assert json.loads(result.stdout) == []


@pytest.mark.slow  # the everyday subset stays under a minute serially
def test_a_replay_refusal_is_2_as_a_read_only_refusal_is(gpudeck_home: Path) -> None:
    recording = Path(__file__).resolve().parent.parent / "docs" / "gpu-fleet.jsonl"
    job = json.loads(gpudeck("--replay", str(recording), "--replay-speed", "0", "ps", "--json").stdout)[0][
        "id"
    ]
    result = gpudeck("--replay", str(recording), "--replay-speed", "0", "kill", job)
    _refused(result, "read-only replay")
    assert gpudeck("--read-only", "kill", job).returncode == 2


def test_ids_still_work_for_names_that_are_allowed(gpudeck_home: Path, workdir: Path) -> None:
    """Short numbers (under 4 characters) are never id prefixes: still fine as names."""
    result = gpudeck("run", "--name", "202", "--", sys.executable, "-c", "pass", cwd=workdir)
    assert result.returncode == 0, result.stderr
