"""How an environment is made: with uv where the job's PATH has it, else `python -m venv` and pip.

Both run in the job's environment (its setup lines and `--env` apply), so pip finds its own
settings (PIP_INDEX_URL, PIP_FIND_LINKS, PIP_NO_INDEX, pip.conf) and uv is given them as flags.
A uv-made environment has no pip of its own (uv's way); a pip-made one has.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import List, Mapping, NamedTuple, Optional

from ..spec import Environment
from .pipconf import uv_index_flags

REQUIREMENTS_NAME = "gpudeck-requirements.txt"  # kept in the environment: what it was built from


class Step(NamedTuple):
    argv: List[str]
    env: Mapping[str, str]


def find_uv(env: Mapping[str, str]) -> Optional[str]:
    return shutil.which("uv", path=env.get("PATH", os.defpath))


def has_requirements(text: str) -> bool:
    """A file of comments and blank lines asks for nothing (and pip would refuse it)."""
    return any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines())


class Plan(NamedTuple):
    tool: str  # "uv" or "pip", as shown
    create: Step  # makes the empty environment (in place: a venv is not relocatable)
    install: Optional[Step]  # reads REQUIREMENTS_NAME, written into it after `create`


def build_plan(directory: Path, environment: Environment, python: str, env: Mapping[str, str]) -> Plan:
    """The commands that make `directory` an environment holding the requirements."""
    requirements = str(directory / REQUIREMENTS_NAME)
    env_python = str(directory / "bin" / "python")
    uv = find_uv(env)
    if uv is not None:
        uv_env = dict(env, UV_NO_PROGRESS="1")  # no spinner redrawn into the job's output
        create = [uv, "venv", "--no-project", "--no-python-downloads", "--python", python, str(directory)]
        install = [uv, "pip", "install", "--python", env_python] + uv_index_flags(env)
        tool, step_env = "uv", uv_env
    else:
        pip_env = dict(env, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_PROGRESS_BAR="off")
        create = [python, "-m", "venv", str(directory)]
        install = [env_python, "-m", "pip", "install"]
        tool, step_env = "pip", pip_env
    wanted = has_requirements(environment.requirements)
    return Plan(
        tool,
        Step(create, step_env),
        Step(install + ["-r", requirements] + list(environment.pip_options), step_env) if wanted else None,
    )
