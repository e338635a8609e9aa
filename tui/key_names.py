"""Key names as Textual matches them, for config.toml's [keys]: Textual compares a keymap's keys
as typed, so `"F1"` never fired (a key event says "f1"), `"?"` never matched ("question_mark") and
`"ctrl+o, n"` bound " n". No Textual here (settings are read before any UI exists)."""

from __future__ import annotations

import unicodedata

# Textual's names of some characters (textual.keys.KEY_NAME_REPLACEMENTS) and the usual spellings
# of special keys that Textual names otherwise.
REPLACED = {
    "solidus": "slash",
    "reverse_solidus": "backslash",
    "commercial_at": "at",
    "hyphen_minus": "minus",
    "plus_sign": "plus",
    "low_line": "underscore",
}
ALIASES = {
    "esc": "escape",
    "return": "enter",
    "del": "delete",
    "ins": "insert",
    "pgup": "pageup",
    "pgdn": "pagedown",
    "page_up": "pageup",
    "page_down": "pagedown",
    "space": "space",
    "bs": "backspace",
}
MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")


def character_key(character: str) -> str:
    """A one-character key as Textual names it: letters and digits as they are ("K" is shift+k),
    others by their Unicode name ("?" → "question_mark", "+" → "plus")."""
    if character.isalnum():
        return character
    if character == "\t":
        return "tab"
    try:
        name = unicodedata.name(character).lower().replace("-", "_").replace(" ", "_")
    except ValueError:
        return character
    return REPLACED.get(name, name)


def normalize_key(key: str) -> str:
    """One key: "F1" → "f1", "Ctrl+O" → "ctrl+o", "Esc" → "escape", "?" → "question_mark"."""
    key = key.strip()
    if len(key) == 1:
        return character_key(key)
    *mods, last = key.split("+") if not key.endswith("++") else [*key[:-2].split("+"), "+"]
    mods = [m.strip().lower() for m in mods]
    last = last.strip()
    name = character_key(last) if len(last) == 1 else ALIASES.get(last.lower(), last.lower())
    if mods and len(last) == 1 and last.isalpha():  # "ctrl+K": Textual says "ctrl+shift+k"
        if last.isupper() and "shift" not in mods:
            mods.append("shift")
        name = last.lower()
    return "+".join([*mods, name])


def normalize_keys(keys: str) -> str:
    """A comma-separated list of keys, each normalized; empty parts dropped."""
    return ",".join(normalize_key(k) for k in keys.split(",") if k.strip())


def bad_modifier(keys: str) -> str | None:
    """The first modifier that is none of Textual's (a typo such as "ctl+x"), else None."""
    for key in normalize_keys(keys).split(","):
        for mod in key.split("+")[:-1]:
            if mod not in MODIFIERS:
                return mod
    return None
