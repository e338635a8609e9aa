"""Layers guarded by a test (DESIGN style 1), each checked in a fresh interpreter.

remote_agent imports only the standard library; tui's transport/model/store code imports no
Textual; torch is imported by nothing outside trainer/. Modules are discovered, so the checks
grow with the tree.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# tui modules that must work without Textual: the transport, model, store and cost layers.
NO_TEXTUAL = ("tui.remote", "tui.store", "tui.fleet", "tui.bundle", "tui.paths",
              "tui.cost", "tui.cloud", "tui.policy", "tui.model")
UI = ("tui.widgets", "tui.screens", "tui.app")  # tui.app* included: app.py, app_*.py

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
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps([packages, select, skip])],
                         capture_output=True, text=True, cwd=REPO, env=env, timeout=100)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_remote_agent_imports_only_the_standard_library():
    got = probe(["remote_agent"])
    expected = {f"remote_agent.{p.stem}" for p in (REPO / "remote_agent").glob("*.py")
                if p.stem not in ("__init__", "__main__")}
    assert expected <= set(got["imported"])  # discovery found every module on disk
    outside = [m for m in got["added"] if m != "remote_agent" and m not in sys.stdlib_module_names]
    assert outside == [], f"remote_agent pulls in non-stdlib modules: {outside}"
    assert "pynvml" not in got["added"]  # lazy: imported only when a GPU is asked about


def test_tui_model_transport_and_store_import_no_textual():
    got = probe(["tui"], select=NO_TEXTUAL, skip=UI)
    assert "tui.bundle" in got["imported"] and "tui.remote" in got["imported"]
    on_disk = [f"tui.remote.{p.stem}" for p in (REPO / "tui" / "remote").glob("*.py") if p.stem != "__init__"]
    assert set(on_disk) <= set(got["imported"])
    assert "textual" not in got["added"], f"one of {got['imported']} imports textual"


def test_torch_is_imported_only_under_trainer():
    got = probe(["remote_agent", "tui"])
    assert "tui.bundle" in got["imported"] and "remote_agent.gpu" in got["imported"]
    assert "torch" not in got["added"], f"one of {got['imported']} imports torch"


@pytest.mark.skipif(importlib.util.find_spec("vermin") is None, reason="vermin is not installed")
def test_remote_agent_is_python38_compatible_by_vermin():
    # vermin has no __main__ module; call its console-script entry point in this interpreter.
    cmd = [sys.executable, "-c", "import sys; from vermin import main; sys.exit(main())",
           "-t=3.8-", "--no-tips", "--violations", "remote_agent/"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=100)
    assert out.returncode == 0, out.stdout + out.stderr
