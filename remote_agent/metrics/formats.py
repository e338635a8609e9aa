"""Line shapes that the generic key/value reader cannot get right on its own.

Each reader here recognises one framework's layout and returns the values it is sure of, plus
the text it has consumed so the generic reader does not read the same numbers a second time.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from .values import Number, finite_or_name, to_number

Values = Dict[str, Number]

# ---- tqdm bars (HF Trainer, Lightning, accelerate/diffusers/kohya scripts, torchtune, YOLO tails)

_BAR = re.compile(
    r"(?:(?P<pct>\d{1,3})%\s*(?:\|[^|]*\|)?\s*)?"  # " 45%|████▌     |" (glyphs optional)
    r"(?P<n>\d+(?:\.\d+)?[kMG]?)(?:/(?P<total>\d+(?:\.\d+)?[kMG]?))?(?:it)?\s*"
    r"\[(?P<elapsed>(?:\d+:)?\d+:\d\d)(?:<(?P<remaining>[\d:?]*))?"
    r"(?:,\s*(?P<rate>\d+(?:\.\d+)?|\?)\s*(?P<rate_unit>[A-Za-z]+/[A-Za-z]+))?"
    r"(?P<postfix>[^\]]*)\]"
)
_POSTFIX_PAIR = re.compile(r"([A-Za-z_][\w./@-]*)=\s*([^,\]]+)")
_STEP_LABEL = re.compile(r"(?i)(?:^|\s)(?:global\s+)?steps?\s*:?\s*$")


def bar_hint(text: str) -> bool:
    return "it/s" in text or "s/it" in text or "/s]" in text or "/s," in text


def find_bar(text: str) -> Optional[Tuple[str, Values, Dict[str, str], str]]:
    """(description before the bar, bar values, raw postfix pairs, text glued after the bar)."""
    m = _BAR.search(text)
    if m is None:
        return None
    values: Values = {}
    desc = text[: m.start()]
    if _STEP_LABEL.search(desc):
        # accelerate/diffusers/kohya scripts label the bar "Steps": its count is the global step.
        n = to_number(m.group("n"))
        if isinstance(n, int):
            values["step"] = n
    rate_value = _rate(m.group("rate"), m.group("rate_unit"))
    if rate_value is not None:
        values[rate_value[0]] = rate_value[1]
    pairs = {k: v.strip() for k, v in _POSTFIX_PAIR.findall(m.group("postfix") or "")}
    return desc, values, pairs, text[m.end() :]


def bar_position(text: str) -> Optional[Tuple[str, str, Optional[str], str]]:
    """(description, counter, total or None, postfix) of the first tqdm bar in `text`."""
    m = _BAR.search(text)
    if m is None:
        return None
    return text[: m.start()], m.group("n"), m.group("total"), m.group("postfix") or ""


def _rate(rate: Optional[str], unit: Optional[str]) -> Optional[Tuple[str, Number]]:
    if not rate or not unit:
        return None
    value = to_number(rate)
    if not isinstance(value, (int, float)) or value <= 0:
        return None
    if unit == "it/s":
        return "it_per_sec", value
    if unit == "s/it":
        return "it_per_sec", round(1.0 / value, 6)  # one name for speed, whichever way printed
    return None  # "examples/s", "MB/s": a bar's own speed, no training metric


# ---- Ultralytics YOLO: "  1/100   3.21G   1.234   2.345   1.456   42   640: 100%|..."

_YOLO_ROW = re.compile(
    r"^\s*(?P<epoch>\d+)/(?P<epochs>\d+)\s+(?P<mem>\d+(?:\.\d+)?)G\s+"
    r"(?P<losses>(?:(?:[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|nan|inf)\s+){1,6})"
    r"(?P<instances>\d+)\s+(?P<size>\d+)\s*(?::|$)"
)
# Loss columns by count, as the trainers' headers name them (detect/obb, segment, pose, classify).
_YOLO_LOSSES = {
    1: ("loss",),
    3: ("box_loss", "cls_loss", "dfl_loss"),
    4: ("box_loss", "seg_loss", "cls_loss", "dfl_loss"),
    5: ("box_loss", "pose_loss", "kobj_loss", "cls_loss", "dfl_loss"),
}
# YOLOv3 and YOLOv5 before 6.x print the total after its parts ("GIoU/box obj cls total"):
# four columns whose last is the sum of the other three (to the printed precision).
_YOLO_WITH_TOTAL = ("box_loss", "obj_loss", "cls_loss", "loss")


def _is_total(columns: List[str]) -> bool:
    try:
        parts = [float(c) for c in columns]
    except ValueError:
        return False
    total = parts[3]
    return abs(sum(parts[:3]) - total) <= 0.005 * abs(total) + 1e-4 and total != 0


# The validation summary row: "all  128  929  0.671  0.542  0.612  0.452".
_YOLO_ALL = re.compile(
    r"^\s*all\s+(\d+)\s+(\d+)\s+([\d.]+|nan)\s+([\d.]+|nan)\s+([\d.]+|nan)\s+([\d.]+|nan)\s*$"
)


_YOLO_HINT = re.compile(r"\s*(?:\d+/\d+\s|all\s)")


def value_dependent(text: str) -> bool:
    """Whether the reading depends on the numbers' values, not only on where they stand: the
    columns of a YOLO row are named by whether the fourth is the sum of the three before it."""
    return _YOLO_HINT.match(text) is not None


def layout_hint(text: str) -> bool:
    """Whether the line may be a layout whose names say nothing alone (YOLO rows, GAN losses)."""
    return _YOLO_HINT.match(text) is not None or text.startswith("(epoch: ")


def yolo_row(text: str) -> Optional[Values]:
    m = _YOLO_ROW.match(text)
    if m is None:
        return None
    columns = m.group("losses").split()
    names = _YOLO_LOSSES.get(len(columns)) or tuple("loss_%d" % (i + 1) for i in range(len(columns)))
    if len(columns) == 4 and _is_total(columns):
        names = _YOLO_WITH_TOTAL
    values: Values = {"epoch": int(m.group("epoch")), "gpu_mem_gb": float(m.group("mem"))}
    for name, column in zip(names, columns):  # noqa: B905 (strict= is 3.10+; the agent runs on 3.8)
        value = to_number(column)
        if value is not None:
            values[name] = value
    if "loss" not in values:
        values["loss"] = sum_of([values[n] for n in names if n in values])
    values["instances"] = int(m.group("instances"))
    return values


def yolo_validation(text: str) -> Optional[Values]:
    m = _YOLO_ALL.match(text)
    if m is None:
        return None
    names = ("val_precision", "val_recall", "val_map50", "val_map50_95")
    values: Values = {}
    for name, column in zip(names, m.groups()[2:]):  # noqa: B905
        value = to_number(column)
        if value is not None:
            values[name] = value
    return values


def sum_of(parts: List[Number]) -> Number:
    """Sum of component losses; a nan or inf among them shows in the total."""
    total = 0.0
    for part in parts:
        total += float(part)
    named = finite_or_name(total)
    return float("%.12g" % named) if isinstance(named, float) else named


# ---- Lines whose numbers the generic reader would mislabel


_MNIST_TEST = re.compile(r"Test set: Average loss: (?P<loss>\S+?),\s*Accuracy: (?P<right>\d+)/(?P<total>\d+)")
_TORCHTUNE_DESC = re.compile(r"(?P<epoch>\d+)\|(?P<step>\d+)\|Loss: (?P<loss>[-+\w.]+?):?(?:\s|$)")
_TIMM_RATE = re.compile(r"Time:\s*[\d.]+s,\s*(?P<rate>[\d.]+)/s")
# pytorch-CycleGAN-and-pix2pix: "(epoch: 1, iters: 100, time: 0.507, data: 0.091) D_A: 0.201 G_A: 0.297"
_GAN_VISUALIZER = re.compile(
    r"\(epoch: (?P<epoch>\d+), iters: \d+, time: [\d.]+, data: [\d.]+\)(?P<losses>.*)"
)
_GAN_LOSS = re.compile(r"([A-Za-z][\w]*): ([-+\w.]+)")
_LITGPT_LOSS = re.compile(r"loss train: (?P<loss>[-+\w.]+),\s*val: (?P<val>[-+\w./]+)")


def special(text: str) -> Optional[Tuple[Values, str]]:
    """Values of a known tricky layout, and the text left for the generic reader."""
    if "Test set:" in text:
        m = _MNIST_TEST.search(text)
        if m is not None:  # PyTorch examples: a test-set average is validation, never the loss
            values = _numbers({"val_loss": m.group("loss")})
            total = int(m.group("total"))
            if total:
                values["val_acc"] = round(100.0 * int(m.group("right")) / total, 6)
            return values, ""
    if "|Loss: " in text:
        m = _TORCHTUNE_DESC.search(text)
        if m is not None:  # torchtune: "{epoch}|{step}|Loss: {loss}" as the bar's description
            values = _numbers({"epoch": m.group("epoch"), "step": m.group("step"), "loss": m.group("loss")})
            return values, text[: m.start()] + " | " + text[m.end() :]
    if "loss train:" in text:
        m = _LITGPT_LOSS.search(text)
        if m is not None:  # litgpt: "loss train: 2.345, val: n/a"
            values = _numbers({"loss": m.group("loss"), "val_loss": m.group("val")})
            return values, text[: m.start()] + " | " + text[m.end() :]
    if text.startswith("(epoch: "):
        m = _GAN_VISUALIZER.match(text)
        if m is not None:  # every name after the header is one of the model's losses (loss_names)
            raw = {"loss_" + name.lower(): value for name, value in _GAN_LOSS.findall(m.group("losses"))}
            raw["epoch"] = m.group("epoch")
            return _numbers(raw), ""
    if "/s " in text and "Time:" in text:
        m = _TIMM_RATE.search(text)
        if m is not None:  # timm: "Time: 0.412s,  621.12/s" is seconds per batch and samples/s
            values = _numbers({"samples_per_sec": m.group("rate")})
            return values, text
    return None


def _numbers(raw: Dict[str, str]) -> Values:
    values: Values = {}
    for name, text in raw.items():
        value = to_number(text)
        if value is not None:
            values[name] = value
    return values
