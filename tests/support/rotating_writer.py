"""A training run gpudeck did not start: prints `step=N loss=X` lines into a log file, rotating it
(rename + new file) and truncating it (copytruncate) as logrotate would.

    python rotating_writer.py LOG COPY PLAN [--linger]

PLAN is a comma list of actions: `lines:N` appends N more steps, `rotate` renames LOG to LOG.1
and starts a new LOG, `copytruncate` copies LOG to LOG.2 and truncates it in place (the writer
keeps its descriptor, O_APPEND, as a program under nohup would). Before each rotation it waits
until COPY (the watch job's output.log) holds the last step written: a watcher that keeps up.
With --linger it then sleeps until killed (a run that is still alive).
"""

from __future__ import annotations

import os
import shutil
import sys
import time


def wait_copied(copy: str, step: int, timeout: float = 30.0) -> None:
    needle = f"step={step} loss=".encode()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(copy, "rb") as f:
                if needle in f.read():
                    return
        except OSError:
            pass
        time.sleep(0.01)
    sys.exit(f"rotating_writer: {copy} never got step {step}")


def main() -> None:
    log, copy, plan = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    step = 0
    for action in plan:
        if action.startswith("lines:"):
            for _ in range(int(action.split(":")[1])):
                step += 1
                os.write(fd, f"step={step} loss={1.0 / step:.6f}\n".encode())
        elif action == "rotate":
            wait_copied(copy, step)
            os.close(fd)
            os.rename(log, log + ".1")
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        elif action == "copytruncate":
            wait_copied(copy, step)
            shutil.copyfile(log, log + ".2")
            os.truncate(log, 0)
        else:
            sys.exit(f"rotating_writer: unknown action {action!r}")
    print(f"wrote {step} steps", flush=True)
    if "--linger" in sys.argv:
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main()
