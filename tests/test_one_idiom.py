"""One way to do background work in the client: `Service.in_thread` (tui/services/base.py), typed
callbacks on the app thread. Screens and widgets hand blocking work to the app's Background service;
none starts a worker or a thread, or dispatches on a worker's name."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "tui"
FORBIDDEN_CALLS = {"run_worker", "Thread"}
FORBIDDEN_DEFS = {"on_worker_state_changed"}


def _offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in FORBIDDEN_CALLS:
                found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {name}()")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in FORBIDDEN_DEFS:
            found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: def {node.name}")
        elif isinstance(node, ast.FunctionDef) and any(
            isinstance(d, ast.Name)
            and d.id == "work"
            or isinstance(d, ast.Call)
            and getattr(d.func, "id", "") == "work"
            for d in node.decorator_list
        ):
            found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: @work")
    return found


def test_screens_and_widgets_start_no_worker_of_their_own() -> None:
    files = [*ROOT.glob("screens/*.py"), *ROOT.glob("widgets/*.py")]
    assert files
    assert [o for f in files for o in _offences(f)] == []


def test_only_the_service_base_and_the_app_start_or_route_workers() -> None:
    starters = [
        o for f in ROOT.rglob("*.py") for o in _offences(f) if "run_worker" in o or "on_worker_state" in o
    ]
    assert {o.split(":")[0] for o in starters} == {"tui/services/base.py", "tui/app.py"}
