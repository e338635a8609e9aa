"""`ensure_environment`: the job's environment, reused when its key is built, else built once.

Under `envs/`: `<key>/` (the venv, built in place: a venv is not relocatable), its `gpudeck-ready`
marker written last, and `<key>.lock` (flock) held by the one job building it. A job that finds the
lock held says so once and waits, then reuses what the builder made. A `<key>/` without its marker is
a build that died (killed, disk full, a crash): the next builder wipes it first, so a half-built
environment is never used.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, Optional

from ..prepare.entry import PrepareError
from ..spec import Environment
from ..storage.files import describe_os_error, ensure_private_dir, open_private, write_private_atomic
from .installer import REQUIREMENTS_NAME, build_plan
from .key import Interpreter, InterpreterError, environment_key, interpreter
from .lifetime import end_with_the_job
from .record import RECORD_NAME
from .stream import StepFailed, run_step

READY_NAME = "gpudeck-ready"
USED_NAME = "gpudeck-used"  # touched by every job that uses it (the ready marker's time: its build)
WAITING = "waiting for the environment another job is building"


def envs_root(root: Path) -> Path:
    return root / "envs"


def ensure_environment(
    root: Path, environment: Environment, python: str, job_dir: Optional[Path] = None, context: str = ""
) -> Path:
    """The environment's directory, ready to activate; PrepareError with the cause otherwise.
    `context`: where it runs besides the interpreter (a container's image id), part of the key."""
    end_with_the_job()
    try:
        interp = interpreter(python)
    except InterpreterError as exc:
        raise PrepareError(str(exc)) from None
    key = environment_key(interp.identity, environment, context)
    directory = envs_root(root) / key
    where = ", image %s" % context.split(":")[-1][:12] if context else ""
    label = "%s (%s, python %s%s)" % (key, environment.source, interp.short, where)
    try:
        if job_dir is not None:  # the job object shows the key from now on, built or not
            record = json.dumps({"key": key, "source": environment.source}) + "\n"
            write_private_atomic(job_dir / RECORD_NAME, record.encode("utf-8"))
        ensure_private_dir(envs_root(root))
        lock = envs_root(root) / (key + ".lock")
        if is_ready(directory):
            with held(lock, lambda: None, shared=True):  # `gpudeck gc` holds it while it removes one
                if is_ready(directory):
                    mark_used(directory)
                    say("reused environment %s" % label)
                    return directory
        with held(lock, lambda: say("%s: %s" % (WAITING, label))):
            if not is_ready(directory):  # the job we waited for may have built it
                build(directory, environment, interp, label)
                return directory
            mark_used(directory)
        say("reused environment %s" % label)
        return directory
    except OSError as exc:
        raise PrepareError("environment %s: %s" % (key, describe_os_error(exc))) from None


def mark_used(directory: Path) -> None:
    """The environment's last use (its `used` file's time), which `gpudeck gc` keeps it by."""
    fd = open_private(directory / USED_NAME, os.O_WRONLY | os.O_CREAT)
    try:
        os.utime(fd)
    finally:
        os.close(fd)


def is_ready(directory: Path) -> bool:
    """Built to the end, and its interpreter still there (a removed base python leaves a dead link)."""
    return (directory / READY_NAME).is_file() and (directory / "bin" / "python").exists()


def build(directory: Path, environment: Environment, interp: Interpreter, label: str) -> float:
    """Builds in place under the caller's lock; the seconds it took."""
    started = time.monotonic()
    wipe(directory)
    plan = build_plan(directory, environment, interp.path, os.environ)
    say("building environment %s with %s" % (label, plan.tool))
    try:
        run_step(plan.create.argv, plan.create.env)
        write_private_atomic(directory / REQUIREMENTS_NAME, environment.requirements.encode("utf-8"))
        if plan.install is not None:
            run_step(plan.install.argv, plan.install.env)
    except StepFailed as exc:
        shutil.rmtree(str(directory), ignore_errors=True)  # never ready: nothing to keep
        raise PrepareError(str(exc)) from None
    seconds = time.monotonic() - started
    marker = {"key": directory.name, "tool": plan.tool, "python": interp.path, "seconds": round(seconds, 3)}
    write_private_atomic(directory / READY_NAME, (json.dumps(marker) + "\n").encode("utf-8"))
    say("built environment %s in %.1f s" % (label, seconds))
    return seconds


def wipe(directory: Path) -> None:
    """Whatever a dead build left; its marker first, so no reader takes it for ready meanwhile."""
    try:
        os.unlink(str(directory / READY_NAME))
    except FileNotFoundError:
        pass
    if os.path.lexists(str(directory)):
        say("removing a half-built environment: %s" % directory.name)
        shutil.rmtree(str(directory))


@contextlib.contextmanager
def held(path: Path, on_wait: Callable[[], None], shared: bool = False) -> Iterator[None]:
    """An exclusive (or shared) flock on `path` for a with-block; `on_wait` runs once if another
    job holds it."""
    fd = open_private(path, os.O_RDWR | os.O_CREAT)  # O_CLOEXEC: pip and uv never inherit the lock
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            on_wait()
            fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # closing lets go of the lock


def say(text: str) -> None:
    """A line of the job's output (stderr: the prepare step's stdout carries only the env's path)."""
    sys.stderr.write("gpudeck env: %s\n" % text)
    sys.stderr.flush()
