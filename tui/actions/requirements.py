"""`--requirements FILE|auto|off`: the requirement text a job's environment is built from, read here
on the client (the host gets the text, never a path to it). The host builds and caches the
environment (remote_agent/pyenv).

FILE: a pip requirements file; its `-r FILE` lines are read here and put in its place. Other lines
go as they are (an `--index-url` line works; a `-c FILE` or a local path must exist on the host).
`auto`: in the job's directory (the synced DIR; until `--sync` exists, the workdir of a local job,
else the current directory), the first of `requirements.lock`, `uv.lock` (exported with
`uv export --frozen --no-hashes` when this machine has uv), `requirements.txt`, and
pyproject.toml's `[project].dependencies`. `off`/`none`: no environment (a host's
`requirements = "auto"` in hosts.toml then does not apply).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from remote_agent.spec import MAX_REQUIREMENTS, Environment

from ..hosts_file import LOCAL, hosts_path
from ..tomlfile import BadToml, parse_bytes
from .options import LaunchOptions, usage

AUTO = "auto"
OFF = ("off", "none")
AUTO_FILES = ("requirements.lock", "uv.lock", "requirements.txt", "pyproject.toml")
_INCLUDE = re.compile(r"^\s*(?:-r\s*|--requirement(?:\s+|\s*=\s*))(\S+)\s*(?:#.*)?$")
_MAX_DEPTH = 16


def source_dir(opts: LaunchOptions) -> Path:
    """Where `auto` looks: `--sync`'s DIR first, else a local job's workdir, else here."""
    if opts.sync is not None:
        return Path(os.path.expanduser(opts.sync.directory))
    if opts.workdir and not opts.hosts and opts.host == LOCAL:
        return Path(os.path.expanduser(opts.workdir))
    return Path.cwd()


def environment_for(value: str | None, base: Path, label: str = "--requirements") -> Environment | None:
    """The environment `value` asks for (None: none); a usage error naming the file otherwise."""
    if value is None or value.strip().lower() in OFF:
        return None
    value = value.strip()
    if value == AUTO:
        return _auto(base, f"{label} auto")
    path = Path(os.path.expanduser(value))
    text = _inlined(path, f"{label} {value}", 0)
    return _environment(text, value, f"{label} {value}")


def job_environment(
    requirements: str | None, read: Environment | None, base: str, host: str, settings: dict[str, Any]
) -> Environment | None:
    """A node's environment: --requirements (already `read`), else its host's `requirements` (hosts.toml)."""
    if requirements is not None:
        return read
    label = f"{hosts_path()}: [hosts.{host}] requirements"
    return environment_for(check_value(settings.get("requirements"), label), Path(base), label)


def check_value(value: Any, label: str) -> str | None:
    """A hosts.toml `requirements` value: text (auto, off or a path) or absent."""
    if value is None or (isinstance(value, str) and value.strip()):
        return value
    raise usage(f'{label}: expected "auto", "off" or a requirements file\'s path, got {value!r}')


def _auto(base: Path, label: str) -> Environment:
    for name in AUTO_FILES:
        path = base / name
        if not path.is_file():
            continue
        if name == "uv.lock":
            exported = _uv_export(base, label)
            if exported is None:
                continue  # no uv here: the pyproject's own dependencies, or a requirements.txt
            return _environment(exported, name, f"{label}: {path}")
        if name == "pyproject.toml":
            return _environment(_pyproject(path, f"{label}: {path}"), f"{name} [project].dependencies", label)
        return _environment(_inlined(path, f"{label}: {path}", 0), name, label)
    raise usage(f"{label}: none of {', '.join(AUTO_FILES)} in {base}")


def _read(path: Path, label: str) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise usage(f"{label}: no such file") from None
    except IsADirectoryError:
        raise usage(f"{label}: a directory, not a requirements file") from None
    except OSError as exc:
        raise usage(f"{label}: {exc.strerror or exc}") from None
    if len(data) > MAX_REQUIREMENTS:
        raise usage(f"{label}: {len(data):,} bytes; requirements are carried up to {MAX_REQUIREMENTS:,}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise usage(f"{label}: not UTF-8 text (byte {exc.start})") from None


def _inlined(path: Path, label: str, depth: int) -> str:
    """The file's text with each `-r OTHER` line replaced by OTHER's (relative to the file, as pip reads it)."""
    if depth > _MAX_DEPTH:
        raise usage(f"{label}: -r files nest deeper than {_MAX_DEPTH} (a loop?)")
    lines = []
    for number, line in enumerate(_read(path, label).splitlines(), 1):
        found = _INCLUDE.match(line)
        if found is None:
            lines.append(line)
            continue
        other = Path(os.path.expanduser(found.group(1)))
        other = other if other.is_absolute() else path.parent / other
        lines.append(f"# {line.strip()}")
        lines.append(_inlined(other, f"{label} line {number}: {found.group(1)}", depth + 1).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _pyproject(path: Path, label: str) -> str:
    try:
        doc, _ = parse_bytes(path.read_bytes())
    except BadToml as exc:
        raise usage(f"{label}{f' line {exc.line}' if exc.line else ''}: {exc}") from None
    except OSError as exc:
        raise usage(f"{label}: {exc.strerror or exc}") from None
    project = doc.get("project")
    deps = project.get("dependencies", []) if isinstance(project, dict) else []
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise usage(f"{label}: [project].dependencies: expected a list of requirement strings")
    return "".join(d + "\n" for d in deps)


def _uv_export(base: Path, label: str) -> str | None:
    """uv.lock as pinned requirements (the project itself left out: its code is not an index's)."""
    uv = shutil.which("uv")
    if uv is None:
        return None
    argv = [uv, "export", "--frozen", "--no-hashes", "--no-emit-project", "--format", "requirements.txt"]
    try:
        done = subprocess.run(argv, cwd=base, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise usage(f"{label}: uv export failed: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"status {done.returncode}"])[-1]
        raise usage(f"{label}: uv export failed: {last}")
    return done.stdout


def _environment(text: str, source: str, label: str) -> Environment:
    if len(text.encode("utf-8")) > MAX_REQUIREMENTS:
        raise usage(f"{label}: requirements are carried up to {MAX_REQUIREMENTS:,} bytes")
    return Environment(requirements=text, source=source[:200])
