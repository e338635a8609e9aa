"""What a launch asks for, typed and checked without IO: the CLI's flags and the TUI's form both
become LaunchOptions, so one set of rules (and one set of messages) holds for both."""

from __future__ import annotations

import math
import os
import re
import shlex
from dataclasses import dataclass
from typing import Protocol

from remote_agent.names import is_job_name
from remote_agent.spec import (  # the agent's bounds: checked here, before anything is sent
    DEFAULT_GRACE,
    MAX_BUDGET,
    MAX_GRACE,
    MAX_PRICE_PER_HOUR,
    Container,
    GpuRequest,
    SpecError,
    Stall,
)
from remote_agent.supervision.outputcap import MIN_OUTPUT_CAP

from ..cost.idle import CostRuleError, parse_idle_stop
from ..data.args import parse_data
from ..errors import EXIT_USAGE, GpudeckError
from ..hosts_file import LOCAL
from ..sync.options import SyncOptions
from .node_bounds import check_node_bounds

DEMO_COMMAND = "python -m trainer --steps 300"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class LaunchOptions:
    argv: tuple[str, ...]
    host: str = LOCAL
    name: str | None = None  # None: from the command (default_name)
    workdir: str | None = None  # None: the current dir on local, the login dir on SSH hosts
    env: tuple[tuple[str, str], ...] = ()  # resolved: a bare K already took the caller's value
    setup: tuple[str, ...] = ()
    # A cached Python environment on the host (tui/actions/requirements.py): a requirements file,
    # `auto` (found in the job's directory) or `off`; None: the host's `requirements`, else none.
    requirements: str | None = None
    grace: float = DEFAULT_GRACE
    pty: bool = False  # the command's output is a pseudo-terminal (spec.pty)
    tensorboard: str | None = None  # a LOGDIR whose event files' scalars are points too (spec.tensorboard)
    logger_files: bool = True  # False: lightning_logs/ is not read (spec.logger_files)
    budget: float | None = None
    price_per_hour: float | None = None  # overrides the host's price for this job
    idle_stop: str | None = None  # `30m@10%+15m` or `off`; None: the host's default
    output_cap: str | None = (
        None  # `500M`, `2G`, `off`; None: the host's `output_cap`, else the agent's 1 GiB
    )
    # Multi-node (tui/actions/nodes.py): nodes placed on `hosts` round-robin (empty: `host`).
    nodes: int = 1
    hosts: tuple[str, ...] = ()
    nproc_per_node: int = 1
    launcher: str | None = None  # "torchrun" | "none"; None: torchrun for 2+ nodes, else as is
    master_addr: str | None = None  # None: the first node's host address
    master_port: int | None = None  # None: a free port chosen on the client (local), else 29500
    # The hosts the job may scale onto (kept in its spec); without `hosts`, the nodes are placed
    # there too, free GPUs first (tui/actions/placement.py).
    pool: tuple[str, ...] = ()
    elastic: tuple[int, int] | None = None  # (MIN, MAX) nodes: torchrun's c10d rendezvous; None: static
    data: tuple[str, ...] = ()  # `s3://BUCKET/PREFIX:PATH[:mount]` each (tui/data)
    # --sync [DIR]: the job runs in a snapshot of DIR sent to its hosts (tui/actions/sync.py);
    # None: hosts.toml's `sync` of its first host, if any
    sync: SyncOptions | None = None
    # A container (issue 28): the image, and how it runs (None: the host's hosts.toml settings).
    image: str | None = None
    container_runtime: str | None = None  # auto | docker | podman
    mounts: tuple[str, ...] = ()  # HOST:CONTAINER[:ro]
    shm_size: str | None = None
    ipc: str | None = None  # private | host
    # GPUs per node (issue 31): the host's agent assigns that many free ones; None: today's meaning
    # (every GPU the job's CUDA_VISIBLE_DEVICES shows, unset: all).
    gpus: GpuRequest | None = None
    restart_of: str | None = None  # a managed job's recovery: the job it goes on from (one chain)
    hold_on_fail: float | None = None  # --hold-on-fail: seconds a failed job's node is kept (actions/hold.py)
    stall: Stall | None = None  # --stall/--stall-action (None: auto, notify)
    notify: tuple[str, ...] | None = None  # --notify EVENT,…: what this job is told of (None: config.toml's)
    # A Slurm host's allocation (issue 30; tui/actions/slurm_launch.py): sbatch's options.
    gpus_per_node: int | None = None
    time_limit: str | None = None  # --time, as Slurm takes it (HH:MM:SS, D-HH…)
    time_warning: int | None = None  # seconds before it every node stops (checkpoints); None: 120, 0: none
    partition: str | None = None  # None: the host's `slurm.partition`, else Slurm's default
    sbatch_args: tuple[str, ...] = ()
    account: str | None = None  # None: the host's `slurm.account` (--account, the launch form's field)
    qos: str | None = None  # None: the host's `slurm.qos` (--qos)

    @property
    def placed_on(self) -> tuple[str, ...]:
        return self.hosts or (self.host,)


def parse_elastic(text: str | None) -> tuple[int, int] | None:
    """`MIN:MAX` node counts (`--elastic 1:4`)."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*([0-9]{1,4})\s*:\s*([0-9]{1,4})\s*", text)
    if not m:
        raise usage(f"--elastic {text!r}: expected MIN:MAX node counts, e.g. 1:4")
    return int(m.group(1)), int(m.group(2))


def parse_gpus(text: str | None, label: str = "--gpus") -> GpuRequest | None:
    """`N` or `N:MODEL` GPUs per node (`--gpus 2:A100`); the model is matched within NVML's name."""
    if text is None:
        return None
    count, _, model = text.strip().partition(":")
    try:
        return GpuRequest.from_wire(
            {"count": int(count) if count.isdigit() else count, "model": model.strip() or None}
        )
    except SpecError as exc:
        what = str(exc).partition(": ")[2]
        raise usage(
            f"{label} {text!r}: expected N or N:MODEL GPUs per node, e.g. 2 or 1:A100 ({what})"
        ) from None


def parse_stall(text: str | None, action: str | None) -> Stall | None:
    """`--stall 10m|90s|auto|off` and `--stall-action notify|dump|stop|restart` as the spec's Stall."""
    if text is None and action is None:
        return None
    after: float | None = None
    word = (text or "auto").strip().lower()
    if word == "off":
        after = 0.0
    elif word != "auto":
        m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*(s|m|h)?", word)
        after = float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2) or "s"] if m else -1.0
        if not 0 < after <= 7 * 86400:
            raise usage(f"--stall {text!r}: a duration (90s, 10m, 2h), auto or off")
    try:
        return Stall.from_wire({"after": after, "action": action or "notify"})
    except SpecError as exc:
        raise usage(f"--stall-action {action!r}: notify, dump, stop or restart ({exc})") from None


def usage(message: str) -> GpudeckError:
    return GpudeckError(message, EXIT_USAGE)


def parse_env(items: list[str] | tuple[str, ...], label: str = "--env") -> tuple[tuple[str, str], ...]:
    """`K=V` sets K; `K` alone takes the caller's value (an error when the caller has none)."""
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not _ENV_NAME.fullmatch(key):
            raise usage(f"{label} {key!r}: not a variable name")
        if not sep:
            if key not in os.environ:
                raise usage(f"{label} {key}: not set in your environment")
            value = os.environ[key]
        env[key] = value
    return tuple(env.items())


def job_env(
    env_files: list[str] | tuple[str, ...], items: list[str] | tuple[str, ...]
) -> tuple[tuple[str, str], ...]:
    """--env-file files in order, then --env items over them: the same pairs --env alone makes
    (secrets alike: values travel only in the node specs, never into the store or a recording)."""
    from .env_file import read_env_file

    env: dict[str, str] = {}
    for path in env_files:
        env.update(read_env_file(path))
    env.update(parse_env(items))
    return tuple(env.items())


def default_name(argv: list[str] | tuple[str, ...], job_id: str) -> str:
    """`python -m trainer` → trainer-xxxx; `python train.py` → train.py-xxxx; `./run.sh` → run.sh-xxxx."""
    prog = os.path.basename(argv[0])
    rest = list(argv[1:])
    if prog in ("torchrun", "accelerate", "deepspeed") or prog.startswith("python"):
        if "-m" in rest[:-1] and prog.startswith("python"):
            prog = rest[rest.index("-m") + 1]
        else:
            scripts = [a for a in rest if a.endswith(".py")]
            prog = os.path.basename(scripts[0]) if scripts else prog
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", prog).strip("-._")[:40] or "job"
    return f"{stem}-{job_id[-4:]}"


# An id is 20261205-155139-942d3d; JOB may be a unique id prefix of 4+ characters, tried before names,
# so a name shaped like one (2026, 20261205-1) could never be addressed: refused at launch.
_ID_PREFIX = re.compile(r"\d{4,8}|\d{8}-\d{0,6}|\d{8}-\d{6}-[0-9a-f]{0,6}")


def check_name(name: str | None) -> None:
    if name is not None and not is_job_name(name):
        raise usage(f"--name {name!r}: use 1-64 of A-Z a-z 0-9 . _ - starting with a letter or digit")
    if name is not None and _ID_PREFIX.fullmatch(name):
        raise usage(
            f"--name {name!r}: looks like the start of a job id, so JOB could never mean it; add a letter"
        )


# --master-addr: a DNS name (labels of 1-63 letters, digits, hyphens), an IPv4 or an IPv6 address.
_ADDRESS = re.compile(
    r"(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?"
    r"|[0-9A-Fa-f:.]{2,45}"
)


def check_grace(grace: float | None, label: str = "--grace") -> float | None:
    """Seconds from 0 to a day (nan, inf, 1e23 are refused before anything is sent)."""
    if grace is not None and (not math.isfinite(grace) or not 0 <= grace <= MAX_GRACE):
        raise usage(f"{label} {grace:g}: must be a number of seconds from 0 to {MAX_GRACE:.0f}")
    return grace


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_output_cap(value: object, label: str = "--output-cap") -> int | None:
    """`500M`, `2G`, `1048576` → bytes; `off` → 0 (no cap); None → None (the default applies)."""
    if value is None:
        return None
    text = str(value).strip()
    if text.lower() in ("off", "0", "none"):
        return 0
    match = _SIZE.fullmatch(text)
    size = int(float(match.group(1)) * _UNITS[match.group(2).upper()]) if match else -1
    if not MIN_OUTPUT_CAP <= size <= 1 << 50:
        raise usage(f"{label} {text!r}: a size of at least 1M (e.g. 500M, 2G), or off")
    return size


def check(opts: LaunchOptions) -> LaunchOptions:
    """Every rule that needs no IO, with the option named in the message; returns opts."""
    if not opts.argv:
        raise usage("run: no command given (gpudeck run [OPTIONS] -- CMD [ARGS...])")
    check_name(opts.name)
    check_grace(opts.grace)
    if opts.budget is not None and (not math.isfinite(opts.budget) or not 0 < opts.budget <= MAX_BUDGET):
        raise usage(f"--budget {opts.budget:g}: must be an amount more than 0, at most {MAX_BUDGET:g}")
    if opts.price_per_hour is not None and (
        not math.isfinite(opts.price_per_hour) or not 0 <= opts.price_per_hour <= MAX_PRICE_PER_HOUR
    ):
        raise usage(
            f"--price-per-hour {opts.price_per_hour:g}: must be an amount from 0 to {MAX_PRICE_PER_HOUR:g}"
        )
    parse_output_cap(opts.output_cap)
    if opts.gpus is not None and "CUDA_VISIBLE_DEVICES" in dict(opts.env):
        raise usage("--gpus and --env CUDA_VISIBLE_DEVICES: choose one (--gpus sets it to the GPUs it gets)")
    try:
        parse_idle_stop(opts.idle_stop)
    except CostRuleError as exc:
        raise usage(str(exc)) from None
    if opts.nodes < 1:
        raise usage(f"--nodes {opts.nodes}: must be at least 1")
    if opts.nproc_per_node < 1:
        raise usage(f"--nproc-per-node {opts.nproc_per_node}: must be at least 1")
    check_node_bounds(opts.nodes, opts.nproc_per_node, opts.host, opts.hosts, opts.pool)
    if opts.launcher not in (None, "torchrun", "none"):
        raise usage(f"--launcher {opts.launcher!r}: torchrun or none")
    if opts.master_addr is not None and not _ADDRESS.fullmatch(opts.master_addr):
        raise usage(f"--master-addr {opts.master_addr!r}: expected a host name or an IP address")
    if opts.master_port is not None and not 1 <= opts.master_port <= 65535:
        raise usage(f"--master-port {opts.master_port}: must be a port number 1-65535")
    if any(not h for h in opts.hosts):
        raise usage("--host: an empty host name in the list")
    if opts.elastic is not None:
        lo, hi = opts.elastic
        if not 1 <= lo <= opts.nodes <= hi:
            raise usage(f"--elastic {lo}:{hi}: needs 1 <= MIN <= --nodes ({opts.nodes}) <= MAX")
        if opts.launcher == "none":
            raise usage("--elastic: torchrun's rendezvous; not with --launcher none")
    if any(not h for h in opts.pool):
        raise usage("--pool: an empty host name in the list")
    for text in opts.data:
        parse_data(text)
    if opts.sync is not None and opts.workdir is not None:
        raise usage("--workdir: a synced job runs in its snapshot of --sync's directory; leave --workdir out")
    check_container(opts)
    return opts


def check_container(opts: LaunchOptions) -> None:
    """--image and its companions, each named: checked by the spec's own rules (remote_agent/spec.py).
    Without --image the companions apply to a host's own `image` (checked once it is known)."""
    try:
        container_of(opts.image or "localhost/checked", opts, None)
    except SpecError as exc:
        raise usage(container_message(exc)) from None


_FLAGS = {
    "image": "--image",
    "runtime": "--runtime",
    "mounts": "--mount",
    "shm_size": "--shm-size",
    "ipc": "--ipc",
}


def container_message(exc: SpecError) -> str:
    """`spec.runtime.mounts[0]: expected …` as the flag that set it: `--mount: expected …`."""
    where, _, what = str(exc).partition(": ")
    field = where.rsplit(".", 1)[-1].split("[")[0]
    return f"{_FLAGS.get(field, '--image')}: {what}"


class ContainerAsk(Protocol):
    """What LaunchOptions and node_spec's JobTerms both carry about a container."""

    @property
    def container_runtime(self) -> str | None: ...
    @property
    def mounts(self) -> tuple[str, ...]: ...
    @property
    def shm_size(self) -> str | None: ...
    @property
    def ipc(self) -> str | None: ...


def container_of(image: str, opts: ContainerAsk, host_runtime: object) -> Container:
    """The job's container: the options over the host's `container_runtime` (hosts.toml)."""
    wire: dict[str, object] = {
        "image": image,
        "runtime": opts.container_runtime or host_runtime or "auto",
        "mounts": list(opts.mounts),
    }
    wire.update({k: v for k, v in (("shm_size", opts.shm_size), ("ipc", opts.ipc)) if v is not None})
    return Container.from_wire(wire)


# -- the TUI's form: free text per field ----------------------------------------------------------


def split_command(command: str) -> list[str]:
    """The form's command line as argv, exactly as it will be launched (no shell involved)."""
    try:
        return shlex.split(command)
    except ValueError as exc:  # an unclosed quote
        raise usage(f"command: {exc}") from None


def parse_budget(text: str) -> float | None:
    text = text.strip().lstrip("$").replace(",", "")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise usage(f"budget: {text!r} is not an amount; e.g. 50 (stop at $50)") from None
    if not math.isfinite(value) or value <= 0:
        raise usage(f"budget: {text!r}: must be more than 0")
    return value


def form_options(
    host: str,
    command: str,
    name: str = "",
    workdir: str = "",
    env: str = "",
    setup: str = "",
    budget: str = "",
    idle_stop: str = "",
    sync: str = "",
    requirements: str = "",
    data: str = "",
    image: str = "",
    gpus: str = "",
) -> LaunchOptions:
    """The new-job form's fields as checked options: env is `K=V K2="a b"`, setup one line per
    line, budget an amount in the host's currency, idle_stop `30m@10%+15m` or `off` (empty: the
    host's default), sync a directory sent as the job's code (empty: none, or the host's `sync`),
    requirements a file, `auto` or `off` (empty: the host's), data `s3://B/P:PATH` items split like
    a shell would. Any `=`, quote or odd character lands in a message, never in a crash. No IO:
    files named here are read by the launch, in its worker."""
    argv = split_command(command)
    if not argv:
        raise usage("command: enter the command to run, e.g. " + DEMO_COMMAND)
    try:
        env_items = shlex.split(env)
    except ValueError as exc:
        raise usage(f"env: {exc}") from None
    try:
        data_items = tuple(shlex.split(data))
    except ValueError as exc:
        raise usage(f"data: {exc}") from None
    return check(
        LaunchOptions(
            argv=tuple(argv),
            host=host,
            name=name.strip() or None,
            workdir=workdir.strip() or None,
            env=parse_env(env_items, "env"),
            setup=tuple(line for line in setup.splitlines() if line.strip()),
            budget=parse_budget(budget),
            idle_stop=idle_stop.strip() or None,
            sync=SyncOptions(directory=sync.strip()) if sync.strip() else None,
            requirements=requirements.strip() or None,
            data=data_items,
            image=image.strip() or None,
            gpus=parse_gpus(gpus.strip() or None, "gpus"),
        )
    )


def preview_name(command: str) -> str:
    """The name a job gets when the form's name is left empty (shown as a placeholder)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return ""
    return default_name(argv, "xxxx") if argv else ""
