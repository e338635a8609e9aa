"""pip's own index settings, for uv: uv reads neither `PIP_*` variables nor pip.conf, so a private
index the user set up for pip is passed to uv as its flags (unless uv's own variable is set).

Read as pip reads them: the config files (global, user, site, then PIP_CONFIG_FILE), each one's
[global] then [install] section, and `PIP_*` variables over all of them.
"""

from __future__ import annotations

import configparser
import os
from typing import Dict, List, Mapping, Optional, Tuple

# pip's setting -> (uv's flag, uv's own variables that win over it, takes a list)
SETTINGS: Tuple[Tuple[str, str, Tuple[str, ...], bool], ...] = (
    ("index-url", "--index-url", ("UV_INDEX_URL", "UV_DEFAULT_INDEX"), False),
    ("extra-index-url", "--extra-index-url", ("UV_EXTRA_INDEX_URL", "UV_INDEX"), True),
    ("find-links", "--find-links", ("UV_FIND_LINKS",), True),
    ("trusted-host", "--allow-insecure-host", ("UV_INSECURE_HOST",), True),
    ("no-index", "--no-index", ("UV_NO_INDEX",), False),
)
_TRUE = ("1", "true", "yes", "on", "y")


def config_files(env: Mapping[str, str]) -> List[str]:
    """pip's config files, in the order pip reads them (a later one wins)."""
    home = os.path.expanduser("~")
    xdg_dirs = (env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":")
    files = [os.path.join(d, "pip", "pip.conf") for d in xdg_dirs if d] + ["/etc/pip.conf"]
    files += [
        os.path.join(home, ".pip", "pip.conf"),
        os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "pip", "pip.conf"),
    ]
    if env.get("VIRTUAL_ENV"):
        files.append(os.path.join(env["VIRTUAL_ENV"], "pip.conf"))
    chosen = env.get("PIP_CONFIG_FILE")
    if chosen == os.devnull:  # pip's way to read no file at all
        return []
    if chosen:
        files.append(chosen)
    return files


def pip_settings(env: Mapping[str, str]) -> Dict[str, str]:
    """The index settings pip would use: name -> raw value."""
    found: Dict[str, str] = {}
    for path in config_files(env):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue  # pip would refuse it loudly; the build's own pip run will say so
        for section in ("global", "install"):
            if parser.has_section(section):
                for name, _, _, _ in SETTINGS:
                    if parser.has_option(section, name):
                        found[name] = parser.get(section, name)
    for name, _, _, _ in SETTINGS:
        variable = "PIP_" + name.upper().replace("-", "_")
        if variable in env:
            found[name] = env[variable]
    return found


def uv_index_flags(env: Mapping[str, str]) -> List[str]:
    """uv flags saying what pip's settings say; a setting uv already has its own variable for is left to uv."""
    settings = pip_settings(env)
    flags: List[str] = []
    for name, flag, uv_variables, many in SETTINGS:
        value: Optional[str] = settings.get(name)
        if value is None or any(v in env for v in uv_variables):
            continue
        if flag == "--no-index":
            if value.strip().lower() in _TRUE:
                flags.append(flag)
            continue
        values = value.split() if many else [value.strip()]
        for item in values:
            if item:
                flags += [flag, item]
    return flags
