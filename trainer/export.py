"""`python -m trainer export --checkpoint C --onnx out.onnx`: a checkpoint's model as one ONNX file,
with a dynamic batch dimension, checked against torch in onnxruntime when it is installed."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

import torch

from . import checkpoint as ckpt
from .models import build_model, load_plain_state_dict
from .report import Reporter

# fp32 kernels sum in different orders in torch and onnxruntime: the error grows with the magnitude of
# the outputs (and the depth), so the bound is relative to the output scale, not a fixed 1e-4
# (ResNet-18 logits differed by 4.9e-4 while a tiny CNN's differ by ~1e-7).
RTOL = 1e-4
ATOL = 1e-6  # floor for outputs near zero


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m trainer export", description=__doc__)
    p.add_argument("--checkpoint", required=True, help="a checkpoint file written by the trainer")
    p.add_argument("--onnx", required=True, help="output .onnx path (weights inside, no side file)")
    p.add_argument("--opset", type=int, default=18)
    p.add_argument("--no-verify", action="store_true", help="skip the onnxruntime comparison")
    p.add_argument(
        "--rtol",
        type=float,
        default=RTOL,
        help="largest difference allowed, as a share of the largest output magnitude",
    )
    p.add_argument(
        "--atol", type=float, default=ATOL, help="added to the allowed difference (outputs near 0)"
    )
    return p.parse_args(argv)


def tolerance(want_scale: float, rtol: float, atol: float) -> float:
    return rtol * want_scale + atol


def verify(path: str, model: torch.nn.Module, size: int) -> tuple[float, float]:
    """(largest absolute difference between onnxruntime and torch, largest |torch output|), at a batch
    size the export never saw."""
    import onnxruntime as ort

    x = torch.randn(3, 3, size, size, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = model(x).numpy()
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    return float(abs(got - want).max()), float(abs(want).max())


def main(argv: list[str]) -> int:
    args = parse(argv)
    out = Reporter(True)
    try:
        state = ckpt.load(args.checkpoint)
    except Exception as e:
        reason = " ".join(str(e).split())[:300]
        raise SystemExit(
            f"trainer export: --checkpoint {args.checkpoint}: {type(e).__name__}: {reason}"
        ) from None
    cfg = state["config"]
    model = build_model(cfg["model"], cfg["num_classes"])
    load_plain_state_dict(model, state["model"])
    model.eval()
    size = cfg["image_size"]
    example = torch.randn(2, 3, size, size)
    batch = torch.export.Dim("batch", min=1, max=4096)
    os.makedirs(os.path.dirname(os.path.abspath(args.onnx)), exist_ok=True)
    # The exporter prints progress on stdout, which is reserved for JSON lines: send it to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        torch.onnx.export(
            model,
            (example,),
            args.onnx,
            dynamo=True,
            input_names=["images"],
            output_names=["logits"],
            dynamic_shapes={"x": {0: batch}},
            opset_version=args.opset,
            external_data=False,
            verbose=False,
        )
    result = {"path": os.path.abspath(args.onnx), "step": state["step"], "model": cfg["model"]}
    if not args.no_verify:
        diff, scale = verify(args.onnx, model, size)
        allowed = tolerance(scale, args.rtol, args.atol)
        result.update(max_abs_diff=diff, output_scale=scale, tolerance=allowed)
        if not diff <= allowed:  # also false for nan
            out.event("export_mismatch", **result)
            os.unlink(args.onnx)  # a file that computes something else is not an export
            raise SystemExit(
                f"trainer export: onnxruntime differs from torch by {diff:.3g} (allowed {allowed:.3g}: "
                f"--rtol {args.rtol:g} of the largest output {scale:.3g} + --atol {args.atol:g}); "
                f"{args.onnx} not written"
            )
    out.event("exported", **result)
    return 0
