"""Issue 33, cheap start: a listing or a points read loads only what it uses. Reading hosts.toml
needs no tomlkit (only its writes keep comments), the client's files under GPUDECK_HOME no
platformdirs, a `ps` no sqlite3 (it opens no state.db) nor subprocess (it starts no local agent), and
the local listing only the agent's read side: not the typed spec's dataclasses, nor the launcher,
Slurm, code store or GPU assignment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.test_cli_start import _ended_job

# What reading jobs never needs; each was loaded by every `ps` before (tens of ms of its start).
NOT_FOR_READING = (
    "tomlkit",
    "platformdirs",
    "remote_agent.spec",
    "remote_agent.serving.jobs",
    "remote_agent.slurm.submit",
    "remote_agent.codestore.store",
    "remote_agent.gpus.assign",
    "remote_agent.supervision.launcher",
)
# + what only some commands use: state.db, a local agent process, a time zone, a straggler's median,
# logging (concurrent.futures loaded it: the agent client's replies and the hosts asked at once)
NOT_FOR_PS = (
    *NOT_FOR_READING,
    *("sqlite3", "tui.store", "subprocess", "zoneinfo", "statistics", "logging", "concurrent.futures"),
)


def loaded_by(*argv: str) -> list[str]:
    """The modules a `gpudeck ARGV` run loaded (run in a fresh interpreter, as a command is);
    its exit must be 0."""
    probe = (
        "import json, runpy, sys\n"
        f"sys.argv = ['gpudeck', *{list(argv)!r}]\n"
        "try:\n    runpy.run_module('tui', run_name='__main__')\nexcept SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stderr.splitlines()[-1]))


def unwanted(loaded: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in loaded if m in names or m.startswith(tuple(f"{n}." for n in names))]


def test_a_local_ps_loads_neither_tomlkit_nor_sqlite_nor_the_agents_launcher(
    gpudeck_home: Path, tmp_path: Path
) -> None:
    _ended_job(gpudeck_home / "local-agent", "20260101-000000-000000", "job0", tmp_path)
    (gpudeck_home / "hosts.toml").write_text("# mine\n[hosts.local]\nprice_per_hour = 1.5\n")
    loaded = loaded_by("ps", "--all")
    assert "remote_agent.serving.jobreader" in loaded  # the listing was read, in this process
    assert unwanted(loaded, NOT_FOR_PS) == []


def test_the_libraries_loggers_are_quiet_once_logging_loads_later(gpudeck_home: Path) -> None:
    probe = (
        "import sys\n"
        "from tui.cli import run\n"
        "assert run(['ps']) == 0\n"
        "assert 'logging' not in sys.modules\n"
        "import logging\n"
        "for name in ('paramiko', 'botocore', 'boto3', 'aliyunsdkcore'):\n"
        "    log = logging.getLogger(name)\n"
        "    assert not log.propagate and any(isinstance(h, logging.NullHandler) for h in log.handlers), name\n"
        "logging.getLogger('paramiko.transport').error('a handshake failed')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "handshake" not in done.stderr


def test_help_is_still_as_wide_as_the_terminal(gpudeck_home: Path) -> None:
    def help_at(columns: int) -> list[str]:
        env = {**os.environ, "COLUMNS": str(columns)}
        done = subprocess.run(
            [sys.executable, "-m", "tui", "run", "--help"], capture_output=True, text=True, cwd=ROOT, env=env
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    narrow, wide = help_at(50), help_at(120)
    assert len(narrow) > len(wide)  # wrapped at the terminal's width, not at a fixed one
    assert len(narrow[0]) <= 50 < len(wide[0]) <= 120
