"""The rules every reader's values end with, so a JSON line, a tqdm bar and a plain log agree.

``step`` is the first of its synonyms present; ``loss`` is the training loss, derived from a
smoothed loss or from the sum of its parts when the line prints no plain ``loss`` (never from a
GAN's parts); on an evaluation line every value but the indexes and names that carry a split is
labelled ``val_``. What ``loss`` means, in full: README.md beside this file.
"""

from __future__ import annotations

from typing import Dict

from .canonical import PLAIN_INDEXES, is_signal, split_of
from .formats import sum_of
from .values import Number

Values = Dict[str, Number]

# Names that count optimizer steps, in the order of trust; the first present becomes "step".
_STEP_SYNONYMS = ("global_step", "num_updates", "iteration", "iter")
_GAN_PARTS = frozenset(["d", "g", "disc", "gen", "discriminator", "generator", "d_real", "d_fake"])
# A word that names a GAN's player or objective. A GAN has no single training loss: its
# generator and discriminator losses pull against each other, so their sum is no loss at all.
_GAN_WORDS = frozenset(
    ["d", "g", "disc", "discrim", "discriminator", "gen", "generator", "gan", "adv", "adversarial",
     "real", "fake"]
)  # fmt: skip
_NOT_COMPONENTS = frozenset(["loss_avg", "loss_epoch"])


def finalise(values: Values, evaluation: bool = False) -> Values:
    """Resolve step synonyms, pick the training loss, and label an evaluation line's values."""
    if "step" not in values:
        for name in _STEP_SYNONYMS:
            if name in values:
                values["step"] = values.pop(name)
                break
    if "loss" not in values:
        _derive_loss(values)
    if evaluation:
        values = {_as_validation(name): value for name, value in values.items()}
    return values


def _derive_loss(values: Values) -> None:
    """Only a smoothed loss or only its parts: that is the loss the line reports."""
    for smoothed in ("loss_avg", "loss_epoch"):
        if smoothed in values:
            values["loss"] = values.pop(smoothed)
            return
    parts = [n for n in values if _is_component(n)]
    if len(parts) >= 2 and not any(_is_gan(n) for n in parts):
        values["loss"] = sum_of([values[n] for n in parts])


def _is_gan(name: str) -> bool:
    return any(word in _GAN_WORDS for word in name.split("_"))


def _is_component(name: str) -> bool:
    if name in _NOT_COMPONENTS or split_of(name) or not is_signal(name):
        return False
    if name.endswith("_loss"):
        return name[:-5] not in _GAN_PARTS
    if name.startswith("loss_"):
        return name[5:] not in _GAN_PARTS
    return False


def _as_validation(name: str) -> str:
    if name in PLAIN_INDEXES or split_of(name):
        return name
    return "val_" + name
