"""Which torch the GPU parts will use, and whether it sees CUDA: asked once, in a child process."""

from __future__ import annotations

from .context import Context
from .result import PartResult, fail, ok, skip


def torch_probe(ctx: Context) -> PartResult:
    child = ctx.torch_side("probe")
    got = child.next_object(lambda o: "cuda" in o, timeout=max(1.0, ctx.left() - 2))
    if got is None:
        return fail(f"the probe printed nothing: {child.stderr_tail() or 'no output'}")
    ctx.facts["torch"] = got
    if not got["cuda"]:
        return skip(got["reason"], details=got)
    number = f"torch {got['torch']}, CUDA {got['cuda_runtime']}"
    return ok(number, f"{got['device']}, sm {got['capability']}, bf16 {got['bf16']}", details=got)


def cuda_missing(ctx: Context) -> str | None:
    """Why a part that needs torch with CUDA cannot run, or None."""
    got = ctx.facts.get("torch")
    if got is None:
        return "needs torch with CUDA: not probed"
    return None if got.get("cuda") else f"needs torch with CUDA: {got.get('reason')}"
