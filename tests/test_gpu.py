"""remote_agent.probes.gpu against the real pynvml (no driver here) and a fake at the import boundary."""

from __future__ import annotations

import importlib.util
import json
import os
import pwd
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from remote_agent.probes import gpu

FAKE_PATH = Path(__file__).parent / "fakes" / "nvml" / "pynvml.py"
MIB = 1024 * 1024
UUID0 = "GPU-1a2b3c4d-0000-1111-2222-333344445555"
UUID1 = "GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"


@pytest.fixture(autouse=True)
def _fresh_default():
    gpu.reset()
    yield
    gpu.reset()


@pytest.fixture
def fake(monkeypatch) -> ModuleType:
    """A fresh fake pynvml with two GPUs, installed as sys.modules["pynvml"]."""
    spec = importlib.util.spec_from_file_location("pynvml", FAKE_PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.GPUS[:] = [
        mod.FakeGpu(
            uuid=UUID0,
            name="NVIDIA H100 80GB HBM3",
            mem_total=81559 * MIB,
            mem_used=40000 * MIB,
            util=87,
            temp=61,
            power_mw=512_345,
            limit_mw=700_000,
            compute=[(os.getpid(), 39000 * MIB), (999_999_999, None)],
            graphics=[(os.getpid(), 100 * MIB)],
        ),
        mod.FakeGpu(
            uuid=UUID1,
            name="NVIDIA H100 80GB HBM3",
            mem_total=81559 * MIB,
            mem_used=4 * MIB,
            util=0,
            temp=33,
            power_mw=70_000,
            limit_mw=700_000,
            migs=["MIG-5c3e7f00-1111-2222-3333-444455556666"],
        ),
    ]
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    return mod


def test_real_pynvml_without_driver_reports_why():
    nv = gpu.Nvml()
    inv = nv.inventory()
    assert inv["available"] is False
    assert inv["reason"] == "no NVIDIA GPU: NVML Shared Library Not Found"
    assert inv["gpus"] == [] and inv["driver_version"] is None and inv["cuda_version"] is None
    sample = nv.sample()
    assert sample == {"available": False, "reason": inv["reason"], "gpus": []}
    assert nv.gpus_for_job({os.getpid()}, None) == []
    assert nv.gpus_for_job({os.getpid()}, "0") == []


def test_missing_pynvml_is_a_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    nv = gpu.Nvml()
    assert nv.available is False
    assert nv.reason.startswith("no NVIDIA GPU: pynvml not importable (ModuleNotFoundError")


def test_init_failure_is_tried_once_and_cached(fake):
    fake.INIT_ERROR = fake.NVML_ERROR_DRIVER_NOT_LOADED
    nv = gpu.default()
    assert nv.inventory()["reason"] == "no NVIDIA GPU: Driver Not Loaded"
    assert nv.sample()["reason"] == "no NVIDIA GPU: Driver Not Loaded"
    assert fake.CALLS.count("nvmlInit") == 1
    fake.INIT_ERROR = None
    gpu.reset()  # a driver loaded later is seen after a reset
    assert gpu.default().available is True


def test_no_devices_is_unavailable(fake):
    fake.GPUS.clear()
    inv = gpu.Nvml().inventory()
    assert inv["available"] is False
    assert inv["reason"] == "no NVIDIA GPU: NVML reports no devices"


def test_inventory_two_gpus(fake):
    inv = gpu.Nvml().inventory()
    assert inv == {
        "available": True,
        "reason": None,
        "driver_version": "550.54.15",
        "cuda_version": "12.4",
        "gpus": [
            {"index": 0, "uuid": UUID0, "name": "NVIDIA H100 80GB HBM3", "mem_total_mib": 81559},
            {"index": 1, "uuid": UUID1, "name": "NVIDIA H100 80GB HBM3", "mem_total_mib": 81559},
        ],
    }


def test_sample_values_units_and_processes(fake):
    s = gpu.Nvml().sample()
    assert s["available"] is True and s["reason"] is None
    g0, g1 = s["gpus"]
    assert (g0["index"], g0["uuid"], g0["util"], g0["temp_c"]) == (0, UUID0, 87, 61)
    assert (g0["mem_used_mib"], g0["mem_total_mib"]) == (40000, 81559)
    assert (g0["power_w"], g0["power_limit_w"]) == (512.3, 700.0)
    me = pwd.getpwuid(os.getuid()).pw_name
    # compute + graphics merged per pid; the larger memory figure wins; a pid not in /proc has no user.
    assert g0["processes"] == [
        {"pid": os.getpid(), "user": me, "mem_mib": 39000},
        {"pid": 999_999_999, "user": None, "mem_mib": None},
    ]
    assert (g1["util"], g1["mem_used_mib"], g1["power_w"], g1["processes"]) == (0, 4, 70.0, [])


def test_unsupported_field_is_none_and_the_rest_still_works(fake):
    fake.FAIL[("nvmlDeviceGetPowerUsage", 1)] = fake.NVML_ERROR_NOT_SUPPORTED
    fake.FAIL[("nvmlDeviceGetTemperature", None)] = fake.NVML_ERROR_NO_PERMISSION
    fake.FAIL[("nvmlDeviceGetGraphicsRunningProcesses", 0)] = fake.NVML_ERROR_NOT_SUPPORTED
    g0, g1 = gpu.Nvml().sample()["gpus"]
    assert g0["temp_c"] is None and g1["temp_c"] is None
    assert g0["power_w"] == 512.3 and g1["power_w"] is None
    assert g1["power_limit_w"] == 700.0 and g1["util"] == 0 and g1["mem_total_mib"] == 81559
    assert [p["pid"] for p in g0["processes"]] == [os.getpid(), 999_999_999]


def test_fake_raises_like_real_pynvml(fake):
    # The fake must keep the real binding's error shape for the test above to mean anything.
    with pytest.raises(fake.NVMLError_Uninitialized):
        fake.nvmlDeviceGetCount()
    err = fake.NVMLError(fake.NVML_ERROR_NOT_SUPPORTED)
    assert type(err) is fake.NVMLError_NotSupported and str(err) == "Not Supported"


def test_function_missing_from_binding_is_none(fake, monkeypatch):
    monkeypatch.delattr(fake, "nvmlDeviceGetEnforcedPowerLimit")
    g0 = gpu.Nvml().sample()["gpus"][0]
    assert g0["power_limit_w"] is None and g0["power_w"] == 512.3


@pytest.mark.parametrize(
    ("cvd", "expected"),
    [
        ("0", [UUID0]),
        ("1", [UUID1]),
        ("1,0", [UUID1, UUID0]),
        (UUID1, [UUID1]),
        ("GPU-9f8e", [UUID1]),  # a unique prefix, as CUDA accepts
        ("1a2b3c4d", [UUID0]),  # prefix without "GPU-"
        ("GPU-", []),  # ambiguous prefix ends the list
        ("0,7,1", [UUID0]),  # the first invalid entry ends the list
        ("-1", []),
        ("", []),
        (" 1 , 1 ", [UUID1]),
        ("MIG-5c3e7f00-1111-2222-3333-444455556666", [UUID1]),  # a MIG slice counts as its GPU
    ],
)
def test_gpus_for_job_from_cuda_visible_devices(fake, cvd, expected):
    # The pids are ignored when CUDA_VISIBLE_DEVICES is set.
    assert gpu.Nvml().gpus_for_job({os.getpid()}, cvd) == expected


def test_gpus_for_job_from_pids(fake):
    nv = gpu.Nvml()
    assert nv.gpus_for_job({os.getpid(), 12345}, None) == [UUID0]
    fake.GPUS[1].graphics.append((12345, 10 * MIB))
    assert nv.gpus_for_job({12345}, None) == [UUID1]
    assert nv.gpus_for_job({os.getpid(), 12345}, None) == [UUID0, UUID1]
    assert nv.gpus_for_job(set(), None) == []


def test_cuda_version_text():
    assert gpu.cuda_version_text(12040) == "12.4"
    assert gpu.cuda_version_text(11080) == "11.8"
    assert gpu.cuda_version_text(None) is None


def test_fake_on_pythonpath_for_subprocesses():
    # How serve-level tests put the fake in front of a child process: PYTHONPATH + $PYNVML_FAKE.
    spec = [{"uuid": UUID0, "name": "NVIDIA A10G", "mem_total": 23028 * MIB, "compute": [[4242, 1024 * MIB]]}]
    code = "import json; from remote_agent.probes import gpu; n = gpu.Nvml(); print(json.dumps([n.inventory(), n.sample()]))"
    env = {
        **os.environ,
        "PYNVML_FAKE": json.dumps(spec),
        "PYTHONPATH": os.pathsep.join([str(FAKE_PATH.parent), str(Path(__file__).resolve().parents[1])]),
    }
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    inv, sample = json.loads(out.stdout)
    assert inv["gpus"] == [{"index": 0, "uuid": UUID0, "name": "NVIDIA A10G", "mem_total_mib": 23028}]
    [proc] = sample["gpus"][0]["processes"]
    assert (proc["pid"], proc["mem_mib"]) == (4242, 1024)  # pid 4242 may or may not exist here
