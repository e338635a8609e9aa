"""Tiny pure-Python wheels made by hand (no build backend, no network) and a static index of them,
for pip and uv to install offline: a local wheel directory (PIP_FIND_LINKS) or a PEP 503 simple
index served from 127.0.0.1 (PIP_INDEX_URL)."""

from __future__ import annotations

import base64
import hashlib
import http.server
import shutil
import sys
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(directory: Path, name: str, version: str = "0.1", body: str = "") -> Path:
    """`name-version-py3-none-any.whl` in `directory`: a module `name` whose VERSION is `version`."""
    directory.mkdir(parents=True, exist_ok=True)
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": f"VERSION = {version!r}\n{body}",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: gpudeck-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(
        f"{path},{_record_hash(text.encode())},{len(text.encode())}\n" for path, text in files.items()
    )
    files[f"{dist}/RECORD"] = record + f"{dist}/RECORD,,\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel


def make_index(root: Path, wheels: list[Path]) -> Path:
    """A PEP 503 simple index of `wheels` under root/simple (static files)."""
    simple = root / "simple"
    for wheel in wheels:
        project = simple / wheel.name.split("-")[0].lower().replace("_", "-")
        project.mkdir(parents=True, exist_ok=True)
        (project / wheel.name).write_bytes(wheel.read_bytes())
        (project / "index.html").write_text(
            f'<html><body><a href="{wheel.name}">{wheel.name}</a></body></html>\n'
        )
    return simple


@contextmanager
def serve_index(root: Path) -> Iterator[str]:
    """root served over HTTP on 127.0.0.1; yields its simple index's URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()


def uv_binary() -> str | None:
    """uv, where this machine has it: the `uv` package (a dev dependency) or PATH."""
    try:
        import uv  # type: ignore[import-not-found]

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def job_path(directory: Path, uv: str | None = None) -> str:
    """A PATH for jobs whose python3 is this interpreter, with uv (given) or without any (hidden)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "python3").symlink_to(sys.executable)
    if uv is not None:
        (directory / "uv").symlink_to(uv)
    return f"{directory}:/usr/bin:/bin"
