"""Layers guarded by a test (docs/architecture.md), each checked in a fresh interpreter, and by
import-linter's contracts in pyproject.toml.

remote_agent imports only the standard library; every tui module outside the UI imports no
Textual; torch is imported by nothing outside trainer/. Modules are discovered from the tree: only
the UI's few packages are named here, everything else must stay Textual-free as it grows.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The UI: the only tui modules that may import Textual (tui.app* included: app.py, app_*.py).
UI = ("tui.app", "tui.screens", "tui.widgets", "tui.services", "tui.messages", "tui.themes")

# Runs in the child: discover modules under the given packages from the file system (no
# import, so a UI package's __init__ cannot leak in), import the selected ones, and report
# which top-level modules those imports added.
_PROBE = r"""
import importlib, importlib.util, json, os, pkgutil, sys
packages, select, skip = json.loads(sys.argv[1])
def under(n, prefixes, loose=False):
    return any(n == p or n.startswith(p + ".") or (loose and n.startswith(p + "_")) for p in prefixes)
def walk(paths, prefix):
    for m in pkgutil.iter_modules(paths, prefix):
        yield m.name
        if m.ispkg:
            leaf = m.name.rsplit(".", 1)[1]
            yield from walk([os.path.join(p, leaf) for p in paths if os.path.isdir(os.path.join(p, leaf))], m.name + ".")
names = []
for pkg in packages:
    names.append(pkg)
    names += walk(list(importlib.util.find_spec(pkg).submodule_search_locations), pkg + ".")
names = sorted(n for n in set(names) if "__main__" not in n.split(".")
               and (not select or n in packages or under(n, select)) and not under(n, skip, loose=True))
before = set(sys.modules)
for n in names:
    importlib.import_module(n)
added = sorted({m.split(".")[0] for m in set(sys.modules) - before})
print(json.dumps({"imported": names, "added": added}))
"""


def probe(packages: list[str], select: tuple[str, ...] = (), skip: tuple[str, ...] = ()) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps([packages, select, skip])],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=100,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_remote_agent_imports_only_the_standard_library():
    got = probe(["remote_agent"])
    expected = {
        ".".join(p.relative_to(REPO).with_suffix("").parts)
        for p in (REPO / "remote_agent").rglob("*.py")
        if p.stem not in ("__init__", "__main__")
    }
    assert expected <= set(got["imported"])  # discovery found every module on disk
    outside = [m for m in got["added"] if m != "remote_agent" and m not in sys.stdlib_module_names]
    assert outside == [], f"remote_agent pulls in non-stdlib modules: {outside}"
    assert "pynvml" not in got["added"]  # lazy: imported only when a GPU is asked about


def test_everything_but_the_ui_imports_no_textual():
    got = probe(["tui"], skip=UI)
    on_disk = {".".join(p.relative_to(REPO).with_suffix("").parts) for p in (REPO / "tui").rglob("*.py")}
    on_disk = {m.removesuffix(".__init__") for m in on_disk if not m.endswith("__main__")}
    outside_ui = {
        m for m in on_disk if not any(m == u or m.startswith(u + ".") or m.startswith(u + "_") for u in UI)
    }
    assert outside_ui <= set(got["imported"])  # discovery found every non-UI module on disk
    assert {"tui.cli", "tui.commands.ps", "tui.actions", "tui.session", "tui.settings"} <= set(
        got["imported"]
    )
    assert "textual" not in got["added"] and "rich" not in got["added"], (
        f"one of {got['imported']} imports textual"
    )


def test_the_cli_starts_without_textual_paramiko_boto3_or_torch():
    code = (
        "import sys; from tui.cli import build_parser; build_parser(); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'textual', 'rich', 'paramiko', 'boto3', 'torch'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=100)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter is not installed")
def test_import_linter_contracts_hold():
    out = subprocess.run(["lint-imports"], capture_output=True, text=True, cwd=REPO, timeout=200)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


@pytest.mark.slow  # the everyday subset stays under a minute serially
def test_torch_is_imported_only_under_trainer():
    got = probe(["remote_agent", "tui"])
    assert "tui.bundle" in got["imported"] and "remote_agent.probes.gpu" in got["imported"]
    assert "torch" not in got["added"], f"one of {got['imported']} imports torch"


@pytest.mark.skipif(importlib.util.find_spec("vermin") is None, reason="vermin is not installed")
def test_remote_agent_is_python38_compatible_by_vermin():
    # vermin has no __main__ module; call its console-script entry point in this interpreter.
    cmd = [
        sys.executable,
        "-c",
        "import sys; from vermin import main; sys.exit(main())",
        "-t=3.8-",
        "--no-tips",
        "--violations",
        "remote_agent/",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=100)
    assert out.returncode == 0, out.stdout + out.stderr


def test_ps_of_the_local_host_loads_only_what_a_listing_needs(tmp_path):
    """Every CLI start pays for its imports (the suite alone runs ~500): `ps` of an empty local
    home lists jobs without the supervisor's line parser, HTTP, the replay or the fleet model."""
    code = (
        "import sys; from tui.cli import main\n"
        "try:\n    main(['ps'])\nexcept SystemExit:\n    pass\n"
        "heavy = ['remote_agent.supervision.supervisor', 'urllib.request', 'tui.remote.replay', 'tui.fleet.model']\n"
        "print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)"
    )
    env = {**os.environ, "GPUDECK_HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=100
    )
    assert out.stderr.strip().splitlines()[-1] == "[]", out.stderr


def test_the_fleet_packages_lazy_names_all_resolve():
    import tui.fleet as fleet

    assert sorted(fleet.__all__) == sorted(fleet._HOME)
    for name in fleet.__all__:
        assert getattr(fleet, name) is not None
