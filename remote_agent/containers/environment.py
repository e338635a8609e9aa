"""`--requirements` with `--image`: the job's environment is built inside its container, by the
image's python, on a cache directory mounted from the host.

Where each part runs: the spec's setup lines (the host's hosts.toml lines, then the job's) run on
the host, before the runtime is called -- they may log in to a registry or set the runtime's own
settings, and the image's shell could not run a host's `module load` or `conda activate` anyway;
what an image needs activated it activates itself (its ENV PATH). Then, on the host, `prepare image`
(present.py) makes the image present and records its id. Inside the container, gpudeck's PID 1 runs
a short script: `prepare env JOB_DIR --in-container` with the image's python (this very agent,
mounted read-only), which builds or reuses `envs/<key>/` (the key holds the image id: an image's
environment is never a host's, nor another image's, even where the python path and version match),
activates it, and execs the command.

Mounted at their host paths (a venv is not relocatable, and `gpudeck gc` on the host removes what
was built inside): the node's dir (spec.json, the image id, the environment record) and `envs/`.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import List, Tuple

import remote_agent

from ..prepare import PREPARE_FAILED
from ..prepare.entry import agent_root
from ..pyenv.build import envs_root
from ..supervision.jobspec import shell_script

AGENT_AT = "/.gpudeck/agent"  # this agent inside the container (read-only)


def agent_mount() -> Tuple[str, str, List[str]]:
    """(host path, path inside, the arguments after a python that run it inside)."""
    loader = getattr(remote_agent, "__loader__", None)
    archive = getattr(loader, "archive", None)
    if archive:  # the zipapp
        inside = AGENT_AT + ".pyz"
        return str(archive), inside, [inside]
    package = Path(remote_agent.__file__).resolve().parent
    boot = "import sys; sys.path.insert(0, %r); from remote_agent.__main__ import main; main()" % AGENT_AT
    return str(package), AGENT_AT + "/remote_agent", ["-c", boot]


def environment_mounts(job_dir: Path) -> List[str]:
    """`-v` flags for the agent, the node's dir and `envs/` (job_dir resolved: paths match inside)."""
    source, inside, _ = agent_mount()
    envs = str(envs_root(agent_root(job_dir)))
    node = str(job_dir)
    return ["-v", "%s:%s:ro" % (source, inside), "-v", "%s:%s" % (node, node), "-v", "%s:%s" % (envs, envs)]


def inner_command(job_dir: Path, python: str, shell: str) -> List[str]:
    """The argv PID 1 runs in front of the user's: build or reuse, activate, exec."""
    _, _, agent = agent_mount()
    step = [python] + agent + ["prepare", "env", str(job_dir), "--in-container"]
    # The agent itself runs on that python: without it the shell's `not found` would be all we said.
    missing = shlex.quote("gpudeck: the image has no %s (the environment's python)" % python)
    check = "command -v %s >/dev/null 2>&1 || { echo %s >&2; exit %d; }\n" % (
        shlex.quote(python),
        missing,
        PREPARE_FAILED,
    )
    return [shell, "-c", check + shell_script([], None, None, step, python), "gpudeck-env"]
