"""`gpudeck sync [DIR] --host H`: send DIR's snapshot to hosts (to stage code before a launch);
prints the snapshot id and what was sent: files, bytes, seconds."""

from __future__ import annotations

import argparse
import json

from ..actions.node_spec import host_entry
from ..actions.sync import sync_directory
from ..errors import EXIT_USAGE, GpudeckError
from ..session import LOCAL, Session
from ..sync.options import DEFAULT_MAX_FILE_SIZE, SyncOptions, host_sync_settings, parse_size
from ..sync.progress import ProgressLine


def add_sync_flags(p: argparse.ArgumentParser) -> None:
    """The flags `sync` and `run --sync` share."""
    p.add_argument(
        "--include-git",
        action="store_true",
        help="send .git/ too (left out by default, as the ignore rules are)",
    )
    p.add_argument(
        "--max-file-size",
        metavar="SIZE",
        help="refuse files over SIZE unless listed with --include (default 100M; hosts.toml sync_max_file_size)",
    )
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="PATH",
        help="send this file whatever the ignore rules and the size limit (repeatable)",
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sync",
        help="send a directory's snapshot to hosts (what `run --sync` does first)",
        description="Send an exact snapshot of DIR (default: the current directory) to the hosts' code "
        "stores: files their ignore rules keep (.gitignore files, .git/info/exclude, .gpudeckignore), "
        "each file's bytes once per host. Prints the snapshot id and what was sent.",
    )
    p.add_argument(
        "directory", nargs="?", default=".", metavar="DIR", help="the directory (default: the current one)"
    )
    p.add_argument(
        "--host", default=LOCAL, metavar="H1,H2,...", help="the hosts to send it to (default: local)"
    )
    add_sync_flags(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per host: host, snapshot, files, bytes, sent_files, sent_bytes, "
        "wire_bytes, seconds, already",
    )


def sync_options(args: argparse.Namespace, directory: str, host: str) -> SyncOptions:
    _, host_limit = host_sync_settings(host, host_entry(host).extra)
    limit = (
        parse_size(args.max_file_size)
        if args.max_file_size is not None
        else host_limit
        if host_limit is not None
        else DEFAULT_MAX_FILE_SIZE
    )
    return SyncOptions(
        directory=directory, include_git=args.include_git, max_file_size=limit, include=tuple(args.include)
    )


def progress_for(host: str, files: int, size: int) -> ProgressLine:
    return ProgressLine(f"sync {host}", files, size)


def run(args: argparse.Namespace, session: Session) -> int:
    hosts = [h.strip() for h in args.host.split(",")]
    if any(not h for h in hosts):
        raise GpudeckError("--host: an empty host name in the list", EXIT_USAGE)
    opts = sync_options(args, args.directory, hosts[0])
    _, results = sync_directory(session, opts, hosts, None if args.json else progress_for)
    for synced in results:
        print(json.dumps(synced.to_json()) if args.json else str(synced))
    return 0
