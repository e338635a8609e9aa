"""The log parser: metric points from whatever a training script prints (``parse_line``).

``parse`` reads one line and picks a reader per shape: ``structured`` (JSON, dict reprs, tqdm
postfixes), ``formats`` (framework layouts: tqdm bars, Keras, YOLO...), ``kv`` (generic key/value
pairs) with ``context`` (the split and indexes a line's header names). All of them end in
``rules`` (step, loss, validation labels), spell names through ``canonical`` and numbers
through ``values``.
"""

from __future__ import annotations

from .parse import parse_line

__all__ = ["parse_line"]
