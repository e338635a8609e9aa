"""The data of a job already launched, presigned again for a restart, a resize or an elastic join.

A presigned URL expires (6 h) and the agent deletes its copy once a fetch is over, so every new
start of a job's node needs new ones: without them a host fetches nothing and a node whose cache
lacks an object (a new host, an evicted cache) fails.

What the new start gets: by default the launch's own listing -- the same keys with the same ETags
and sizes (training runs on the data it started with) -- presigned again. Each source's prefix is
listed again to check that: an object deleted or rewritten since the launch is an error naming it,
before anything is stopped. `refresh=True` (`--refresh-data`) takes the prefix's current listing
instead, for the job's sources and the host's own alike.
"""

from __future__ import annotations

from dataclasses import replace

from remote_agent.spec import DataObject, DataSource

from ..errors import EXIT_USAGE, GpudeckError
from .args import DataArg
from .listing import S3Lister
from .plan import DataPlan, NodeUrls


def arg_of(source: DataSource) -> DataArg:
    """The `--data` argument a kept source was listed from."""
    bucket, _, prefix = source.url[len("s3://") :].partition("/")
    text = f"{source.url}:{source.path}" + (":mount" if source.mode == "mount" else "")
    return DataArg(bucket=bucket, prefix=prefix.strip("/"), path=source.path, mode=source.mode, text=text)


class DataRenewal:
    """One per restart or resize: each prefix listed once for all the job's nodes."""

    def __init__(self, refresh: bool = False, lister: S3Lister | None = None) -> None:
        self.refresh = refresh
        self._plan = DataPlan((), lister)  # lists each (bucket, prefix) once, the hosts' own sources too

    def renew(self, sources: tuple[DataSource, ...]) -> tuple[tuple[DataSource, ...], NodeUrls]:
        """The node's sources (the kept listing, or with `refresh` the current one) and a URL for
        each of their objects, by source index; blocks (boto3)."""
        out: list[DataSource] = []
        urls: NodeUrls = {}
        for index, source in enumerate(sources):
            if source.mode != "copy":
                out.append(source)
                continue
            current, current_urls = self._plan.listed(arg_of(source))
            if self.refresh:
                renewed = replace(source, objects=current.objects, endpoint_url=current.endpoint_url)
            else:
                check_unchanged(source, current)
                renewed = source
            out.append(renewed)
            urls[str(index)] = {o.key: current_urls[o.key] for o in renewed.objects}
        return tuple(out), urls

    def for_new_host(
        self, job_sources: tuple[DataSource, ...], host: str
    ) -> tuple[tuple[DataSource, ...], NodeUrls]:
        """A node on a host the job is not on yet: the job's own sources (renewed as above), then
        that host's own (hosts.toml `data`), listed now: it never had a listing of them."""
        own, urls = self.renew(tuple(s for s in job_sources if s.from_host is None))
        theirs, their_urls = self._plan.for_host(host)
        for index, u in their_urls.items():
            urls[str(len(own) + int(index))] = u
        return own + theirs, urls


def check_unchanged(kept: DataSource, current: DataSource) -> None:
    """Every object of the kept listing still in the store with its ETag and size; else one line
    naming the first that is not (and how to take the current data instead)."""
    now: dict[str, DataObject] = {o.key: o for o in current.objects}
    for obj in kept.objects:
        found = now.get(obj.key)
        if found is None:
            why = "is gone from the store"
        elif (found.etag.strip('"'), found.size) != (obj.etag.strip('"'), obj.size):
            why = f"changed since the job was launched (ETag {obj.etag} → {found.etag})"
        else:
            continue
        raise GpudeckError(
            f"--data {kept.url}: object {obj.key} {why}; the job keeps the data it was launched with: "
            "--refresh-data takes the current objects instead",
            EXIT_USAGE,
        )
