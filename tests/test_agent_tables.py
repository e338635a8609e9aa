"""A job's table rows are journaled by the names of the header printed above them.

The supervisor keeps one LineParser per job: the header line of a YOLOv5 7.0 run (printed once
per epoch; lines from https://github.com/ultralytics/yolov5/pull/10314) names its loss columns
box/obj/cls, which a row alone cannot tell from YOLOv8's box/cls/dfl.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.jobs import journal, launch, wait_state
from tui.remote.client import AgentClient

SCRIPT = r"""
print("Starting training for 2 epochs...")
print()
print("      Epoch    GPU_mem   box_loss   obj_loss   cls_loss  Instances       Size")
print("        0/1      22.4G    0.07281    0.08384    0.06359        199        640: 100%|██████████| 1849/1849 13:15")
# The validation lines of a YOLOv7 run (https://github.com/WongKinYiu/yolov7/issues/849) under it.
print("               Class      Images      Labels           P           R      mAP@.5  mAP@.5:.95: 100%|██████████| 50/50 [01:15<00:00,  1.52s/it]")
print("                 all         787        2054       0.736      0.0185     0.00493     0.00334")
"""


def test_rows_under_a_header_are_journaled_by_its_names(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    job = launch(client, workdir, [sys.executable, "-c", SCRIPT])
    wait_state(client, job["id"], {"exited"})
    metrics = [r["values"] for r in journal(agent_dir, job["id"]) if r["kind"] == "metric"]
    assert metrics[0] == {
        "epoch": 0, "gpu_mem_gb": 22.4, "box_loss": 0.07281, "obj_loss": 0.08384, "cls_loss": 0.06359,
        "instances": 199, "loss": 0.22024,
    }  # fmt: skip
    assert metrics[1] == {
        "val_precision": 0.736,
        "val_recall": 0.0185,
        "val_map50": 0.00493,
        "val_map50_95": 0.00334,
    }
    assert len(metrics) == 2
