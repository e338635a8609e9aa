"""`python -m trainer.torchrun ARGS`: torchrun (`python -m torch.distributed.run ARGS`), except for a
stop, and without torchrun when it would only start one worker.

torchrun answers SIGTERM/SIGINT by forwarding the signal to its workers, waiting for them (the trainer
checkpoints and exits 0), and then raising SignalException: exit 1 and a traceback, so a clean stop
looks like a crash. Here that ending is one line on stderr and exit 0, as the trainer itself does.

A node of a restart-mode job (static rendezvous, one worker) does not need torchrun at all: this
process becomes the worker, with torchrun's environment (trainer/direct_launch.py), and skips an
`import torch` on every node of every launch and resize. GPUDECK_FULL_TORCHRUN=1 keeps torchrun.
"""

from __future__ import annotations

import os
import sys
import time

from .direct_launch import direct_worker, exec_worker
from .startup import LAUNCHER_IMPORTED

FULL_TORCHRUN = "GPUDECK_FULL_TORCHRUN"


def main(argv: list[str]) -> int:
    worker = (
        None
        if os.environ.get(FULL_TORCHRUN) == "1"
        else direct_worker(argv, dict(os.environ), sys.executable)
    )
    if worker is not None:
        exec_worker(*worker)  # does not return
    from .stacks import register

    register()  # the launcher's own stack too (its workers register theirs: trainer/__main__.py)
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.run import main as torchrun

    os.environ[LAUNCHER_IMPORTED] = str(time.time())  # the workers' start-up timeline shows it
    try:
        torchrun(argv)
    except SignalException as e:
        # torchrun's agent has already signalled every worker and waited for it (SIGKILL after its
        # own timeout): nothing of the job runs any more.
        print(f"torchrun: stopped by {e.sigval.name}: workers signalled and ended", file=sys.stderr)
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
