"""`prepare files`' data step: every `--data` source of the job at its PATH before the command starts
(see __init__). Any failure raises PrepareError naming the source, the object and what the store
answered; PATH then still shows what it showed before (or nothing), never a part of the new data."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from ..prepare.entry import PrepareError
from ..spec import DataObject, DataSource, JobSpec
from .cache import BadKey, is_cached, object_name, objects_dir, tree_files, tree_name, trees_dir
from .download import DownloadError, Stopped, fetch_object
from .mount import MountError, mount
from .progress import Progress, megabytes, say
from .tree import PathTaken, ensure_tree, place_link
from .urls import UrlsError, forget_urls, read_urls

WORKERS = 16  # parallel GETs: small objects are bound by round trips, not bandwidth


def fetch_all(root: Path, spec: JobSpec, job_dir: Path, workdir: Path) -> None:
    try:
        try:
            urls = read_urls(job_dir)
        except UrlsError as exc:
            raise PrepareError(str(exc)) from None
        for index, source in enumerate(spec.data):
            target = target_path(source.path, workdir)
            if source.mode == "mount":
                try:
                    say("gpudeck: data %s: %s" % (source.url, mount(source, target)))
                except (MountError, OSError) as exc:
                    raise PrepareError(str(exc)) from None
            else:
                copy(root, source, urls.get(index, {}), target)
    finally:
        forget_urls(job_dir)


def target_path(path: str, workdir: Path) -> Path:
    """PATH as given: absolute, `~/…`, or relative to the job's working directory."""
    expanded = os.path.expanduser(path)
    return Path(expanded) if os.path.isabs(expanded) else Path(os.path.expanduser(str(workdir))) / expanded


def copy(root: Path, source: DataSource, urls: Dict[str, str], target: Path) -> None:
    started = time.monotonic()
    try:
        files = tree_files(source)
    except BadKey as exc:
        raise PrepareError("data %s: %s" % (source.url, exc)) from None
    objects, trees = objects_dir(root), trees_dir(root)
    name = tree_name(files)
    fetched: Tuple[int, int] = (0, 0)
    if not mark_used(trees / name):  # not there (or just collected by `gpudeck gc`): made anew
        fetched = download_missing(source, files, objects, urls)
        try:
            tree = ensure_tree(trees, name, objects, files)
        except OSError as exc:
            raise PrepareError("data %s: could not link its files: %s" % (source.url, exc)) from None
    else:
        tree = trees / name
    try:
        place_link(target, tree, trees)
    except (PathTaken, OSError) as exc:
        raise PrepareError("data %s: PATH %s" % (source.url, exc)) from None
    total = sum(o.size for _, o in files)
    how = (
        "all cached"
        if fetched[0] == 0
        else "%d fetched (%s), %d cached" % (fetched[0], megabytes(fetched[1]), len(files) - fetched[0])
    )
    say(
        "gpudeck: data %s -> %s: %d objects, %s, %s, ready in %.2f s"
        % (source.url, target, len(files), megabytes(total), how, time.monotonic() - started)
    )


def mark_used(tree: Path) -> bool:
    """The tree's last use (its directory's time), which `gpudeck gc` keeps it by; False: no tree."""
    try:
        os.utime(str(tree))
    except FileNotFoundError:
        return False
    except OSError:
        pass  # not ours to touch (a read-only agent dir): used as it is
    return tree.is_dir()


def download_missing(
    source: DataSource, files: List[Tuple[str, DataObject]], objects: Path, urls: Dict[str, str]
) -> Tuple[int, int]:
    """Fetch the objects the cache lacks, in parallel; (objects, bytes) fetched."""
    todo: List[DataObject] = []
    seen: Set[str] = set()
    for _, obj in files:
        name = object_name(obj)
        if name not in seen and not is_cached(objects / name, obj.size):
            seen.add(name)
            todo.append(obj)
    if not todo:
        return 0, 0
    for obj in todo:
        if obj.key not in urls:
            raise PrepareError(
                "data %s: object %s is not cached on this host and this job brought no URL for it "
                "(it was restarted without URLs: restart it with gpudeck, which presigns them again)"
                % (source.url, obj.key)
            )
    need = sum(o.size for o in todo)
    free = _free_bytes(objects)
    if free is not None and need > free:
        raise PrepareError(
            "data %s: needs %s more on this host, %s free (%s)"
            % (source.url, megabytes(need), megabytes(free), objects)
        )
    progress = Progress(source.url, len(todo), need)
    stop = threading.Event()

    def one(obj: DataObject) -> None:
        fetch_object(urls[obj.key], objects / object_name(obj), obj.size, obj.etag, stop, progress.add_bytes)
        progress.add_object()

    pool = ThreadPoolExecutor(max_workers=min(WORKERS, len(todo)), thread_name_prefix="fetch")
    futures: Dict[Future[None], DataObject] = {pool.submit(one, o): o for o in todo}
    pending = set(futures)
    try:
        while pending:
            done, pending = wait(pending, timeout=Progress.EVERY, return_when=FIRST_EXCEPTION)
            for future in done:
                exc = future.exception()
                if exc is not None and not isinstance(exc, Stopped):
                    raise PrepareError(
                        "data %s: object %s: %s" % (source.url, futures[future].key, _cause(exc))
                    )
            progress.tick()
    finally:
        stop.set()
        pool.shutdown(wait=True)  # in-flight GETs end at their next chunk; their part files stay
    return len(todo), need


def _cause(exc: BaseException) -> str:
    if isinstance(exc, DownloadError):
        return str(exc)
    if isinstance(exc, OSError):
        return "could not write it: %s" % (exc.strerror or exc)
    return "%s: %s" % (type(exc).__name__, exc)


def _free_bytes(path: Path) -> Optional[int]:
    try:
        st = os.statvfs(str(path))
    except OSError:
        return None
    return st.f_bavail * st.f_frsize
