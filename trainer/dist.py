"""torch.distributed set-up under torchrun, and the few collective decisions the loop needs.

Control decisions (stop now? checkpoint now? which checkpoint?) go over a gloo group on CPU
tensors, so they never force a GPU stream sync even when training uses NCCL.
"""

from __future__ import annotations

import datetime
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist


@dataclass
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    control: Any = None  # gloo process group for CPU-side agreement

    @property
    def enabled(self) -> bool:
        return self.world > 1

    def any(self, *flags: bool) -> list[bool]:
        """Per flag: did any rank raise it?"""
        if not self.enabled:
            return list(flags)
        t = torch.tensor([int(f) for f in flags], dtype=torch.int32)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.control)
        return [bool(v) for v in t.tolist()]

    def max_int(self, value: int) -> int:
        if not self.enabled:
            return value
        t = torch.tensor([value], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.control)
        return int(t.item())

    def min_int(self, value: int) -> int:
        return -self.max_int(-value)

    def sum_(self, t: torch.Tensor) -> torch.Tensor:
        """In-place sum over ranks of a (device) tensor, on the training backend."""
        if self.enabled:
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t

    def broadcast_object(self, obj: Any, src: int) -> Any:
        if not self.enabled:
            return obj
        box = [obj if self.rank == src else None]
        dist.broadcast_object_list(box, src=src, group=self.control)
        return box[0]

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier(group=self.control)

    def close(self) -> None:
        if self.enabled and dist.is_initialized():
            dist.destroy_process_group()

    def exit(self, code: int) -> None:
        """End a distributed process without interpreter teardown. With gloo, a rank that outlives
        rank 0 (host of the TCPStore) sometimes aborts in static destructors after everything is
        done ("terminate called without an active exception", seen here ~1 run in 10 on torch 2.13),
        turning a clean exit 0 into SIGABRT. Callers have flushed and closed what matters."""
        self.close()
        if self.enabled:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)


REGROUP_EXIT = 75  # "try again": torchrun's agent restarts this node's workers at the new world size


def elastic() -> bool:
    """Under torchrun's elastic rendezvous, as gpudeck's `--elastic` launches it."""
    return os.environ.get("GPUDECK_ELASTIC") == "1"


def exit_code(d: Dist, signalled: bool, code: int) -> int:
    """The code a rank exits with once the loop is over. Elastically, a stop signal that reached
    only some ranks is a node leaving (gpudeck stops one node for `scale -1`), or torchrun's agent
    on one node restarting its workers for a joining node: the ranks it did not reach have
    checkpointed with everyone and now exit REGROUP_EXIT, so their agents restart them to resume
    at the new world size instead of ending the job. Collective: every rank calls it."""
    if not (elastic() and d.enabled and code == 0):
        return code
    some, not_all = d.any(signalled, not signalled)
    return REGROUP_EXIT if some and not_all and not signalled else code


def init(timeout_s: float) -> Dist:
    """Join the process group torchrun describes in the environment; a plain run is world 1."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if world <= 1:
        return Dist(device=device)
    if cuda:
        torch.cuda.set_device(device)
    timeout = datetime.timedelta(seconds=timeout_s)
    dist.init_process_group("nccl" if cuda else "gloo", timeout=timeout)
    control = dist.new_group(backend="gloo", timeout=timeout) if cuda else dist.group.WORLD
    return Dist(dist.get_rank(), dist.get_world_size(), local_rank, device, control)


def agree_on_checkpoint(d: Dist, local: tuple[int, dict[str, Any]] | None) -> dict[str, Any] | None:
    """All ranks resume from the newest checkpoint any of them holds (hosts may not share a disk)."""
    mine = local[0] if local else -1
    target = d.max_int(mine)
    if target < 0:
        return None
    have = mine == target
    if d.min_int(int(have)) == 1:  # everyone has it on their own disk: no transfer
        return local[1] if local else None
    src = d.min_int(d.rank if have else d.world)
    state: dict[str, Any] | None = d.broadcast_object(local[1] if (have and local) else None, src)
    return state
