"""Whole recorded logs, split the way the supervisor splits output: the curve that comes out.

The logs under tests/data/logs/ mix metric lines with the noise real runs print around them
(downloads, warnings, model summaries, config dumps, bars without metrics).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from remote_agent.metrics import parse_line

LOGS = Path(__file__).parent / "data" / "logs"
REPO = Path(__file__).resolve().parent.parent


def points(name: str) -> list:
    text = (LOGS / name).read_text(encoding="utf-8")
    lines = re.split(r"\r\n|\r|\n", text)
    return [p for p in map(parse_line, lines) if p is not None]


def series(found: list, key: str) -> list:
    return [p[key] for p in found if key in p]


def test_hugging_face_trainer_run() -> None:
    found = points("hf_trainer.log")
    assert series(found, "loss") == [0.6931, 0.4512, 0.3875, 0.2214]
    assert series(found, "grad_norm") == [3.1416, 5.25, "nan", 2.0]
    assert series(found, "val_loss") == [0.2871]
    assert series(found, "val_acc") == [0.9012]
    summaries = [p for p in found if p.get("summary")]
    assert len(summaries) == 1 and summaries[0]["train_loss"] == 0.3388
    assert len(found) == 6  # four train points, one eval, one summary: nothing from the noise


def test_ultralytics_yolo_run() -> None:
    found = points("yolo.log")
    assert series(found, "epoch") == [1, 2, 3]
    assert series(found, "loss") == [2.6356, 2.5706, 2.6823]
    assert series(found, "val_map50_95") == [0.681, 0.716, 0.734]
    assert len(found) == 6  # no point from the config dump, the optimizer line or the headers


def test_nanogpt_run() -> None:
    found = points("nanogpt.log")
    assert series(found, "loss") == [4.2874, 4.2648, 3.2202, 2.7697, 1.544, 1.5912, "nan"]
    assert series(found, "val_loss") == [4.2823, 1.722]
    assert series(found, "step") == [0, 0, 10, 20, 250, 250, 260]


def test_lightning_run() -> None:
    found = points("lightning.log")
    assert series(found, "loss") == [2.31, 2.15, 1.98, 1.98, "nan"]
    assert series(found, "val_loss") == [2.05]
    assert series(found, "loss_epoch") == [2.12]


def _python38() -> str:
    candidates = [
        os.environ.get("GPUDECK_PYTHON38"),
        "/root/.pyenv/versions/3.8.18/bin/python3.8",
        shutil.which("python3.8"),
    ]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            probe = subprocess.run([candidate, "-c", "pass"], capture_output=True, timeout=30)
            if probe.returncode == 0:
                return candidate
    return ""


PYTHON38 = _python38()


@pytest.mark.skipif(not PYTHON38, reason="no working Python 3.8 interpreter here")
def test_parser_runs_on_python_3_8_with_the_same_results() -> None:
    # The agent runs on hosts with Python 3.8: same answers there, and only the standard library.
    script = (
        "import json, re, sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from remote_agent.metrics import parse_line\n"
        "text = open(sys.argv[1], encoding='utf-8').read()\n"
        "print(json.dumps([p for p in map(parse_line, re.split(r'\\r\\n|\\r|\\n', text)) if p]))\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('hypothesis', 'pytest')]\n"
    )
    for name in ("hf_trainer.log", "yolo.log", "nanogpt.log", "lightning.log"):
        out = subprocess.run(
            [PYTHON38, "-I", "-c", script, str(LOGS / name)], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == points(name), name
    assert sys.version_info >= (3, 8)
