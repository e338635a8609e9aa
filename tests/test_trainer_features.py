"""Trainer speed and robustness features: precision, accumulation, validation, models, OOM backoff."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from test_trainer import Trainer, events, metrics, run_to_end  # noqa: E402

from trainer.data import SyntheticImages  # noqa: E402
from trainer.models import build_model, plain_state_dict  # noqa: E402


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_bf16_channels_last_with_accumulation_learns_and_validates(tmp_path: Path) -> None:
    lines = run_to_end(
        "--steps", "40", "--workers", "0", "--precision", "bf16", "--channels-last", "--micro-batch", "8",
        "--val-every", "20", "--checkpoint-dir", str(tmp_path), "--checkpoint-every", "10", "--keep", "2",
    )  # fmt: skip
    losses = list(metrics(lines).values())
    assert len(losses) == 40 and sum(losses[-5:]) < 0.6 * sum(losses[:5])
    val = [o for o in lines if "val_loss" in o]
    assert [v["step"] for v in val] == [20, 40]
    assert val[1]["val_loss"] < val[0]["val_loss"] and val[1]["val_acc"] > 0.5  # chance is 0.1
    assert [(e["step"], e["reason"]) for e in events(lines, "checkpoint_saved")] == [
        (10, "periodic"), (20, "periodic"), (30, "periodic"), (40, "periodic"),
    ]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt-00000030.pt", "ckpt-00000040.pt"]  # --keep 2
    state = torch.load(tmp_path / "ckpt-00000040.pt", weights_only=True)
    assert state["config"]["precision"] == "bf16"
    assert (state["global_batch"], state["micro_batch"], state["samples_seen"]) == (32, 8, 40 * 32)


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_oom_halves_the_micro_batch_keeps_the_global_batch_and_gives_up_at_1(tmp_path: Path) -> None:
    log = tmp_path / "samples"
    lines = run_to_end(
        "--steps", "6", "--workers", "2", "--inject-oom-above", "8", "--checkpoint-dir", str(tmp_path),
        "--sample-log", str(log),
    )  # fmt: skip
    backoffs = events(lines, "oom_backoff")
    assert [(e["step"], e["micro_batch"], e["accumulation"]) for e in backoffs] == [(1, 16, 2), (1, 8, 4)]
    assert sorted(metrics(lines)) == list(range(1, 7))
    rows = [tuple(map(int, line.split())) for line in Path(f"{log}.rank0").read_text().splitlines()]
    assert Counter(s for s, _, _ in rows) == {s: 32 for s in range(1, 7)}  # nothing trained twice
    assert len({(e, i) for _, e, i in rows}) == 6 * 32
    assert json.loads((tmp_path / "oom_backoff.json").read_text()) == {"micro_batch": 8}
    assert torch.load(tmp_path / "ckpt-00000006.pt", weights_only=True)["micro_batch"] == 8

    t = Trainer(
        "--steps", "2", "--workers", "0", "--inject-oom-above", "0", "--checkpoint-dir", str(tmp_path / "b")
    )
    try:
        rc, lines = t.finish(60)
        err = t.stderr()
    finally:
        t.kill()
    assert rc == 1 and "out of memory even at micro-batch 1" in err
    assert events(lines, "oom_backoff")[-1]["micro_batch"] == 1 and not metrics(lines)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "params"), [("resnet18", 11_689_512), ("resnet50", 25_557_032)])
def test_builtin_resnets_match_torchvision_shapes(name: str, params: int) -> None:
    model = build_model(name, 1000)
    # torchvision's published parameter counts, and its parameter names, so its weights load.
    assert sum(p.numel() for p in model.parameters()) == params
    keys = plain_state_dict(model)
    assert {"conv1.weight", "layer1.0.conv1.weight", "layer4.1.bn2.running_mean", "fc.bias"} <= keys.keys()
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 1000)


@pytest.mark.slow
def test_activation_checkpointing_gives_the_same_gradients() -> None:
    x, y = torch.randn(4, 3, 16, 16), torch.tensor([0, 1, 2, 3])
    grads = []
    for ac in (False, True):
        torch.manual_seed(0)
        model = build_model("resnet18", 4, activation_checkpointing=ac)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        grads.append({k.replace(".inner.", "."): p.grad for k, p in model.named_parameters()})
    assert grads[0].keys() == grads[1].keys()
    for name in ("conv1.weight", "layer3.0.conv2.weight", "fc.weight"):
        torch.testing.assert_close(grads[0][name], grads[1][name])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tiny", "resnet18"])
def test_activation_checkpointing_updates_batchnorm_statistics_once_per_step(name: str) -> None:
    """The recomputation in backward must not update the running statistics a second time."""
    torch.manual_seed(1)
    x, y = torch.randn(4, 3, 16, 16), torch.tensor([0, 1, 2, 3])
    states = []
    for ac in (False, True):
        torch.manual_seed(0)
        model = build_model(name, 4, activation_checkpointing=ac)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        states.append(plain_state_dict(model))
    assert states[0].keys() == states[1].keys()
    stats = [k for k in states[0] if k.endswith(("running_mean", "running_var", "num_batches_tracked"))]
    assert len(stats) == (3 * 3 if name == "tiny" else 20 * 3)
    counts = {int(states[1][k]) for k in stats if k.endswith("num_batches_tracked")}
    assert counts == {1}  # one update per forward, none in the recomputation
    unequal = [k for k in stats if not torch.equal(states[0][k], states[1][k])]
    assert not unequal, unequal  # the same kernels on the same inputs: bit for bit
    for k in ("fc.weight", "layer2.1.conv2.weight" if name == "resnet18" else "features.2.0.weight"):
        torch.testing.assert_close(states[0][k], states[1][k])  # and the step itself is the same


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_pretrained_weights_start_from_a_trained_model(tmp_path: Path) -> None:
    run_to_end("--steps", "40", "--workers", "0", "--checkpoint-dir", str(tmp_path / "a"))
    fresh = metrics(run_to_end("--steps", "1", "--workers", "0", "--checkpoint-dir", str(tmp_path / "b")))
    warm = metrics(
        run_to_end(
            "--steps",
            "1",
            "--workers",
            "0",
            "--checkpoint-dir",
            str(tmp_path / "c"),
            "--pretrained",
            str(tmp_path / "a" / "ckpt-00000040.pt"),
        )  # fmt: skip
    )
    assert warm[1] < 0.5 * fresh[1], (warm, fresh)


def test_samples_and_augmentation_are_pure_functions_of_seed_epoch_index() -> None:
    ds = SyntheticImages(64, 32, 10, seed=1, augment=True)
    a, label, epoch, index = ds[(0, 5)]
    assert (label, epoch, index) == (5, 0, 5)
    assert torch.equal(a, ds[(0, 5)][0])  # same key, same pixels: any worker or rank may produce it
    assert not torch.equal(a, ds[(1, 5)][0])  # a new epoch, a new augmentation
    plain = SyntheticImages(64, 32, 10, seed=1)
    assert torch.equal(plain[(0, 5)][0], plain[(3, 5)][0]) and not torch.equal(plain[(0, 5)][0], a)
    assert not torch.equal(plain[(0, 5)][0], SyntheticImages(64, 32, 10, seed=2)[(0, 5)][0])


def test_fp16_on_a_cpu_is_refused_with_the_reason() -> None:
    """Issue 32, item 7: `--precision fp16` on a CPU ran silently ~35× slower than fp32."""
    from trainer.build import resolve_precision

    with pytest.raises(SystemExit, match=r"--precision fp16 on a CPU: .*use fp32, bf16 or auto"):
        resolve_precision("fp16", torch.device("cpu"))
    assert resolve_precision("auto", torch.device("cpu")) == "fp32"
    assert resolve_precision("bf16", torch.device("cpu")) == "bf16"  # CPUs do bf16 (AMX, AVX512-BF16)
