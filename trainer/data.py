"""Datasets and the data position.

The position is a global sample counter: sample number `n` of the run is element `n % N` of
epoch `n // N`'s seeded permutation. A step consumes the next global batch of that counter, split
evenly over ranks and micro-batches, so a resume at any world size neither repeats nor skips a
sample of the epoch. Every sample (and its augmentation) is a pure function of (seed, epoch, index),
so results do not depend on which worker or rank produced it.
"""

from __future__ import annotations

import signal
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

from .stacks import register as register_stacks

Key = tuple[int, int]  # (epoch, sample index); epoch -1 means "no augmentation" (validation)
Sample = tuple[torch.Tensor, int, int, int]  # (image, label, epoch, index): one dataset item
Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]  # Samples collated by the DataLoader


def _gen(*parts: int) -> torch.Generator:
    # A cheap, well-mixed seed from integers, so neighbouring indices get unrelated streams.
    h = 0x9E3779B97F4A7C15
    for p in parts:
        h = ((h ^ (p & 0xFFFFFFFFFFFFFFFF)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        h ^= h >> 31
    return torch.Generator().manual_seed(h & 0x7FFFFFFFFFFFFFFF)


def augment(img: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Random resized crop (scale 0.5-1), horizontal flip and brightness/contrast jitter, in torch."""
    c, h, w = img.shape
    r: list[float] = torch.rand(6, generator=g).tolist()
    scale = 0.5 + 0.5 * r[0]
    ch, cw = max(1, int(h * scale**0.5)), max(1, int(w * scale**0.5))
    top, left = int(r[1] * (h - ch + 1)), int(r[2] * (w - cw + 1))
    crop = img[:, top : top + ch, left : left + cw]
    if (ch, cw) != (h, w):
        crop = F.interpolate(crop[None], size=(h, w), mode="bilinear", align_corners=False)[0]
    if r[3] < 0.5:
        crop = crop.flip(-1)
    brightness, contrast = 0.8 + 0.4 * r[4], 0.8 + 0.4 * r[5]
    mean = crop.mean()
    return (crop - mean) * contrast + mean * brightness


class KeyedDataset(Dataset[Sample], ABC):
    """A map-style dataset indexed by `Key`, of known length (the samplers need it)."""

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def __getitem__(self, key: Key) -> Sample: ...


class SyntheticImages(KeyedDataset):
    """Learnable, deterministic images: a smooth per-class pattern plus per-sample noise.

    `offset` keeps the validation samples apart from the training ones (same classes, new noise).
    """

    def __init__(
        self, size: int, image_size: int, num_classes: int, seed: int, offset: int = 0, augment: bool = False
    ) -> None:
        self.size, self.image_size, self.num_classes = size, image_size, num_classes
        self.seed, self.offset, self.augment = seed, offset, augment
        coarse = torch.randn(num_classes, 3, 4, 4, generator=_gen(seed, 7))
        self.templates = F.interpolate(
            coarse, size=(image_size, image_size), mode="bilinear", align_corners=False
        )

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, key: Key) -> Sample:
        epoch, index = key
        n = self.offset + index
        label = n % self.num_classes
        g = _gen(self.seed, n)
        img = self.templates[label] + 0.8 * torch.randn(self.templates.shape[1:], generator=g)
        if self.augment and epoch >= 0:
            img = augment(img, _gen(self.seed, epoch, n, 1))
        return img, label, epoch, index  # the key travels along, so a run can log what it consumed


@dataclass(frozen=True)
class Layout:
    """How one global batch is cut: per rank into `accum` micro-batches of `micro` samples."""

    global_batch: int
    world: int
    micro: int
    accum: int

    @staticmethod
    def make(global_batch: int, world: int, micro: int | None) -> Layout:
        if global_batch % world:
            raise ValueError(f"--batch-size {global_batch} is not divisible by the world size {world}")
        per_rank = global_batch // world
        micro = min(micro or per_rank, per_rank)
        while per_rank % micro:  # keep the global batch exact: the micro-batch must divide it
            micro -= 1
        return Layout(global_batch, world, micro, per_rank // micro)


class PositionSampler(Sampler[list[Key]]):
    """Infinite batch sampler: this rank's micro-batches, from global sample number `start` on."""

    def __init__(self, num_samples: int, seed: int, start: int, layout: Layout, rank: int) -> None:
        self.n, self.seed, self.start, self.layout, self.rank = num_samples, seed, start, layout, rank
        self._perm_epoch = -1
        self._perm: list[int] = []

    def key(self, counter: int) -> Key:
        epoch, i = divmod(counter, self.n)
        if epoch != self._perm_epoch:
            self._perm = torch.randperm(self.n, generator=_gen(self.seed, epoch, 2)).tolist()
            self._perm_epoch = epoch
        return epoch, self._perm[i]

    def __iter__(self) -> Iterator[list[Key]]:
        lay, counter = self.layout, self.start
        per_rank = lay.micro * lay.accum
        while True:
            base = counter + self.rank * per_rank
            for k in range(lay.accum):
                yield [self.key(base + k * lay.micro + j) for j in range(lay.micro)]
            counter += lay.global_batch


def _worker_init(_: int) -> None:
    # gpudeck's stop signal may hit the whole process group: workers ignore it and stay alive until
    # the main process has finished its step and checkpoint, then exit with it.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    register_stacks()  # its own stacks file (the fork inherited the main process's)


def make_loader(
    dataset: KeyedDataset, sampler: Sampler[list[Key]], workers: int, prefetch: int, pin: bool
) -> DataLoader[Sample]:
    return DataLoader(
        dataset,
        batch_sampler=sampler,
        num_workers=workers,
        pin_memory=pin,
        worker_init_fn=_worker_init,
        # DataLoader's defaults without workers (it refuses a prefetch factor then)
        persistent_workers=bool(workers),
        prefetch_factor=prefetch if workers else None,
    )


def start_iter(loader: DataLoader[Sample]) -> Iterator[Batch]:
    """Start the workers with SIGTERM/SIGINT blocked, so none can die of a signal before it ignores it."""
    sigs = {signal.SIGTERM, signal.SIGINT}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        return iter(loader)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)  # a signal that came meanwhile is delivered now


def shutdown_workers(batches: object) -> None:
    """Stop a loader iterator's worker processes now. Needed on every way out, not only the happy one:
    the workers ignore SIGTERM (see `_worker_init`), so an exception that leaves them to the
    interpreter's exit handlers (which SIGTERM daemonic children, then join them) hangs forever."""
    shutdown = getattr(batches, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()


def val_keys(size: int, rank: int, world: int, batch: int) -> list[list[Key]]:
    """This rank's share of the validation set, in batches (epoch -1: no augmentation)."""
    mine = list(range(rank, size, world))
    return [[(-1, i) for i in mine[s : s + batch]] for s in range(0, len(mine), batch)]


class ValSampler(Sampler[list[Key]]):
    """Finite batch sampler over this rank's share of the validation set: the same batches in the same
    order on every pass; over all ranks, every validation sample exactly once."""

    def __init__(self, size: int, rank: int, world: int, batch: int) -> None:
        self.batches = val_keys(size, rank, world, batch)

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[list[Key]]:
        return iter(self.batches)
