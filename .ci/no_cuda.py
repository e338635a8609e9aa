"""Fail when a `pip install --dry-run --report` would install torch or a CUDA runtime package.

nvidia-ml-py (the NVML bindings gpudeck reads GPUs with) is a small pure-Python package and is
expected; the nvidia-cuda-*, nvidia-cudnn-*, nvidia-cublas-*… wheels (GBs) come only with torch.
"""

from __future__ import annotations

import json
import sys

ALLOWED_NVIDIA = {"nvidia-ml-py"}
HEAVY = {"torch", "triton", "torchvision", "torchaudio"}


def offenders(report: dict) -> list[str]:
    names = [str(item["metadata"]["name"]).lower().replace("_", "-") for item in report.get("install", [])]
    return sorted(n for n in names if n in HEAVY or (n.startswith("nvidia-") and n not in ALLOWED_NVIDIA))


def main(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        found = offenders(json.load(f))
    if found:
        print(f"no_cuda: a plain install of the client would pull {', '.join(found)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
