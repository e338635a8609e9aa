"""Boosting libraries' round lines: XGBoost's ``[N]\\ttrain-logloss:…\\teval-logloss:…`` and
LightGBM's ``[N]\\ttraining's binary_logloss: …\\tvalid_1's binary_logloss: …``.

Each entry names a data set and a metric. ``[N]`` is the round: the step. The training set's
(``train`` / ``training``) first loss-type metric is the loss; its other metrics stay
``train/<metric>``; every other set's values are series under the set's name
(``eval/logloss``, ``valid_1/binary_logloss``), never the loss: scikit-learn's ``validation_0``
may be the training data, but nothing on the line says so. A cross-validation mean ± std
(``0.528952+0.000417``) is read as its mean. A line whose every entry does not fit reads nothing.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

from .values import Number, to_number

Values = Dict[str, Number]

_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)|[-+]?(?:nan|inf)"
HINT = re.compile(r"\[\d+\]:?\s+\S+?(?:-\S+?:|'s )")
_ROUND = re.compile(r"\[(?P<n>\d+)\]:?\s+")
# XGBoost: "train-logloss:0.160439", "test-logloss:0.529975+0.002922", "eval-ndcg@10:0.5"
_XGB_ENTRY = re.compile(
    r"(?P<set>[A-Za-z_][\w.]*)-(?P<metric>[A-Za-z][\w@.\-]*?):(?P<v>"
    + _NUM
    + r")(?:\+(?:"
    + _NUM
    + r"))?(?:\s+|\Z)"
)
# LightGBM: "training's binary_logloss: 0.712679", "valid's l2:0.100327", "cv_agg's l2: 0.5 + 0.01"
_LGB_ENTRY = re.compile(
    r"(?P<set>[A-Za-z_][\w.]*)'s (?P<metric>[A-Za-z][\w@.\-]*):\s*(?P<v>" + _NUM + r")"
    r"(?:\s*\+\s*(?:" + _NUM + r"))?(?:\s+|\Z)"
)
_TRAINING_SETS = frozenset(["train", "training"])
# Metrics that are a loss (what the booster minimises), as XGBoost and LightGBM name them.
_LOSS_METRIC = re.compile(
    r"(?:binary_|multi_)?logloss|mlogloss|rmse|rmsle|mae|mape|mphe|l1|l2|l2_root|mse|cross_entropy|xentropy"
    r"|cross_entropy_lambda|huber|fair|quantile|poisson|gamma|tweedie|[\w-]*nloglik[\w@.]*|[\w-]*deviance\Z"
)


def read(text: str) -> Optional[Values]:
    """The point of a boosting round line, or None when the line is no such line (or any entry
    does not fit)."""
    m = _ROUND.match(text)
    if m is None:
        return None
    pos, end = m.end(), len(text.rstrip())
    entry = _XGB_ENTRY if _XGB_ENTRY.match(text, pos) else _LGB_ENTRY
    values: Values = {"step": int(m.group("n"))}
    named = 0
    while pos < end:
        e = entry.match(text, pos)
        if e is None:
            return None
        pos = e.end()
        value = to_number(e.group("v"))
        if value is None:
            return None
        data_set, metric = e.group("set"), e.group("metric")
        if (
            data_set.lower() in _TRAINING_SETS
            and "loss" not in values
            and _LOSS_METRIC.fullmatch(metric.lower())
        ):
            values["loss"] = value
        else:
            values.setdefault(data_set + "/" + metric, value)
        named += 1
    return values if named else None
