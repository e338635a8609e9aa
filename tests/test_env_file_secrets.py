"""`run --env-file` (and hosts.toml's `env_file`): the values reach the job's environment and no file
gpudeck writes holds them — state.db, a recording, the agent dir (but the job's own spec.json, which
the job needs), `ps --json`, `inspect` — and a bad line is one usage line naming FILE:LINE."""

from __future__ import annotations

import hashlib
import secrets
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tui.errors import EXIT_USAGE

pytestmark = pytest.mark.slow  # CLI processes and a real job
# The job proves it got each value by writing its hash: the value itself must appear nowhere.
PROVE = (
    "import hashlib, os\n"
    "with open('proof', 'w') as f:\n"
    "    for k in ('FROM_FILE', 'MULTI', 'FROM_HOST', 'OVERRIDDEN'):\n"
    "        f.write(k + ' ' + hashlib.sha256(os.environ[k].encode()).hexdigest() + '\\n')\n"
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_env_file_values_reach_the_job_and_no_file_gpudeck_writes(
    gpudeck_home: Path, workdir: Path, tmp_path: Path
) -> None:
    token, key, host_token = (f"tok-{secrets.token_hex(12)}" for _ in range(3))
    multi = f"-----BEGIN-----\n{key}\n-----END-----"
    env_file = tmp_path / "job.env"
    env_file.write_text(f'# secrets\nexport FROM_FILE={token}\nMULTI="{multi}"\nOVERRIDDEN=from-file\n')
    host_file = tmp_path / "host.env"
    host_file.write_text(f"FROM_HOST='{host_token}'\n")
    (gpudeck_home / "hosts.toml").write_text(f'[hosts.local]\nenv_file = "{host_file}"\n')
    tape = gpudeck_home / "session.tape"
    run = gpudeck(
        "--record",
        str(tape),
        "run",
        "--env-file",
        str(env_file),
        "--env",
        "OVERRIDDEN=given",
        "--",
        sys.executable,
        "-c",
        PROVE,
        cwd=workdir,
    )
    assert run.returncode == 0, run.stderr
    job = run.stdout.strip()
    assert gpudeck("logs", "-f", job).returncode == 0
    proof = dict(line.split() for line in (workdir / "proof").read_text().splitlines())
    assert proof == {
        "FROM_FILE": sha(token),
        "MULTI": sha(multi),
        "FROM_HOST": sha(host_token),
        "OVERRIDDEN": sha("given"),  # --env wins over the file
    }

    shown = [gpudeck("ps", "--json", "--all"), gpudeck("inspect", "--json", job), gpudeck("inspect", job)]
    assert all(r.returncode == 0 for r in shown)
    spec = next(gpudeck_home.glob(f"local-agent/jobs/{job}/0/spec.json"))
    assert token.encode() in spec.read_bytes()  # the job's own spec keeps them (0600), for restarts
    written = [p for p in gpudeck_home.rglob("*") if p.is_file() and p != spec and p.name != "hosts.toml"]
    assert any(p.name == "state.db" for p in written) and tape in written
    for secret in (token, key, host_token):
        for r in shown:
            assert secret not in r.stdout + r.stderr
        for path in written:
            assert secret.encode() not in path.read_bytes(), path


def test_a_bad_env_file_line_is_one_usage_line(gpudeck_home: Path, workdir: Path) -> None:
    bad = workdir / "bad.env"
    bad.write_text("GOOD=1\n# fine\nAPI_TOKEN hunter2\n")
    r = gpudeck("run", "--env-file", str(bad), "--", "true", cwd=workdir)
    assert r.returncode == EXIT_USAGE
    assert r.stderr == f"gpudeck: --env-file {bad}:3: expected KEY=value\n"
    assert not list(gpudeck_home.glob("local-agent/jobs/*"))  # nothing was launched
