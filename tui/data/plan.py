"""A launch's data: the `--data` sources and each host's own (hosts.toml `data = [...]`), each
distinct prefix listed and presigned once for all the job's nodes. The URLs stay beside the specs
(the `launch` op's `data_urls`), never in them."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from remote_agent.spec import DataSource, JobSpec

from ..errors import EXIT_USAGE, GpudeckError
from ..hosts_file import HostsFileError, hosts_path, load_hosts
from .args import DataArg, parse_data
from .listing import S3Lister, Urls

NodeUrls = dict[str, Urls]  # the `data_urls` argument: source index (as text) -> key -> URL
REQUEST_LIMIT = 4 << 20  # serve's MAX_REQUEST_BYTES: a longer launch line is refused unanswered


def host_data(host: str) -> tuple[DataArg, ...]:
    """The host's own sources (hosts.toml `[hosts.NAME] data = ["s3://…:PATH", …]`)."""
    try:
        entry = load_hosts().get(host)
    except HostsFileError as exc:
        raise GpudeckError(str(exc), exc.code) from None
    raw: Any = entry.extra.get("data") if entry is not None else None
    if raw is None:
        return ()
    label = f"{hosts_path()}: [hosts.{host}] data"
    if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
        raise GpudeckError(f'{label}: expected a list of "s3://BUCKET/PREFIX:PATH" strings', EXIT_USAGE)
    return tuple(parse_data(t, label) for t in raw)


class DataPlan:
    def __init__(self, texts: tuple[str, ...] = (), lister: S3Lister | None = None) -> None:
        self.args = tuple(parse_data(t) for t in texts)
        self._lister = lister
        self._listed: dict[tuple[str, str, str], tuple[DataSource, Urls]] = {}

    def for_host(self, host: str) -> tuple[tuple[DataSource, ...], NodeUrls]:
        """The node's sources (the job's, then the host's) and their URLs; blocks (boto3)."""
        sources: list[DataSource] = []
        urls: NodeUrls = {}
        for index, arg in enumerate(self.args + host_data(host)):
            listed, its_urls = self.listed(arg)
            # the host's own sources say so: a node on another host (a resize) gets only the job's
            sources.append(
                replace(listed, path=arg.path, from_host=host if index >= len(self.args) else None)
            )
            if its_urls:
                urls[str(index)] = its_urls
        return tuple(sources), urls

    def listed(self, arg: DataArg) -> tuple[DataSource, Urls]:
        """The prefix's objects and their URLs, listed once per (bucket, prefix, mode)."""
        key = (arg.bucket, arg.list_prefix, arg.mode)
        if key not in self._listed:
            if self._lister is None:
                self._lister = S3Lister()
            self._listed[key] = self._lister.list(arg)
        return self._listed[key]


def check_request_size(spec: JobSpec, urls: NodeUrls) -> None:
    """A launch carrying the listing and its URLs must fit one request line: refused here, in one
    line naming the sources, rather than by the agent."""
    size = len(json.dumps({"op": "launch", "spec": spec.to_wire(), "data_urls": urls}))
    if size > REQUEST_LIMIT - 4096:
        counts = ", ".join(f"{s.url} ({len(s.objects)} objects)" for s in spec.data)
        raise GpudeckError(
            f"--data: {counts}: too many objects for one launch ({size / 1e6:.1f} MB of listing and URLs, "
            f"at most {REQUEST_LIMIT / 1e6:.1f}); use a narrower prefix, an archive, or :mount",
            EXIT_USAGE,
        )
