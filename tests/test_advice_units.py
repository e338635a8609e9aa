"""The advice modules on their own (remote_agent/advice/): the reference trainer's flags they name
are real flags, NCCL lines collected from public issues are recognised (and NCCL's INFO chatter is
not), a starving loader needs both a low GPU and a saturated CPU, the GPUs' health reads the fake
NVML's XID events and ECC counters, and a multi-node job's advice names the node that said it first."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from remote_agent.advice import loader, nccl, oom
from remote_agent.advice.gpuhealth import HealthJudge
from remote_agent.advice.watch import AdviceWatch
from remote_agent.probes import gpu, jobgpus
from remote_agent.probes.gpuhealth import HealthProbe, flag
from remote_agent.storage.journal import JournalWriter, read_all
from remote_agent.storage.layout import JobFiles
from remote_agent.supervision.supervisor import Supervisor
from trainer.args import build_parser
from tui.actions.find import merged_advice

DATA = Path(__file__).parent / "data" / "nccl"
FAKE_PATH = Path(__file__).parent / "fakes" / "nvml" / "pynvml.py"
UUID = "GPU-aaaaaaaa-0000-0000-0000-000000000000"
TRAINER = ["python", "-m", "trainer", "--batch-size", "64", "--micro-batch", "16"]


def _flags(remedy: str) -> list[str]:
    """The `--flag value` words of a remedy, as a command line."""
    words = remedy.replace("(", " ").replace(")", " ").replace(",", " ").split()
    out: list[str] = []
    for i, w in enumerate(words):
        if w.startswith("--"):
            out.append(w)
            if i + 1 < len(words) and words[i + 1].isdigit() or i + 1 < len(words) and words[i + 1] == "bf16":
                out.append(words[i + 1])
    return out


def test_the_oom_remedies_for_the_reference_trainer_are_its_own_flags_in_the_seeds_order() -> None:
    remedies = oom.remedies(TRAINER, oom.batch_size(TRAINER))
    assert "--micro-batch 8" in remedies[0] and "--batch-size 64" in remedies[0]  # halved, effective kept
    assert "--precision bf16" in remedies[1]
    assert "--activation-checkpointing" in remedies[2]
    assert "FSDP" in remedies[3] and "ZeRO" in remedies[3]
    flags = [f for r in remedies for f in _flags(r)]
    assert build_parser().parse_args(flags)  # every flag named is one the trainer takes
    assert oom.batch_size(["python", "-m", "trainer"]) == 32  # its default
    assert oom.batch_size(["python", "train.py", "--batch_size=128"]) == 128
    assert oom.batch_size(["python", "train.py"]) is None


def test_the_loader_remedies_for_the_reference_trainer_are_its_own_flags() -> None:
    remedies = loader.remedies(TRAINER, cores=16, gpus=2)
    assert "16-32" in remedies[0] and "--workers 16" in remedies[0]  # 2-4 x 8 cores per GPU
    flags = [f for r in remedies for f in _flags(r)]
    assert "--prefetch" in flags
    assert build_parser().parse_args(flags)


def test_the_oom_line_is_the_message_not_the_tracebacks_source_line() -> None:
    traceback = [
        "Traceback (most recent call last):",
        '  File "/w/train.py", line 20, in <module>',
        "    raise torch.OutOfMemoryError(",
        "[rank0]:     raise torch.OutOfMemoryError(",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
        "capacity of 23.68 GiB of which 3.56 MiB is free.",
    ]
    [said] = AdviceWatch({"argv": ["python", "train.py", "--batch-size", "8"]}).lines(traceback, [])
    evidence = said[1]["data"]["evidence"]
    assert evidence["line"] == traceback[-1] and evidence["tried_to_allocate"] == "20.00 MiB"
    assert evidence["capacity"] == "23.68 GiB" and evidence["batch_size"] == 8


@pytest.mark.parametrize("name", ["watchdog_timeout.log", "net_ib_warn.log", "socket_warn.log"])
def test_nccl_lines_from_public_issues_give_the_nccl_advice_once(name: str) -> None:
    lines = [line for line in (DATA / name).read_text().splitlines() if not line.startswith("#")]
    watch = AdviceWatch({"argv": ["python", "train.py"], "multinode": {"rank": 1, "hints": []}})
    said = watch.lines(lines, [])
    assert [e[1]["data"]["kind"] for e in said] == ["nccl"]
    advice = said[0][1]["data"]
    assert advice["evidence"]["node"] == "1" and advice["evidence"]["line"] == lines[0].strip()
    assert [r.split("=")[0] for r in advice["remedies"] if r.startswith("NCCL_")] == [
        "NCCL_DEBUG",
        "NCCL_SOCKET_IFNAME",
        "NCCL_IB_DISABLE",
    ]
    assert any("under 2 ms" in r for r in advice["remedies"])
    assert watch.lines(lines, []) == []  # once per job


def test_nccl_info_lines_and_what_the_job_already_sets_are_not_advised() -> None:
    info = [line for line in (DATA / "net_ib_warn.log").read_text().splitlines() if "NCCL INFO" in line]
    info.append("node0:1:1 [0] NCCL WARN NET/Plugin: No plugin found (libnccl-net.so)")
    assert AdviceWatch({"argv": ["x"]}).lines(info, []) == []
    spec = {
        "env": {"NCCL_DEBUG": "INFO", "NCCL_IB_DISABLE": "1"},
        "multinode": {"rank": 0, "hints": ["NCCL_SOCKET_IFNAME=ens5 carries 10.0.0.1 (every node)"],
                      "round_trips": ["node 1: 3.10 ms"]},
    }  # fmt: skip
    advice = nccl.advice("x NCCL WARN y", spec)
    [ifname] = [r for r in advice["remedies"] if r.startswith("NCCL_")]  # the others are set already
    assert ifname.startswith("NCCL_SOCKET_IFNAME=ens5")
    assert "node 1: 3.10 ms" in advice["remedies"][0]


def test_a_loader_is_starving_only_when_the_gpu_is_low_and_the_cpu_saturated() -> None:
    judge = loader.LoaderJudge(TRAINER)
    said = [judge.sample([10], (1.0, 1.0), cores=4, steps=5) for _ in range(loader.WINDOW)]
    assert said[:-1] == [None] * (loader.WINDOW - 1) and said[-1] is not None
    assert said[-1]["kind"] == "loader" and said[-1]["evidence"]["gpu_util_mean_pct"] == 10
    busy_gpu, idle_cpu, no_steps = (loader.LoaderJudge(TRAINER) for _ in range(3))
    for _ in range(2 * loader.WINDOW):
        assert busy_gpu.sample([95], (1.0, 1.0), 4, 5) is None
        assert idle_cpu.sample([10], (0.2, 0.1), 4, 5) is None
        assert no_steps.sample([10], (1.0, 1.0), 4, 1) is None  # start-up: imports, compiles


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[ModuleType, Path]:
    spec = importlib.util.spec_from_file_location("pynvml", FAKE_PATH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.delenv("PYNVML_FAKE", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", mod)  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    mod.GPUS[:] = [mod.FakeGpu(uuid=UUID), mod.FakeGpu(uuid="GPU-bbbb")]
    health = tmp_path / "health.json"
    health.write_text(
        json.dumps({UUID: {"xid": [13], "ecc": {"volatile": {"corrected": 1, "uncorrected": 0}}}})
    )
    monkeypatch.setenv("PYNVML_FAKE_HEALTH", str(health))
    gpu.reset()
    yield mod, health
    gpu.reset()


def test_xid_events_and_new_ecc_errors_flag_the_gpu(fake: tuple[ModuleType, Path]) -> None:
    _, health = fake
    probe, judge = HealthProbe(gpu.Nvml()), HealthJudge()
    first = probe.look()
    assert first is not None and first[UUID]["xid"] == []  # XID 13 came before the event set
    assert first[UUID]["ecc"]["volatile"] == {"corrected": 1, "uncorrected": 0}
    assert first["GPU-bbbb"]["ecc"] == {}  # no ECC on it: nothing, not an error
    assert judge.look(first, [UUID, "GPU-bbbb"]) is None  # the job's baseline
    health.write_text(
        json.dumps({UUID: {"xid": [13, 79], "ecc": {"volatile": {"corrected": 1, "uncorrected": 2}}}})
    )
    later = probe.look()
    assert later is not None and later[UUID]["xid"] == [79]
    advice = judge.look(later, [UUID, "GPU-bbbb"])
    assert advice is not None and advice["kind"] == "gpu_health"
    assert advice["why"] == "GPU 0: XID 79 (GPU has fallen off the bus); 2 uncorrected ECC errors"
    assert judge.look(probe.look() or {}, [UUID]) is None  # said once per GPU
    assert (
        flag(later[UUID])
        == "XID 79 (GPU has fallen off the bus); 2 uncorrected ECC errors; 1 corrected ECC error"
    )


class _ErrorAfterFirstSample(JournalWriter):
    """A GPU error raised just as the job's first sample is journaled: what a reader (a test, the
    client) sees as "the job is running on its GPU" comes before the error, so it is the job's."""

    def __init__(self, path: Path, health: Path) -> None:
        super().__init__(path)
        self.health = health

    def append(self, kind: str, **fields: Any) -> dict[str, Any] | None:
        written = super().append(kind, **fields)
        if kind == "gpu" and self.health.read_text().count("79") == 0:
            self.health.write_text(
                json.dumps({UUID: {"xid": [13, 79], "ecc": {"volatile": {"corrected": 1, "uncorrected": 2}}}})
            )
        return written


def test_errors_raised_once_the_first_sample_is_journaled_are_the_jobs(
    fake: tuple[ModuleType, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The baseline is read before the first sample is journaled (CI once saw the ECC errors taken
    into the baseline, the advice saying only the XID)."""
    _, health = fake
    monkeypatch.setattr(jobgpus, "_nvml", None)
    files = JobFiles(tmp_path)
    spec = {
        "id": "j",
        "name": "n",
        "argv": ["true"],
        "workdir": str(tmp_path),
        "env": {"CUDA_VISIBLE_DEVICES": "0"},
    }
    sup = Supervisor(files, spec)
    sup.journal = _ErrorAfterFirstSample(files.journal, health)
    sup._sample_gpus()  # the first look: the sample, and the error right after it
    sup._sample_gpus()
    said = [r["data"] for r in read_all(files.journal) if r.get("event") == "advice"]
    assert [a["why"] for a in said] == [
        "GPU 0: XID 79 (GPU has fallen off the bus); 2 uncorrected ECC errors"
    ]


def test_a_multi_node_jobs_advice_names_the_node_that_said_it_first() -> None:
    nccl_at = lambda t: {"kind": "nccl", "why": "w", "evidence": {}, "remedies": [], "t": t}  # noqa: E731
    nodes = [
        {"node": "0", "host": "a", "advice": [nccl_at(20.0)]},
        {"node": "1", "host": "b", "advice": [nccl_at(10.0)]},
        {"node": "2", "host": "c", "advice": []},
    ]
    [advice] = merged_advice(nodes)
    assert (advice["node"], advice["host"], sorted(advice["nodes"])) == ("1", "b", ["0", "1"])


def test_recorded_output_of_healthy_runs_gives_no_advice() -> None:
    """Every healthy framework output the parser's corpus holds (tests/data/metrics: Lightning,
    Keras, transformers, tqdm, Rich bars, tables…) passes without a single advice."""
    corpus = Path(__file__).parent / "data" / "metrics"
    seen = 0
    for path in sorted(corpus.glob("*.jsonl")):
        for raw in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(raw)
            lines = list(record.get("lines") or [])
            lines += str(record.get("output") or "").splitlines()
            lines += [str(x) for x in (record.get("context") or [])] + [str(record.get("line") or "")]
            watch = AdviceWatch({"argv": ["python", "train.py", "--batch-size", "32"]})
            assert watch.lines(lines, []) == [], (path.name, record.get("source"))
            seen += len(lines)
    assert seen > 150
