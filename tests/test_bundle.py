"""The agent zipapp: reproducible, named by its sources, runnable, and runnable on Python 3.8."""

from __future__ import annotations

import glob
import json
import os
import select
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tui import bundle

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "remote_agent"
HAS_MAIN = (PACKAGE / "__main__.py").is_file()
NEEDS_MAIN = pytest.mark.skipif(not HAS_MAIN, reason="remote_agent/__main__.py does not exist yet")


def find_python38() -> str | None:
    """A real Python 3.8: pyenv installs first (its shims refuse unselected versions), then PATH."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python3.8")))
    candidates += sorted(glob.glob("/root/.pyenv/versions/3.8*/bin/python3.8"))
    candidates += [p for p in (shutil.which("python3.8"),) if p]
    for exe in candidates:
        try:
            out = subprocess.run(
                [exe, "-c", "import sys; print(sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=20,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip() == "(3, 8)":
            return exe
    return None


PY38 = find_python38()
NEEDS_PY38 = pytest.mark.skipif(PY38 is None, reason="no Python 3.8 found (pyenv versions or PATH)")


@pytest.fixture(scope="module")
def pyz(tmp_path_factory) -> Path:
    return bundle.build_zipapp(tmp_path_factory.mktemp("agents") / "agents")


def test_sources_hold_the_package_pynvml_and_a_main_stub():
    sources = dict(bundle.agent_sources())
    assert sources["__main__.py"] == b"from remote_agent.__main__ import main\n\nmain()\n"
    import pynvml  # the installed nvidia-ml-py module is what ships

    assert sources["pynvml.py"] == Path(pynvml.__file__).read_bytes()
    assert sources["remote_agent/probes/gpu.py"] == (PACKAGE / "probes" / "gpu.py").read_bytes()
    assert sources["remote_agent/PROTOCOL.md"] == (PACKAGE / "PROTOCOL.md").read_bytes()
    expected = {f"remote_agent/{p.relative_to(PACKAGE).as_posix()}" for p in PACKAGE.rglob("*.py")}
    assert expected <= set(sources)
    assert not [n for n in sources if "__pycache__" in n or n.endswith(".pyc")]


def test_two_builds_are_byte_identical(tmp_path):
    a = bundle.build_zipapp(tmp_path / "a")
    b = bundle.build_zipapp(tmp_path / "b")
    assert a.name == b.name == f"{bundle.agent_name(bundle.agent_sources())}.pyz"
    assert len(a.stem) == 16 and int(a.stem, 16) >= 0
    assert a.read_bytes() == b.read_bytes()


def test_zip_entries_are_fixed_and_sorted(pyz):
    sources = bundle.agent_sources()
    entries = sorted([*sources, *bundle.compiled(sources)])
    with zipfile.ZipFile(pyz) as zf:
        infos = zf.infolist()
        assert [i.filename for i in infos] == [name for name, _ in entries]
        assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
        assert {i.external_attr >> 16 for i in infos} == {0o100644}
        assert all(zf.read(name) == data for name, data in entries)


def test_every_module_ships_its_bytecode_for_this_python(pyz):
    import importlib.util

    with zipfile.ZipFile(pyz) as zf:
        names = set(zf.namelist())
        modules = [n for n in names if n.endswith(".py")]
        assert modules and all(n[:-3] + ".pyc" in names for n in modules)
        header = zf.read("remote_agent/__main__.pyc")[:16]
    assert header[:4] == importlib.util.MAGIC_NUMBER
    assert header[4:8] == (1).to_bytes(4, "little")  # hash-based, unchecked: no mtime to match


# Which of its modules a zipapp's agent compiled from source (an audit hook on compile()).
_COMPILES = (
    "import sys\n"
    "seen = []\n"
    "sys.addaudithook(lambda e, a: seen.append(str(a[1])) if e == 'compile' else None)\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "from remote_agent.__main__ import main\n"
    "main(['hello'])\n"
    "print()\n"
    "print(len([s for s in seen if 'remote_agent' in s]))\n"
)


def test_this_python_runs_the_bytecode_and_compiles_no_module(pyz):
    """A serve or a supervisor starts without compiling the agent (issue 33: a serve's start
    252 → 94 ms here; ~2 MiB less per supervisor)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run(
        [sys.executable, "-c", _COMPILES, str(pyz)], capture_output=True, text=True, env=env, cwd="/"
    )
    assert ran.returncode == 0, ran.stderr
    assert int(ran.stdout.split()[-1]) == 0


@NEEDS_PY38
def test_another_python_compiles_the_source_instead(pyz):
    """A host's Python with another magic number passes the bytecode over (zipimport's bad-magic
    fallback): the agent runs from its source, as before."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run([PY38, "-c", _COMPILES, str(pyz)], capture_output=True, text=True, env=env, cwd="/")
    assert ran.returncode == 0, ran.stderr
    assert int(ran.stdout.split()[-1]) > 20


def test_file_and_dir_modes_and_reuse(tmp_path):
    dest = tmp_path / "home" / "agents"
    old_umask = os.umask(0)  # even a permissive umask must not widen the modes
    try:
        path = bundle.build_zipapp(dest)
    finally:
        os.umask(old_umask)
    assert path.stat().st_mode & 0o777 == 0o600
    assert dest.stat().st_mode & 0o777 == 0o700
    inode = path.stat().st_ino
    assert bundle.build_zipapp(dest) == path and path.stat().st_ino == inode  # already there: reused
    assert [p.name for p in dest.iterdir()] == [path.name]  # no temp file left behind


def test_hash_follows_the_sources(tmp_path):
    copy = tmp_path / "remote_agent"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    original = bundle.agent_hash(bundle.agent_sources())
    assert bundle.agent_hash(bundle.agent_sources(copy)) == original  # location does not matter
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "stray.py").write_text("x = 1\n")
    (copy / "notes.txt").write_text("not shipped\n")
    assert bundle.agent_hash(bundle.agent_sources(copy)) == original
    with (copy / "probes" / "gpu.py").open("a") as f:
        f.write("# changed\n")
    changed = bundle.agent_sources(copy)
    assert bundle.agent_hash(changed) != original
    built = bundle.build_zipapp(tmp_path / "agents", changed)
    assert built.stem == bundle.agent_name(changed)
    assert bundle.agent_hash(reversed(changed)) == bundle.agent_hash(changed)  # order-free


def test_hash_keeps_path_and_content_apart():
    assert bundle.agent_hash([("ab", b"c")]) != bundle.agent_hash([("a", b"bc")])
    assert bundle.agent_hash([("a", b"")]) != bundle.agent_hash([("a", b""), ("b", b"")])


@NEEDS_PY38
def test_modules_import_and_report_no_gpu_under_python38(pyz):
    # Independent of serve: every agent module imports on 3.8 from the zip, and NVML says why not.
    code = (
        "import json, pkgutil, importlib, sys\n"
        "import remote_agent\n"
        "names = [m.name for m in pkgutil.walk_packages(remote_agent.__path__, 'remote_agent.')"
        " if not m.name.endswith('__main__')]\n"
        "for n in names: importlib.import_module(n)\n"
        "from remote_agent.probes import gpu, sysinfo\n"
        "inv = gpu.Nvml().inventory()\n"
        "print(json.dumps({'names': names, 'inv': inv, 'host': sysinfo.host_info(),"
        " 'pynvml': sys.modules['pynvml'].__file__}))\n"
    )
    out = subprocess.run(
        [PY38, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(pyz)},
        cwd=pyz.parent,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    expected = {
        ".".join(p.relative_to(REPO).with_suffix("").parts)
        for p in PACKAGE.rglob("*.py")
        if p.stem not in ("__init__", "__main__")
    }
    assert expected <= set(got["names"])
    assert got["inv"]["available"] is False
    assert got["inv"]["reason"] == "no NVIDIA GPU: NVML Shared Library Not Found"
    assert got["host"]["python"].startswith("3.8.")
    assert got["pynvml"].startswith(str(pyz))  # the bundled copy, not a site-packages one


@NEEDS_MAIN
def test_zipapp_runs(pyz):
    out = subprocess.run([sys.executable, str(pyz), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "serve" in out.stdout


def _read_json_lines(proc: subprocess.Popen, until, timeout: float = 30.0) -> list[dict]:
    """Read stdout until `until(obj)` holds for a JSON line, within `timeout` seconds."""
    fd = proc.stdout.fileno()
    buf, seen = b"", []
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        *complete, buf = (buf + chunk).split(b"\n")
        for line in complete:
            try:
                obj = json.loads(line)
            except ValueError:
                continue  # anything before the marker (a login shell's chatter) is skipped
            seen.append(obj)
            if until(obj):
                return seen
    raise AssertionError(f"no expected line within {timeout}s; saw {seen!r}")


@NEEDS_MAIN
@NEEDS_PY38
def test_zipapp_serves_hello_under_python38(pyz, tmp_path):
    proc = subprocess.Popen(
        [PY38, str(pyz), "serve", "--agent-dir", str(tmp_path / "agent")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        proc.stdin.write(b'{"id": 1, "op": "hello"}\n')
        proc.stdin.flush()
        lines = _read_json_lines(proc, lambda o: o.get("id") == 1)
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    marker = lines[0]
    assert marker["gpudeck"] == "agent" and marker["protocol"] == 1 and marker["pid"] == proc.pid
    resp = lines[-1]
    assert resp["ok"] is True, resp
    result = resp["result"]
    assert result["python"].startswith("3.8.")
    assert result["cpu_count"] == os.cpu_count()
    assert result["ram_total_mib"] > 0
    assert result["gpu"]["available"] is False
    assert result["gpu"]["reason"] == "no NVIDIA GPU: NVML Shared Library Not Found"


@NEEDS_MAIN
@NEEDS_PY38
def test_zipapp_runs_a_job_under_python38_and_exits_cleanly(pyz, tmp_path, gpudeck_home):
    """The shipped agent end to end on the oldest Python it supports: launch, supervise, journal."""
    work = tmp_path / "work"
    work.mkdir()
    agent = gpudeck_home / "local-agent"
    proc = subprocess.Popen(
        [PY38, str(pyz), "serve", "--agent-dir", str(agent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    spec = {
        "id": "20261129-120000-abcdef",
        "name": "py38",
        "argv": ["bash", "-c", "echo step=1 loss=0.5"],
        "workdir": str(work),
    }
    try:
        proc.stdin.write(json.dumps({"id": 1, "op": "launch", "spec": spec}).encode() + b"\n")
        proc.stdin.flush()
        _read_json_lines(proc, lambda o: o.get("id") == 1)
        journal = agent / "jobs" / spec["id"] / "0" / "events.jsonl"
        deadline = time.monotonic() + 30
        while '"exited"' not in (journal.read_text() if journal.exists() else ""):
            assert time.monotonic() < deadline, "the job never ended"
            time.sleep(0.05)
        proc.stdin.close()
        assert proc.wait(timeout=15) == 0, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [r.get("state") for r in records if r["kind"] == "state"] == ["starting", "running", "exited"]
    assert [r["values"] for r in records if r["kind"] == "metric"] == [{"step": 1, "loss": 0.5}]
    supervisor_cmd = agent / "jobs" / spec["id"] / "0" / "supervisor.log"
    assert supervisor_cmd.exists() and "Traceback" not in supervisor_cmd.read_text()


@pytest.mark.usefixtures("gpudeck_home")
def test_the_fake_nvml_fixture_ships_the_fake_even_after_this_process_built_the_real_one(
    request: pytest.FixtureRequest,
) -> None:
    """The client builds its zipapp once per process: a test that bundles the fake pynvml after an
    earlier test in the same worker built the real one would deploy that one, a second agent
    version beside the CLI's (the Slurm TUI test's job lost its agent to the collection)."""
    from tests.support.slurm import FAKE_NVML
    from tui.remote.deploy import local_zipapp

    with zipfile.ZipFile(local_zipapp()) as built:
        assert built.read("pynvml.py") != (FAKE_NVML / "pynvml.py").read_bytes()
    request.getfixturevalue("fake_nvml_bundled")
    with zipfile.ZipFile(local_zipapp()) as built:
        assert built.read("pynvml.py") == (FAKE_NVML / "pynvml.py").read_bytes()
