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


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m trainer export", description=__doc__)
    p.add_argument("--checkpoint", required=True, help="a checkpoint file written by the trainer")
    p.add_argument("--onnx", required=True, help="output .onnx path (weights inside, no side file)")
    p.add_argument("--opset", type=int, default=18)
    p.add_argument("--no-verify", action="store_true", help="skip the onnxruntime comparison")
    return p.parse_args(argv)


def verify(path: str, model: torch.nn.Module, size: int) -> float:
    """Largest absolute difference between onnxruntime and torch, at a batch size the export never saw."""
    import onnxruntime as ort

    x = torch.randn(3, 3, size, size, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = model(x).numpy()
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    return float(abs(got - want).max())


def main(argv: list[str]) -> int:
    args = parse(argv)
    out = Reporter(True)
    state = ckpt.load(args.checkpoint)
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
        result["max_abs_diff"] = verify(args.onnx, model, size)
    out.event("exported", **result)
    return 0
