"""`metrics --json` lines made from journal text with string operations, not JSON decode → encode.

A plain metric record, as the journal writer writes it, is `{"seq":N,"t":T,"kind":"metric",
"values":{...}}`, compact and with non-ASCII characters as they are; its output line is
`{"t": T, "node": NODE, "values": {...}}` as json.dumps writes it (", " and ": " separators,
non-ASCII escaped). For a block of such lines the two differ only in the envelope and the
separators, so the block is reshaped with one regex pass and two replaces over the whole text.

That is right only when every `,` and `:` in the block is a separator and each line holds exactly
the envelope and its values, which cheap counts over the block prove: no backslash (so no quote
inside a string), ASCII only, every `:` right after a quote and every `,` right before one, and no
string that starts with a `:` or ends with a `,` (the only ways those could pass inside a string);
two `{` per line (no nested object) and every line ending in `}}` (values is the last field).
Lists whose commas precede strings pass too: json.dumps writes them as their compact form with a
space after each separator. Numbers pass through as written: the journal's one writer writes them
as json.dumps does. Anything else (unicode, a nested object, a list of numbers, a string holding a
separator) returns None and the caller decodes it.
"""

from __future__ import annotations

import itertools
import json
import operator
import re

PLAIN_MARK = '"kind":"metric","values":{'
# Replaced by a literal: a template with a group would call back into Python once per line.
_SEQ_PREFIX = re.compile(r'\{"seq":\d+,"t":')
# A `:` right after a string's opening quote, or a `,` right before its closing one: the only ways
# a separator inside a string passes the counts. (A structural `:` follows a key's closing quote;
# a structural `,` in an object precedes a key's opening quote.)
_SEPARATOR_IN_STRING = (':":', ',":', '{":', '[":', ',",', ',"}', ',"]')
_IN_KEYS = (',":', '{":')  # the same, when every string is a key (no string value, no list)


def points_json(block: str, node: str) -> str | None:
    """The output lines (each ending in a newline) for a block of plain metric lines (each ending in
    a newline); None when the block is not provably plain."""
    lines = block.count("\n")
    if not lines or not block.endswith("\n") or not block.isascii():
        return None
    only_keys = ':"' not in block and "[" not in block  # the common case: numbers under names
    if "\\" in block or any(s in block for s in (_IN_KEYS if only_keys else _SEPARATOR_IN_STRING)):
        return None
    if block.count(PLAIN_MARK) != lines or block.count("{") != 2 * lines or block.count("}}\n") != lines:
        return None
    if block.count(":") != block.count('":') or block.count(",") != block.count(',"'):
        return None
    node_text = json.dumps(node)
    if any(c in node_text[1:-1] for c in '",:{}[]\\') or not node_text.isascii():
        return None
    text, found = _SEQ_PREFIX.subn('{"t":', block)
    if found != lines:
        return None
    text = text.replace(PLAIN_MARK, f'"node":{node_text},"values":{{')
    return text.replace(',"', ', "').replace('":', '": ')


POINTS_MARK = '"kind":"points","names":'
_POINTS_HEAD = re.compile(r'\{"seq":(\d+),"last":(\d+),"t":(-?[0-9.eE+-]+),"kind":"points","names":')
_NAMES = json.JSONDecoder()


def points_block_json(line: str, node: str) -> str | None:
    """The output lines (each ending in a newline) of one `points` journal line (records.py), made
    from its text: its names and `t` are encoded once, its numbers are spliced in as written. None
    when a row holds anything but numbers (a string, "nan", a list): the caller decodes it."""
    head = _POINTS_HEAD.match(line)
    if head is None:
        return None
    try:
        names, end = _NAMES.raw_decode(line, head.end())
    except ValueError:
        return None
    if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
        return None
    if not (line.startswith(',"rows":[[', end) and line.endswith("]]}")):
        return None
    rows = line[end + 10 : -3]
    flat = rows.replace("],[", ",")
    if any(c in flat for c in '"{}[]'):
        return None
    numbers = flat.split(",")
    count = int(head.group(2)) - int(head.group(1)) + 1
    if len(numbers) != count * len(names) or rows.count("],[") != count - 1:
        return None
    keys = [json.dumps(name) + ": " for name in names]
    prefix = f'{{"t": {head.group(3)}, "node": {json.dumps(node)}, "values": {{'
    row_start = "}}\n" + prefix + keys[0]
    if len(keys) <= 2 and not any(
        c in keys[-1] for c in "[]"
    ):  # (step, loss) floods: each `,` in a row is the one between its two values
        body = rows.replace(",", ", " + keys[-1]).replace("], " + keys[-1] + "[", row_start) if len(keys) == 2 else \
            rows.replace("],[", row_start)  # fmt: skip
        return prefix + keys[0] + body + "}}\n"
    seps = [row_start] + [", " + key for key in keys[1:]]
    body = "".join(map(operator.add, itertools.islice(itertools.cycle(seps), 1, None), numbers[1:]))
    return prefix + keys[0] + numbers[0] + body + "}}\n"
