"""The parts of cached environments that need no job: the key, pip's settings as uv flags, the
error line a failed build leaves, and the client reading `--requirements FILE|auto`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from remote_agent.pyenv.key import environment_key, interpreter
from remote_agent.pyenv.pipconf import uv_index_flags
from remote_agent.pyenv.stream import error_line
from remote_agent.spec import Environment
from tests.conftest import gpudeck
from tui.actions.requirements import environment_for
from tui.errors import EXIT_USAGE, GpudeckError

# -- the key ---------------------------------------------------------------------------------------


def test_the_key_follows_the_interpreter_the_requirements_and_the_pip_options():
    me = interpreter(sys.executable)
    assert me.short == ".".join(map(str, sys.version_info[:3]))
    base = environment_key(me.identity, Environment(requirements="a==1\n"))
    assert base == environment_key(interpreter(sys.executable).identity, Environment(requirements="a==1\n"))
    assert base == environment_key(me.identity, Environment(requirements="a==1\n", source="elsewhere.txt"))
    others = {
        environment_key(me.identity, Environment(requirements="a==2\n")),
        environment_key(me.identity, Environment(requirements="a==1\n", pip_options=("--pre",))),
        environment_key(me.identity.replace(me.short, "0.0.1"), Environment(requirements="a==1\n")),
    }
    assert base not in others and len(others) == 3


def test_an_interpreter_that_does_not_run_is_named():
    with pytest.raises(Exception, match="the job's python /nonexistent/python3 does not run"):
        interpreter("/nonexistent/python3")


# -- pip's settings for uv -------------------------------------------------------------------------


def test_pips_variables_become_uv_flags():
    env = {
        "PIP_INDEX_URL": "http://127.0.0.1:1/simple",
        "PIP_EXTRA_INDEX_URL": "http://a/simple http://b/simple",
        "PIP_FIND_LINKS": "/w",
        "PIP_NO_INDEX": "true",
        "PIP_TRUSTED_HOST": "127.0.0.1",
        "PIP_CONFIG_FILE": "/dev/null",
    }
    assert uv_index_flags(env) == [
        "--index-url",
        "http://127.0.0.1:1/simple",
        "--extra-index-url",
        "http://a/simple",
        "--extra-index-url",
        "http://b/simple",
        "--find-links",
        "/w",
        "--allow-insecure-host",
        "127.0.0.1",
        "--no-index",
    ]
    assert uv_index_flags({"PIP_NO_INDEX": "0", "PIP_CONFIG_FILE": "/dev/null"}) == []


def test_a_pip_conf_is_read_as_pip_reads_it(tmp_path: Path):
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\nindex-url = http://global/simple\nfind-links = /one\n   /two\n"
        "[install]\nindex-url = http://install/simple\n"
    )
    flags = pairs(uv_index_flags({"PIP_CONFIG_FILE": str(conf)}))  # read last: over this machine's files
    assert flags["--index-url"] == ["http://install/simple"]  # [install] over [global]
    assert flags["--find-links"] == ["/one", "/two"]
    # a variable wins over the file; uv's own variable wins over both
    env = {"PIP_CONFIG_FILE": str(conf), "PIP_INDEX_URL": "http://env/simple"}
    assert pairs(uv_index_flags(env))["--index-url"] == ["http://env/simple"]
    assert "--index-url" not in uv_index_flags(dict(env, UV_INDEX_URL="http://uv/simple"))


def pairs(flags: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for flag, value in zip(flags[::2], flags[1::2], strict=True):
        out.setdefault(flag, []).append(value)
    return out


# -- a failed build's cause ------------------------------------------------------------------------


def test_pips_last_error_line_is_the_cause():
    lines = [
        "Looking in links: /w",
        "ERROR: Could not find a version that satisfies the requirement nosuchpkg==9 (from versions: none)",
        "ERROR: No matching distribution found for nosuchpkg==9",
        "",
    ]
    assert error_line(lines) == "ERROR: No matching distribution found for nosuchpkg==9"


def test_uvs_report_is_one_line():
    lines = [
        "Using Python 3.11.7 environment at: /e",
        "  \u00d7 No solution found when resolving dependencies:",
        "  \u2570\u2500\u25b6 Because nosuchpkg was not found in the package registry, we can conclude that it is unsatisfiable.",
        "",
    ]
    assert error_line(lines) == (
        "No solution found when resolving dependencies: Because nosuchpkg was not found in the "
        "package registry, we can conclude that it is unsatisfiable."
    )
    plain = ["error: No solution found when resolving dependencies", "  cause: Because x was not found."]
    assert (
        error_line(plain) == "error: No solution found when resolving dependencies: Because x was not found."
    )
    assert error_line(["something", "Killed"]) == "Killed"


# -- the client: --requirements FILE|auto ----------------------------------------------------------


def test_a_file_is_read_with_its_r_includes_inlined(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "base.txt").write_text("numpy==2.0\n")
    (tmp_path / "req.txt").write_text("--index-url http://i/simple\n-r sub/base.txt\ntorch==2.13.0  # cpu\n")
    env = environment_for(str(tmp_path / "req.txt"), tmp_path)
    assert env is not None and env.source == str(tmp_path / "req.txt")
    assert env.requirements.splitlines() == [
        "--index-url http://i/simple",
        "# -r sub/base.txt",
        "numpy==2.0",
        "torch==2.13.0  # cpu",
    ]
    assert environment_for("off", tmp_path) is None and environment_for(None, tmp_path) is None


def test_auto_takes_the_first_of_lock_requirements_and_pyproject(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no uv here: a uv.lock is passed over
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\ndependencies = ["a>=1", "b"]\n')
    (tmp_path / "uv.lock").write_text("version = 1\n")
    env = environment_for("auto", tmp_path)
    assert env is not None and env.requirements == "a>=1\nb\n"
    assert env.source == "pyproject.toml [project].dependencies"
    (tmp_path / "requirements.txt").write_text("c==3\n")
    assert environment_for("auto", tmp_path) == Environment(requirements="c==3\n", source="requirements.txt")
    (tmp_path / "requirements.lock").write_text("c==3.0.1\n")
    assert environment_for("auto", tmp_path).source == "requirements.lock"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("files", "value", "message"),
    [
        ({}, "missing.txt", "--requirements missing.txt: no such file"),
        (
            {},
            "auto",
            "--requirements auto: none of requirements.lock, uv.lock, requirements.txt, pyproject.toml in",
        ),
        ({"r.txt": b"\xff\xfe"}, "r.txt", "--requirements r.txt: not UTF-8 text"),
        ({"r.txt": b"-r r.txt\n"}, "r.txt", "nest deeper than 16"),
        ({"r.txt": b"-r gone.txt\n"}, "r.txt", "--requirements r.txt line 1: gone.txt: no such file"),
        ({"pyproject.toml": b"[project\n"}, "auto", "pyproject.toml line 1: not valid TOML"),
        (
            {"pyproject.toml": b"[project]\ndependencies = 5\n"},
            "auto",
            "[project].dependencies: expected a list",
        ),
    ],
)
def test_a_bad_requirements_file_is_one_usage_line(tmp_path: Path, monkeypatch, files, value, message):
    monkeypatch.chdir(tmp_path)
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    with pytest.raises(GpudeckError, match=None) as caught:
        environment_for(value, tmp_path)
    assert message in str(caught.value) and caught.value.code == EXIT_USAGE


def test_the_cli_refuses_a_missing_file_before_launching(gpudeck_home: Path, workdir: Path):
    done = gpudeck("run", "--requirements", "nope.txt", "--", "true", cwd=workdir)
    assert done.returncode == EXIT_USAGE
    assert done.stderr.strip() == "gpudeck: --requirements nope.txt: no such file"
    jobs = gpudeck_home / "local-agent" / "jobs"
    assert not jobs.exists() or not any(jobs.iterdir())


def test_auto_looks_in_the_synced_directory_first(tmp_path: Path, monkeypatch):
    """`--sync DIR` is where `auto` looks: the requirements travel with the code they belong to."""
    from tui.actions.options import LaunchOptions
    from tui.actions.requirements import source_dir
    from tui.sync.options import SyncOptions

    monkeypatch.chdir(tmp_path)
    assert source_dir(LaunchOptions(argv=("x",))) == tmp_path
    assert source_dir(LaunchOptions(argv=("x",), workdir=str(tmp_path / "w"))) == tmp_path / "w"
    assert source_dir(LaunchOptions(argv=("x",), host="gpu1", workdir="/remote")) == tmp_path
    synced = LaunchOptions(argv=("x",), sync=SyncOptions(directory=str(tmp_path / "proj")))
    assert source_dir(synced) == tmp_path / "proj"
