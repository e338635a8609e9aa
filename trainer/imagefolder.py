"""The image-folder dataset: `--data DIR` with one sub-folder per class, JPEG/PNG files decoded with Pillow.

Classes are the sorted names of DIR's sub-folders; a class's images are the `.jpg`/`.jpeg`/`.png` files
(any case) anywhere below its folder, sorted; hidden files and folders are skipped. At start-up only the
listing and each file's header are read (in threads, in the main process): a folder without images or
a file Pillow cannot identify stops the run with a one-line error naming it. Pixels are decoded in the
DataLoader workers, and a file that fails there (truncated, damaged, deleted) is skipped: a
`{"event": "bad_image", "path": ...}` line goes to stdout (once per worker and file) and the next image
of the list takes its place, so the batch, the data position and the sample log stay as they were.

Samples are keyed by (epoch, index) like the synthetic set, so the seeded global permutation, resume at
any world size and the augmentation (a pure function of seed, epoch, index) work unchanged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor

import torch
from PIL import Image
from torch.utils.data import get_worker_info

from .data import Key, KeyedDataset, Sample, _gen, augment

EXTENSIONS = (".jpg", ".jpeg", ".png")
# ImageNet statistics: what torchvision's (and most published) weights expect.
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


def _fail(msg: str) -> SystemExit:
    return SystemExit("trainer: " + " ".join(msg.split()))  # one line, whatever the error text held


def list_images(root: str) -> tuple[list[str], list[tuple[str, int]]]:
    """(class names, [(path, label)]) in sorted order; exits with a one-line error if anything is missing."""
    if not os.path.isdir(root):
        raise _fail(f"--data {root}: not a directory")
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir() and not e.name.startswith("."))
    if not classes:
        raise _fail(f"--data {root}: no class sub-folders (expected one folder of images per class)")
    samples = []
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        found = []
        for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            found += [
                os.path.join(dirpath, f)
                for f in filenames
                if not f.startswith(".") and f.lower().endswith(EXTENSIONS)
            ]
        if not found:
            raise _fail(f"--data: no JPEG/PNG images in {folder}")
        samples += [(p, label) for p in sorted(found)]
    return classes, samples


def _header_error(path: str) -> str | None:
    try:
        with Image.open(path) as im:
            if im.size[0] < 1 or im.size[1] < 1:
                return "empty image"
    except Exception as e:  # noqa: BLE001 - whatever Pillow raises, the file is unusable
        return f"{type(e).__name__}: {e}"
    return None


def check_headers(paths: list[str], threads: int = 32) -> None:
    """Open every file's header (no pixel decoding); the first unreadable one stops the run."""
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for path, err in zip(paths, pool.map(_header_error, paths, chunksize=64), strict=True):
            if err is not None:
                raise _fail(f"corrupt image {path}: {err}")


def split(
    samples: list[tuple[str, int]], root: str, fraction: float
) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """Per class, the same share of files goes to validation, chosen by a hash of the relative path: the
    split does not depend on the seed, and a file keeps its side when others are added."""
    by_class: dict[int, list[tuple[str, int]]] = {}
    for s in samples:
        by_class.setdefault(s[1], []).append(s)
    val: set[str] = set()
    for items in by_class.values():
        n_val = min(len(items) - 1, int(fraction * len(items) + 0.5))
        ranked = sorted(
            items, key=lambda s: hashlib.blake2b(os.path.relpath(s[0], root).encode(), digest_size=8).digest()
        )
        val.update(p for p, _ in ranked[:n_val])
    return [s for s in samples if s[0] not in val], [s for s in samples if s[0] in val]


def to_tensor(im: Image.Image) -> torch.Tensor:
    w, h = im.size
    raw = torch.frombuffer(bytearray(im.tobytes()), dtype=torch.uint8).view(h, w, 3)
    return raw.permute(2, 0, 1).float().div_(255)


class ImageFolder(KeyedDataset):
    """Images of `samples` ([(path, label)]), resized (shorter side) and centre-cropped to `image_size`,
    normalised; with `augment`, the synthetic set's crop/flip/jitter on top (epoch -1: none)."""

    def __init__(self, samples: list[tuple[str, int]], image_size: int, seed: int, augment: bool = False):
        self.samples, self.image_size, self.seed, self.augment = samples, image_size, seed, augment
        self._bad: set[str] = set()  # per process: each worker holds its own copy

    def __len__(self) -> int:
        return len(self.samples)

    def load(self, path: str) -> torch.Tensor:
        s = self.image_size
        with Image.open(path) as im:
            im.draft("RGB", (s, s))  # JPEG: decode at a reduced scale that still covers s x s
            im = im.convert("RGB")  # decodes; a damaged file raises here
        w, h = im.size
        scale = s / min(w, h)
        size = (max(s, round(w * scale)), max(s, round(h * scale)))
        if size != (w, h):
            im = im.resize(size, Image.Resampling.BILINEAR)
        left, top = (size[0] - s) // 2, (size[1] - s) // 2
        im = im.crop((left, top, left + s, top + s))
        return (to_tensor(im) - MEAN) / STD

    def __getitem__(self, key: Key) -> Sample:
        epoch, index = key
        n = len(self.samples)
        for k in range(n):
            path, label = self.samples[(index + k) % n]
            if path in self._bad:
                continue
            try:
                img = self.load(path)
            except Exception as e:  # noqa: BLE001 - any decoding failure: skip the file, keep training
                self._bad.add(path)
                _report_bad(path, e, epoch, index)
                continue
            if self.augment and epoch >= 0:
                img = augment(img, _gen(self.seed, epoch, index, 1))
            return img.contiguous(), label, epoch, index
        raise RuntimeError(f"no image of the dataset decodes (last tried: {path})")


def _report_bad(path: str, err: Exception, epoch: int, index: int) -> None:
    """An event line on stdout, from whichever process decoded it (a worker, any rank): one os.write of a
    short line, so it never tears the main process's lines apart, and no Python buffer copied at fork."""
    line = {
        "event": "bad_image",
        "path": os.path.abspath(path),
        "error": " ".join(f"{type(err).__name__}: {err}".split())[:300],
        "epoch": epoch,
        "index": index,
        "rank": int(os.environ.get("RANK", "0")),
        "worker": info.id if (info := get_worker_info()) else None,  # None: the main process (--workers 0)
    }
    os.write(1, (json.dumps(line) + "\n").encode())


def build_imagefolder(args: argparse.Namespace) -> tuple[ImageFolder, ImageFolder, int]:
    """(train, val, number of classes) for `--data`."""
    classes, samples = list_images(args.data)
    if not args.skip_image_check:
        check_headers([p for p, _ in samples])
    train, val = split(samples, args.data, args.val_split)
    if args.val_every and not val:
        raise _fail(f"--val-every needs validation images: --val-split {args.val_split} leaves none")
    return (
        ImageFolder(train, args.image_size, args.seed, args.augment),
        ImageFolder(val, args.image_size, args.seed),
        len(classes),
    )
