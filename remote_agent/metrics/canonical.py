"""Canonical metric names: every framework's spelling of "loss", "step" or "lr" becomes one name.

``normalise`` maps one printed key to its name (cached: logs repeat the same keys forever).
``is_signal`` says whether a name is worth a point on its own; an index such as ``step`` or
``epoch`` is not, which keeps banners like "Epoch 3/100" and "saving step 500" off the chart.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

# Whole-name synonyms, applied after lower-casing and turning separators into "_".
_SYNONYMS = {
    "learning_rate": "lr",
    "lr": "lr",
    "global_step": "global_step",
    "num_updates": "num_updates",
    "iteration": "iteration",
    "iter": "iter",
    "iters": "iter",
    "it": "iter",
    "steps": "step",
    "step": "step",
    "epoch": "epoch",
    "epochs": "epoch",
    "lm_loss": "loss",
    "lm_loss_value": "loss",
    "total_loss": "loss",
    "loss_total": "loss",
    "current_loss": "loss",
    "loss_value": "loss",
    "lm_loss_ppl": "ppl",
    "perplexity": "ppl",
    "avr_loss": "loss_avg",
    "avg_loss": "loss_avg",
    "average_loss": "loss_avg",
    "mean_loss": "loss_avg",
    "running_loss": "loss_avg",
    "smoothed_loss": "loss_avg",
    "smooth_loss": "loss_avg",
    "loss_step": "loss",
    "step_loss": "loss",  # diffusers scripts: the loss of this step
    # LLaMA-Adapter / LLaMA2-Accessory's MetricLogger: "closs" is the model's (causal LM) loss,
    # logged as train_closs/val_closs too; "mloss" beside it is an auxiliary term, kept apart.
    "closs": "loss",
    # NeMo 2 / BioNeMo: the training loss averaged over data-parallel ranks, the curve's loss
    "reduced_train_loss": "loss",
    "lr_0": "lr",  # the first parameter group's rate (per-group logs: lr_0, lr_1...)
    "completed_step": "step",  # "completed step: 100"
    "completed_steps": "step",
    "iterations": "iteration",
    "grad_norm": "grad_norm",
    "gnorm": "grad_norm",
    "gradient_norm": "grad_norm",
    "grad_norm_total": "grad_norm",
    "accuracy": "acc",
    "iters_per_sec": "it_per_sec",
    "samples_per_second": "samples_per_sec",
    "img_per_sec": "samples_per_sec",
    "imgs_per_sec": "samples_per_sec",
    "images_per_sec": "samples_per_sec",
    "examples_per_sec": "samples_per_sec",
    "tok_per_sec": "tokens_per_sec",
    "tokens_per_second": "tokens_per_sec",
    "tokens_per_second_per_gpu": "tokens_per_sec_per_gpu",
    "steps_per_second": "steps_per_sec",
    "curr_samples_per_sec": "samples_per_sec",
    "running_avg_samples_per_sec": "samples_per_sec_avg",
    "grad_norm_clipped": "grad_norm_clipped",
}

# Leading words that say which split a value belongs to.
_TRAIN_PREFIXES = ("train_", "training_")
_VAL_PREFIXES = ("val_", "valid_", "validation_", "eval_", "evaluation_", "dev_")
_TEST_PREFIXES = ("test_",)

# A split named after the quantity ("Loss Train", "loss/val", "Accuracy Validation"): moved in
# front, so "Loss Train | Loss Val" reads as loss and val_loss, never as two parts of one loss.
_TRAILING_SPLIT = {
    "train": "train", "training": "train",
    "val": "val", "valid": "val", "validation": "val", "eval": "val", "evaluation": "val", "dev": "val",
    "test": "test",
}  # fmt: skip

# Words of a multi-word key that carry no meaning ("number of skipped iterations").
_FILLER = {"of", "the", "per", "at", "in", "to", "a"}

# Words that make a name a measurement worth a point on its own ("acc" but not "accumulation").
_SIGNAL = re.compile(
    r"(?:^|_)(?:loss|acc|ppl|norm|rewards?|score|f1|bleu|iou|precision|recall|auc|error|mfu|dice|wer"
    r"|cer|rouge\w*|top\d|kl|entropy|psnr|ssim|fid|nll|map\w*|samples_per_sec|tokens_per_sec"
    r"|backlog)(?=\d|_|$)"  # backlog: the samples waiting, what autoscaling rules watch (policies.toml)
)
_NOT_SIGNAL_PARTS = ("scale", "num_", "skipped")

# Every printed spelling of a signal name contains one of these once lower-cased: a line without
# any can yield no point from its key/value pairs, so it is rejected before the costly readers run.
# Keep in step with _SIGNAL and _SYNONYMS ("Learning Rate", "img/s", "SamplesPerSec", "Acc@1").
# Match it against text.lower(): an IGNORECASE alternation is ten times slower in CPython's re.
SIGNAL_HINT = re.compile(
    r"loss|acc|lr|learning|ppl|perplex|norm|reward|score|f1|bleu|iou|precision|recall|auc|error|mfu"
    r"|dice|wer|cer|rouge|top\d|kl|entropy|psnr|ssim|fid|nll|map|samples|img|images|examples|tok|backlog"
)

# Identifiers that look like numbers beside a key but never belong on a chart.
DROPPED = frozenset(
    ["v_num", "rank", "local_rank", "global_rank", "world_size", "pid", "seed", "eta", "gpu",
     "device", "node", "version", "cuda", "python", "port", "id", "worker", "workers", "gpus",
     "train", "training", "val", "valid", "test", "eval"]
)  # fmt: skip

_SEPARATORS = re.compile(r"[^a-z0-9]+")
_CAMEL = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z]+)+\Z")
_CAMEL_HUMP = re.compile(r"(?<=[a-z])(?=[A-Z])")
_PER_SEC = re.compile(r"/s(?:ec)?\b")
_CHAINER_MAIN = re.compile(r"(^|/)main/")
_cache: Dict[str, str] = {}


def normalise(raw: str) -> str:
    """A printed key as its canonical name (``'Learning Rate'`` -> ``lr``, ``Acc@1`` -> ``acc1``)."""
    name = _cache.get(raw)
    if name is None:
        if len(_cache) > 4096:  # keys that never repeat (ids in names) must not grow it forever
            _cache.clear()
        name = _cache[raw] = _normalise(raw)
    return name


def _normalise(raw: str) -> str:
    text = raw.strip()
    if _CAMEL.match(text):  # DeepSpeed: CurrSamplesPerSec -> curr_samples_per_sec
        text = _CAMEL_HUMP.sub("_", text)
    text = text.lower().replace("@", "")
    if "main/" in text:  # chainer's observations are "<target>/<key>", the target "main" by default
        text = _CHAINER_MAIN.sub(r"\1", text)
    if "/s" in text:
        text = _PER_SEC.sub("_per_sec", text)
    words = [w for w in _SEPARATORS.split(text) if w]
    while len(words) > 1 and words[0] in _FILLER:
        words.pop(0)
    if len(words) > 1 and words[-1] in _TRAILING_SPLIT:
        base = _base("_".join(words[:-1]))
        if is_signal(base):
            return _with_split(_TRAILING_SPLIT[words[-1]] + "_" + base)
    name = "_".join(words)
    return _with_split(name)


def _with_split(name: str) -> str:
    """Resolve split prefixes: ``train_loss`` -> ``loss``, ``eval_loss`` -> ``val_loss``."""
    for prefix in _VAL_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            rest = _base(name[len(prefix) :])
            return rest if rest in PLAIN_INDEXES else "val_" + rest
    for prefix in _TEST_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            rest = _base(name[len(prefix) :])
            return rest if rest in PLAIN_INDEXES else "test_" + rest
    for prefix in _TRAIN_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            rest = _base(name[len(prefix) :])
            # train_wall or train_runtime are timings, only train metrics lose the prefix.
            return rest if is_signal(rest) or rest in PLAIN_INDEXES else name
    return _base(name)


def _base(name: str) -> str:
    synonym = _SYNONYMS.get(name)
    if synonym is not None:
        return synonym
    if name.endswith("_accuracy"):
        return name[: -len("accuracy")] + "acc"
    if name.startswith("accuracy_"):
        return "acc_" + name[len("accuracy_") :]
    if name.endswith("_step") and len(name) > 5 and is_signal(name[:-5]):
        return _base(name[:-5])  # Lightning: train_loss_step is the current value
    return name


def is_signal(name: str) -> bool:
    """Whether a value under this name is a measurement (not an index, timing or setting)."""
    if name == "lr" or name.endswith("_lr"):
        return True
    if any(part in name for part in _NOT_SIGNAL_PARTS):
        return False
    return _SIGNAL.search(name) is not None


# Indexes: they place a point, never make one, and belong to no split ("valid_num_updates" -> step).
# They and signal names are all a bare "key value" (no ':' or '=') may use: "Using 8 GPUs" is prose.
PLAIN_INDEXES = frozenset(["step", "epoch", "iter", "iteration", "global_step", "num_updates", "batch"])


def plain_key_allowed(name: str) -> bool:
    if name in PLAIN_INDEXES or name == "it_per_sec":
        return True
    if not is_signal(name):
        return False
    # Short names only: "val_loss", "grad_norm", "tokens_per_sec"; a longer phrase
    # ("val_loss_at_iteration") is prose around a number that belongs to another word.
    parts = name.count("_")
    return parts <= 1 or (parts <= 3 and name.endswith("_per_sec"))


def split_of(name: str) -> Optional[str]:
    """``val`` or ``test`` for evaluation names, None for training ones."""
    if name.startswith("val_"):
        return "val"
    if name.startswith("test_"):
        return "test"
    return None
