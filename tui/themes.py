"""Themes are data: TOML files under themes/ (shipped) and <config dir>/themes/ (the user's)
become Textual Theme objects, with gpudeck's own variables for GPU levels and cost."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from textual.color import Color, ColorParseError
from textual.theme import Theme

from . import paths
from .tomlfile import TOMLDecodeError, read_toml


def _builtin_dir() -> Path:
    """themes/ beside the packages (a checkout or editable install), else where a wheel put it."""
    source = Path(__file__).resolve().parent.parent / "themes"
    if source.is_dir():
        return source
    return Path(sys.prefix) / "share" / "gpudeck" / "themes"


BUILTIN_DIR = _builtin_dir()
DEFAULT_THEME = "gpudeck-dark"
COLOR_KEYS = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "warning",
    "error",
    "success",
)
APP_VARIABLES = (
    "text-muted",  # Textual's own, given a solid colour by gpudeck's themes (see solid_muted)
    "gpu-idle",
    "gpu-moderate",
    "gpu-busy",
    "cost",
    "gpu-hot",
    "power-over",
    "cloud-waste",
    "spark-mem",
    "spark-power",
    "spark-temp",
    "spark-loss",
)
# Fallbacks for any theme without our variables (Textual's own, picked from the palette); named
# colours, so these too are data Textual parses, not literals baked into the stylesheets.
VARIABLE_DEFAULTS = {
    "gpu-idle": "ansi_bright_black",
    "gpu-moderate": "ansi_yellow",
    "gpu-busy": "ansi_green",
    "cost": "ansi_cyan",
    "gpu-hot": "ansi_bright_red",
    "power-over": "ansi_bright_magenta",
    "cloud-waste": "ansi_bright_yellow",
    "spark-mem": "ansi_blue",
    "spark-power": "ansi_yellow",
    "spark-temp": "ansi_red",
    "spark-loss": "ansi_magenta",
}


def solid_muted(variables: dict[str, str]) -> dict[str, str]:
    """variables with `text-muted` opaque. Textual derives it as "auto 60%", a colour with alpha that
    a DataTable cell resolves to black: invisible on a dark table (contrast 1.0-1.3). A theme that
    sets its own keeps it; otherwise 60 % of the foreground over the background, as Textual meant."""
    try:
        if Color.parse(variables.get("text-muted", "")).a == 1:
            return variables
    except ColorParseError:  # "auto 60%" is CSS, not a colour
        pass
    try:
        back, fore = Color.parse(variables["background"]), Color.parse(variables["foreground"])
    except (ColorParseError, KeyError):
        return variables
    return {**variables, "text-muted": back.blend(fore, 0.6).hex}


class ThemeError(Exception):
    """A theme file that cannot be used; the message names the file and the problem."""


@dataclass
class ThemeSet:
    themes: list[Theme] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # one line per bad file, for notifications

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.themes]


def _color(path: Path, key: str, value: object) -> str:
    if not isinstance(value, str):
        raise ThemeError(f"{path.name}: {key} must be a colour string")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeError(f"{path.name}: {key} = {value!r} is not a colour") from None
    return value


def load_theme(path: Path) -> Theme:
    try:
        data = read_toml(path)
    except (OSError, TOMLDecodeError) as exc:
        raise ThemeError(f"{path.name}: {exc}") from None
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ThemeError(f"{path.name}: needs a `name`")
    colors = data.get("colors", {})
    variables = data.get("variables", {})
    if not isinstance(colors, dict) or not isinstance(variables, dict):
        raise ThemeError(f"{path.name}: [colors] and [variables] must be tables")
    unknown = set(colors) - set(COLOR_KEYS)
    if unknown:
        raise ThemeError(
            f"{path.name}: unknown colour {sorted(unknown)[0]!r} (known: {', '.join(COLOR_KEYS)})"
        )
    if "primary" not in colors:
        raise ThemeError(f"{path.name}: [colors] needs at least `primary`")
    c = {str(k): _color(path, str(k), v) for k, v in colors.items()}  # TOML keys are strings
    var = {str(k): _color(path, str(k), v) for k, v in variables.items()}
    return Theme(
        name=name.strip(),
        primary=c["primary"],
        secondary=c.get("secondary"),
        accent=c.get("accent"),
        foreground=c.get("foreground"),
        background=c.get("background"),
        surface=c.get("surface"),
        panel=c.get("panel"),
        boost=c.get("boost"),
        warning=c.get("warning"),
        error=c.get("error"),
        success=c.get("success"),
        dark=bool(data.get("dark", True)),
        variables=var,
    )


def theme_dirs() -> list[Path]:
    """Shipped themes first; a user's file with the same name replaces the shipped one."""
    return [BUILTIN_DIR, paths.config_dir() / "themes"]


def load_themes(dirs: list[Path] | None = None) -> ThemeSet:
    found: dict[str, Theme] = {}
    result = ThemeSet()
    for d in dirs if dirs is not None else theme_dirs():
        for path in sorted(d.glob("*.toml")) if d.is_dir() else ():
            try:
                theme = load_theme(path)
            except ThemeError as exc:
                result.errors.append(f"theme {exc}")
                continue
            found[theme.name] = theme
    result.themes = list(found.values())
    return result
