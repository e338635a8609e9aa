"""The presigned URLs a launch brings (`data_urls`): checked, written beside the spec, read once."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Optional

from ..storage.files import write_private_atomic
from . import URLS_NAME

MAX_URL = 8192

Urls = Dict[int, Dict[str, str]]  # source index -> object key -> URL


class UrlsError(ValueError):
    pass


def check_urls(raw: Any, sources: int) -> Optional[Urls]:
    """`{"0": {key: url}, …}` as typed; None for none. The message names the bad part, never a URL."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise UrlsError("data_urls: expected an object {source index: {key: url}}")
    out: Urls = {}
    for index, urls in raw.items():
        if not (isinstance(index, str) and index.isdigit() and int(index) < sources):
            raise UrlsError(
                "data_urls: %r is not the index of one of the spec's %d data sources" % (index, sources)
            )
        if not isinstance(urls, dict):
            raise UrlsError("data_urls[%s]: expected an object {key: url}" % index)
        for key, url in urls.items():
            if not (isinstance(key, str) and isinstance(url, str) and len(url) <= MAX_URL):
                raise UrlsError("data_urls[%s]: expected keys and URLs as strings" % index)
            if not url.startswith(("https://", "http://")):
                raise UrlsError("data_urls[%s][%r]: not an http(s) URL" % (index, key[:200]))
        out[int(index)] = dict(urls)
    return out


def write_urls(job_dir: Path, urls: Urls) -> None:
    body = {str(i): u for i, u in urls.items()}
    write_private_atomic(job_dir / URLS_NAME, json.dumps(body).encode("utf-8"))


def read_urls(job_dir: Path) -> Urls:
    """The URLs a launch brought; {} when none (a restart: only cached objects can be used)."""
    try:
        with open(str(job_dir / URLS_NAME), "rb") as f:
            raw = json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UrlsError("%s: unreadable: %s" % (URLS_NAME, exc)) from None
    if not isinstance(raw, dict):
        return {}
    return {int(k): v for k, v in raw.items() if k.isdigit() and isinstance(v, dict)}


def forget_urls(job_dir: Path) -> None:
    """The URLs are bearer tokens until they expire: gone from the host once the fetch is over."""
    try:
        os.unlink(str(job_dir / URLS_NAME))
    except FileNotFoundError:
        pass
