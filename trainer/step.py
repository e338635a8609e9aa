"""One optimizer step (micro-batches with gradient accumulation), validation, and the OOM test hook."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

from . import dist as tdist
from .build import DTYPES, Parts
from .data import (
    Batch,
    Key,
    KeyedDataset,
    Layout,
    Sample,
    ValSampler,
    make_loader,
    shutdown_workers,
    start_iter,
)


def autocast(parts: Parts, device: torch.device) -> contextlib.AbstractContextManager[None]:
    if parts.precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=DTYPES[parts.precision])


def train_step(
    model: nn.Module, parts: Parts, batches: Iterator[Batch], layout: Layout, d: tdist.Dist
) -> tuple[torch.Tensor, list[Key]]:
    """Forward/backward over this rank's micro-batches, then one optimizer step.

    Returns the step's mean loss as a device tensor (no host sync here) and the keys trained on.
    An out-of-memory error leaves the optimizer untouched, so the caller can retry the same step.
    """
    step_loss = torch.zeros((), device=d.device)
    keys: list[Key] = []
    for k in range(layout.accum):
        x, y, epochs, indices = next(batches)
        keys += zip(epochs.tolist(), indices.tolist(), strict=True)
        x = x.to(d.device, non_blocking=True, memory_format=parts.memory_format)
        y = y.to(d.device, non_blocking=True)
        # DDP all-reduces gradients only on the last micro-batch of the step.
        # Under DDP the model is DDP (or torch.compile's wrapper of it, which forwards no_sync), but
        # Module.__getattr__ is typed as returning a Tensor or a Module.
        accumulate = d.enabled and k < layout.accum - 1
        sync = model.no_sync() if accumulate else contextlib.nullcontext()  # type: ignore[operator]
        with sync:
            with autocast(parts, d.device):
                loss = F.cross_entropy(model(x), y)
            # torch leaves Tensor.backward unannotated (a call only strict mode reports: hence unused-ignore)
            parts.scaler.scale(loss / layout.accum).backward()  # type: ignore[no-untyped-call, unused-ignore]
        step_loss += loss.detach().float() / layout.accum
    parts.scaler.step(parts.optimizer)
    parts.scaler.update()
    parts.optimizer.zero_grad(set_to_none=True)
    parts.scheduler.step()
    return step_loss, keys


def release_after_oom(parts: Parts) -> None:
    """Drop the half-done step's gradients and give cached blocks back to the allocator."""
    parts.optimizer.zero_grad(set_to_none=True)
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def inject_oom_above(model: nn.Module, limit: int) -> None:
    """Test hook: a forward pass on more than `limit` samples fails as CUDA would, at allocation time."""

    def hook(_module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
        if inputs[0].shape[0] > limit:
            raise torch.OutOfMemoryError(f"injected: CUDA out of memory for a batch of {inputs[0].shape[0]}")

    model.register_forward_pre_hook(hook)


class ValLoader:
    """The validation set through a DataLoader built like the training one: images are decoded in the
    workers (persistent, so a pass does not respawn them), pinned on CUDA, this rank's share of the set
    in a fixed order. Built on first use and again only if the micro-batch changed (OOM backoff)."""

    def __init__(self, ds: KeyedDataset, d: tdist.Dist, workers: int, prefetch: int) -> None:
        self.ds, self.d, self.workers, self.prefetch = ds, d, workers, prefetch
        self.loader: DataLoader[Sample] | None = None
        self.batch = 0

    def passes(self, batch: int) -> Iterator[Batch]:
        if self.loader is None or batch != self.batch:
            self.close()
            sampler = ValSampler(len(self.ds), self.d.rank, self.d.world, batch)
            pin = self.d.device.type == "cuda"
            self.loader, self.batch = make_loader(self.ds, sampler, self.workers, self.prefetch, pin), batch
        return start_iter(self.loader)  # persistent workers: the same processes every pass

    def close(self) -> None:
        """Shut the workers down (before the process group goes, and on any exception)."""
        if self.loader is not None:
            shutdown_workers(getattr(self.loader, "_iterator", None))  # persistent workers live there
        self.loader = None


def validate(
    model: nn.Module, val: ValLoader, d: tdist.Dist, parts: Parts, batch: int
) -> tuple[float, float]:
    """Mean loss and accuracy over the whole validation set: each rank its share, summed over ranks."""
    model.eval()
    totals = torch.zeros(3, dtype=torch.float64, device=d.device)  # loss sum, correct, count
    with torch.no_grad(), autocast(parts, d.device):
        for x, y, _epochs, _indices in val.passes(batch):
            x = x.to(d.device, non_blocking=True, memory_format=parts.memory_format)
            y = y.to(d.device, non_blocking=True)
            logits = model(x).float()
            right = (logits.argmax(1) == y).sum()
            totals += torch.stack(
                [F.cross_entropy(logits, y, reduction="sum"), right, torch.tensor(len(y))]
            ).to(totals)
    model.train()
    loss, correct, count = d.sum_(totals).tolist()
    return loss / max(count, 1), correct / max(count, 1)
