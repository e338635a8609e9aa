"""`gpudeck hosts check` names a GPU with errors (the agent's `gpus` answer: uncorrected ECC errors
since the driver loaded, from the fake NVML's counters) and stays quiet about a healthy one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import gpudeck

FAKE_DIR = Path(__file__).resolve().parent / "fakes" / "nvml"
ROOT = Path(__file__).resolve().parents[1]
SICK, WELL = "GPU-aaaaaaaa-0000-0000-0000-000000000000", "GPU-bbbbbbbb-0000-0000-0000-000000000000"


def test_hosts_check_flags_the_gpu_with_uncorrected_ecc_errors(
    gpudeck_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    health = tmp_path / "health.json"
    health.write_text(
        json.dumps(
            {
                SICK: {"ecc": {"volatile": {"corrected": 5, "uncorrected": 2}}},
                WELL: {"ecc": {"volatile": {"corrected": 7, "uncorrected": 0}}},  # corrected alone: no alarm
            }
        )
    )
    monkeypatch.setenv("PYNVML_FAKE", json.dumps([{"uuid": SICK}, {"uuid": WELL}]))
    monkeypatch.setenv("PYNVML_FAKE_HEALTH", str(health))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_DIR), str(ROOT)]))
    text = gpudeck("hosts", "check", "local")
    assert text.returncode == 0, text.stderr
    assert f"  GPU 0 ({SICK}): 2 uncorrected ECC errors" in text.stdout.splitlines()
    assert WELL not in text.stdout
    found = json.loads(gpudeck("hosts", "check", "local", "--json").stdout)
    assert found["gpu_health"] == [{"index": 0, "uuid": SICK, "flag": "2 uncorrected ECC errors"}]
