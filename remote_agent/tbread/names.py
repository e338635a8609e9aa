"""A TensorBoard tag as a point's key: the names the log parser gives (`train/loss`, `train_loss`,
`Loss/train` -> loss; `learning_rate` -> lr; `train/samples_per_second`, `throughput` ->
samples_per_sec), so a run charts the same whether it printed or logged to TensorBoard. A tag that
names nothing the parser knows keeps its own spelling. A run directory named like a split
(Keras' `validation/`) puts its tags in that split, and Keras' `epoch_`/`batch_` prefixes say when a
value was written, not what it is (`epoch_loss` in `validation/` is `val_loss`)."""

from __future__ import annotations

from typing import Dict, Tuple

from ..metrics.canonical import PLAIN_INDEXES, is_signal, normalise

_SPLIT_DIRS = {"validation": "val", "val": "val", "valid": "val", "eval": "val", "test": "test"}
# Keras' TensorBoard callback writes "epoch_" + name (and "batch_" + name with update_freq set).
_KERAS_WHEN = ("epoch_", "batch_")
_cache: Dict[Tuple[str, str], str] = {}


def point_key(tag: str, run: str) -> str:
    key = _cache.get((tag, run))
    if key is None:
        if len(_cache) > 4096:  # tags that never repeat must not grow it forever
            _cache.clear()
        key = _cache[(tag, run)] = _point_key(tag, run)
    return key


def _point_key(tag: str, run: str) -> str:
    split = _SPLIT_DIRS.get(run.rsplit("/", 1)[-1].lower()) if run else None
    for when in _KERAS_WHEN:
        if tag.startswith(when) and _known(normalise(tag[len(when) :])):
            tag = tag[len(when) :]  # a Keras tag; "epoch_time" (no signal after it) is kept whole
            break
    raw = "%s_%s" % (split, tag) if split else tag
    name = normalise(raw)
    if name == "throughput" or name.endswith("_throughput"):
        return name[: -len("throughput")] + "samples_per_sec"
    if _known(name):
        return name
    return tag  # kept under its tag


def _known(name: str) -> bool:
    return is_signal(name) or name in PLAIN_INDEXES
