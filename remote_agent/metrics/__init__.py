"""The log parser: metric points from whatever a training script prints (``parse_line``).

``parse`` reads one line and picks a reader per shape: ``structured`` (JSON, dict reprs, tqdm
postfixes), ``formats`` (framework layouts: tqdm bars, Keras, YOLO...), ``kv`` (generic key/value
pairs) with ``context`` (the split and indexes a line's header names). All of them end in
``rules`` (step, loss, validation labels), spell names through ``canonical`` and numbers
through ``values``. ``LineParser`` adds the one piece of context a line cannot carry: the table
header (``tables``) its rows are read by. What ``loss`` means: README.md in this directory.
"""

from __future__ import annotations

from .lineparser import LineParser
from .parse import parse_line

__all__ = ["LineParser", "parse_line"]
