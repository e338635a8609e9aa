"""The image-folder dataset (`--data DIR`), through `python -m trainer` on real PNG/JPEG files."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")

from test_trainer import Trainer, events, metrics, run_to_end  # noqa: E402

from trainer import dist as tdist  # noqa: E402
from trainer.args import parse_args  # noqa: E402
from trainer.build import build_parts  # noqa: E402
from trainer.data import ValSampler  # noqa: E402
from trainer.imagefolder import ImageFolder, list_images, split  # noqa: E402
from trainer.step import ValLoader, validate  # noqa: E402

CLASSES = ("circles", "stripes", "tiles")  # sorted already: labels 0, 1, 2


def pattern(label: int, rnd: random.Random) -> Image.Image:
    """A 40x48 image: a class-specific colour and pattern, with per-image shift and noise."""
    w, h, shift = 40, 48, rnd.randrange(8)
    base = [(200, 40, 40), (40, 180, 40), (40, 60, 200)][label]
    px = []
    for y in range(h):
        for x in range(w):
            on = [
                ((x - 20) ** 2 + (y - 24) ** 2) // 60 % 2,  # rings
                (x + shift) // 4 % 2,  # vertical stripes
                ((x + shift) // 6 + (y + shift) // 6) % 2,  # checkerboard
            ][label]
            k = 1.0 if on else 0.4
            px.append(tuple(max(0, min(255, int(c * k) + rnd.randrange(-30, 31))) for c in base))
    im = Image.new("RGB", (w, h))
    im.putdata(px)
    return im


def make_folder(root: Path, per_class: int = 12, seed: int = 0) -> list[Path]:
    """3 classes x `per_class` images, alternately PNG and JPEG (mixed-case extensions), plus junk
    that must be ignored: a hidden file, a text file, a hidden folder."""
    rnd = random.Random(seed)
    paths = []
    for label, name in enumerate(CLASSES):
        d = root / name
        d.mkdir(parents=True)
        for i in range(per_class):
            im = pattern(label, rnd)
            if i % 2:
                p = d / f"img{i:02d}.{'JPG' if i % 4 == 1 else 'jpeg'}"
                im.save(p, "JPEG", quality=90)
            else:
                p = d / f"img{i:02d}.png"
                im.save(p, "PNG")
            paths.append(p)
        (d / ".hidden.png").write_bytes(b"not an image, and hidden")
        (d / "notes.txt").write_text("not an image")
    (root / ".cache").mkdir()
    (root / "README.txt").write_text("a file at the top is not a class")
    return paths


def common(data: Path, ck: Path, *more: str) -> list[str]:
    return ["--data", str(data), "--model", "tiny", "--checkpoint-dir", str(ck), "--image-size", "32", *more]


def test_listing_classes_extensions_hidden_and_split(tmp_path: Path) -> None:
    paths = make_folder(tmp_path / "d")
    classes, samples = list_images(str(tmp_path / "d"))
    assert classes == list(CLASSES)
    assert [p for p, _ in samples] == sorted(map(str, paths))  # hidden/other files left out
    assert Counter(label for _, label in samples) == {0: 12, 1: 12, 2: 12}
    train, val = split(samples, str(tmp_path / "d"), 0.25)
    assert Counter(label for _, label in val) == {0: 3, 1: 3, 2: 3}  # stratified
    assert sorted(train + val) == sorted(samples) and not set(train) & set(val)
    assert split(samples, str(tmp_path / "d"), 0.25) == (train, val)  # deterministic

    ds = ImageFolder(train, 32, seed=1, augment=True)
    x, label, epoch, index = ds[(0, 5)]
    assert x.shape == (3, 32, 32) and x.dtype == torch.float32 and (label, epoch, index) == (0, 0, 5)
    assert torch.equal(x, ds[(0, 5)][0]) and not torch.equal(x, ds[(1, 5)][0])  # pure in (epoch, index)
    plain = ImageFolder(train, 32, seed=1)
    assert torch.equal(plain[(0, 5)][0], plain[(-1, 5)][0])


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_loss_falls_class_count_from_folders_and_validation(tmp_path: Path) -> None:
    data = tmp_path / "d"
    make_folder(data)
    lines = run_to_end(
        *common(data, tmp_path / "ck", "--steps", "40", "--batch-size", "16", "--workers", "2"),
        "--val-split", "0.25", "--val-every", "20", "--augment", "--lr", "0.05", "--seed", "1",
    )  # fmt: skip
    losses = list(metrics(lines).values())
    assert len(losses) == 40
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < 0.5 * first, (first, last)
    # 27 training images, batch 16: 40 steps are 640 samples, epoch 23 at the end.
    assert [o["epoch"] for o in lines if "loss" in o][-1] == (40 * 16 - 1) // 27
    val = [o for o in lines if "val_loss" in o]
    assert [v["step"] for v in val] == [20, 40] and val[1]["val_acc"] >= 2 / 3  # chance is 1/3
    state = torch.load(tmp_path / "ck" / "ckpt-00000040.pt", weights_only=True)
    assert state["config"]["num_classes"] == 3 and state["model"]["fc.weight"].shape[0] == 3
    assert not events(lines, "bad_image")


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_every_sample_once_per_epoch_with_workers(tmp_path: Path) -> None:
    data, log = tmp_path / "d", tmp_path / "samples"
    make_folder(data, per_class=8)  # 24 images, --val-split 0: all train; batch 8 = 3 steps per epoch
    run_to_end(
        *common(data, tmp_path / "ck", "--steps", "9", "--batch-size", "8", "--workers", "2"),
        "--val-split", "0", "--micro-batch", "4", "--sample-log", str(log),
    )  # fmt: skip
    rows = [tuple(map(int, line.split())) for line in Path(f"{log}.rank0").read_text().splitlines()]
    assert Counter(s for s, _, _ in rows) == {s: 8 for s in range(1, 10)}
    by_epoch: dict[int, Counter] = {}
    for _, epoch, index in rows:
        by_epoch.setdefault(epoch, Counter())[index] += 1
    assert by_epoch == {e: Counter(range(24)) for e in range(3)}  # no repeat, no skip
    orders = [[i for _, e, i in rows if e == epoch] for epoch in range(3)]
    assert orders[0] != orders[1]  # a new permutation each epoch


class WorkerOnlyFolder(ImageFolder):
    """Refuses to decode in the main process: validation must go through the DataLoader's workers."""

    def __getitem__(self, key):  # noqa: ANN001, ANN204
        if torch.utils.data.get_worker_info() is None:
            raise AssertionError("decoded in the main process")
        return super().__getitem__(key)


def test_val_sampler_covers_every_sample_once_over_ranks_in_a_fixed_order() -> None:
    for size, world, batch in [(9, 1, 4), (10, 3, 2), (2, 4, 3)]:
        shares = [list(ValSampler(size, r, world, batch)) for r in range(world)]
        keys = [k for share in shares for b in share for k in b]
        assert sorted(keys) == [(-1, i) for i in range(size)]  # each once, no augmentation
        assert all(len(b) <= batch for share in shares for b in share)
        assert shares == [list(ValSampler(size, r, world, batch)) for r in range(world)]


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_validation_decodes_in_persistent_workers_and_matches_the_direct_result(tmp_path: Path) -> None:
    data = tmp_path / "d"
    make_folder(data, per_class=4)
    args = parse_args(common(data, tmp_path / "ck", "--steps", "1", "--workers", "2", "--val-split", "0.5"))
    _, val_samples = split(list_images(str(data))[1], str(data), 0.5)
    parts = build_parts(args, 3, torch.device("cpu"))
    d = tdist.Dist()
    ds = WorkerOnlyFolder(val_samples, 32, seed=0)
    val = ValLoader(ds, d, workers=2, prefetch=2)
    try:
        first = validate(parts.model, val, d, parts, batch=4)
        pids = [w.pid for w in val.loader._iterator._workers]
        second = validate(parts.model, val, d, parts, batch=4)
        assert [w.pid for w in val.loader._iterator._workers] == pids  # not respawned
    finally:
        val.close()
    assert first == second and parts.model.training
    # The old way, in the main process: the same loss and accuracy over all 6 images.
    plain = ImageFolder(val_samples, 32, seed=0)
    x = torch.stack([plain[(-1, i)][0] for i in range(len(plain))])
    y = torch.tensor([label for _, label in val_samples])
    parts.model.eval()
    with torch.no_grad():
        logits = parts.model(x)
    want_loss = torch.nn.functional.cross_entropy(logits, y).item()
    want_acc = (logits.argmax(1) == y).float().mean().item()
    assert len(val_samples) == 6
    assert first[0] == pytest.approx(want_loss, rel=1e-5) and first[1] == pytest.approx(want_acc)


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_damaged_image_mid_run_is_reported_and_skipped(tmp_path: Path) -> None:
    data = tmp_path / "d"
    paths = make_folder(data, per_class=6)
    bad = paths[2]  # a PNG: the header is intact, the pixel data is cut off
    assert bad.suffix == ".png"
    bad.write_bytes(bad.read_bytes()[:200])
    lines = run_to_end(
        *common(data, tmp_path / "ck", "--steps", "12", "--batch-size", "9", "--workers", "2"),
        "--val-split", "0",
    )  # fmt: skip
    reported = events(lines, "bad_image")
    assert reported and {e["path"] for e in reported} == {str(bad)}
    assert all(e["error"] and e["worker"] in (0, 1) for e in reported)  # decoded in a DataLoader worker
    assert sorted(metrics(lines)) == list(range(1, 13))  # training went on
    assert events(lines, "done")[0]["step"] == 12


@pytest.mark.slow
@pytest.mark.timeout(30)
@pytest.mark.parametrize("case", ["empty-root", "empty-class", "corrupt", "missing"])
def test_unusable_folders_are_one_line_errors(tmp_path: Path, case: str) -> None:
    data = tmp_path / "d"
    if case == "empty-root":
        data.mkdir()
        want = f"--data {data}: no class sub-folders"
    elif case == "empty-class":
        make_folder(data, per_class=2)
        (data / "zebra").mkdir()
        (data / "zebra" / "notes.txt").write_text("no images here")
        want = f"no JPEG/PNG images in {data / 'zebra'}"
    elif case == "corrupt":
        paths = make_folder(data, per_class=2)
        paths[3].write_bytes(b"\xff\xd8 this is not a JPEG at all")
        want = f"corrupt image {paths[3]}:"
    else:
        want = f"--data {data}: not a directory"
    t = Trainer(*common(data, tmp_path / "ck", "--steps", "2", "--workers", "0"))
    try:
        rc, lines = t.finish(30)
        err = t.stderr()
    finally:
        t.kill()
    assert rc != 0 and not metrics(lines)
    last = err.strip().splitlines()
    assert len(last) == 1 and last[0].startswith("trainer: ") and want in last[0], err


@pytest.mark.slow
def test_data_and_synthetic_exclude_each_other(tmp_path: Path) -> None:
    t = Trainer("--data", str(tmp_path), "--synthetic", "--steps", "1")
    try:
        rc, _ = t.finish(30)
        assert rc == 2 and "not allowed with argument" in t.stderr()
    finally:
        t.kill()
