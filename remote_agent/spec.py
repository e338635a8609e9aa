"""A job's spec, typed: the one definition of what a job is launched with.

The client builds a `JobSpec` (tui/actions), sends its wire form in a `launch` request, and reads
what a job was launched with back through `JobSpec.read`/`Multinode.read`; the agent checks it with
`JobSpec.from_wire` before anything runs and writes the wire form to spec.json. A new field is
added here, once: its type, its default, its wire name and its check.

Nothing here does IO: whether a workdir exists or a watched pid lives is the agent's to check, on
its host (supervision/jobspec.py, supervision/watchspec.py). stdlib only, Python 3.8.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field, fields, replace
from typing import Any, Dict, Mapping, Optional, Tuple, Type, TypeVar

from .names import is_job_id, is_job_name, is_node
from .spec_defaults import DEFAULT_GRACE as DEFAULT_GRACE
from .spec_defaults import DEFAULT_OUTPUT_CAP as DEFAULT_OUTPUT_CAP
from .spec_defaults import MIN_OUTPUT_CAP as MIN_OUTPUT_CAP
from .spec_defaults import SpecError as SpecError

MAX_GRACE = 86400.0
MAX_OUTPUT_CAP = 1 << 50
MAX_PATH = 4096
PID_MAX = 1 << 22  # Linux's PID_MAX_LIMIT: no process id is larger
MAX_PRICE_PER_HOUR = 1e6
MAX_HOLD = 30 * 86400.0  # --hold-on-fail: a month at most
MAX_BUDGET = 1e9
LAUNCHERS = ("torchrun", "none")
MAX_REQUIREMENTS = 1 << 20  # bytes of requirement text carried in a spec
MAX_DATA_OBJECTS = 1 << 20
DATA_MODES = ("copy", "mount")
RUNTIMES = ("auto", "docker", "podman")  # auto: resolved on the host at launch (podman first)
CONTAINER_USERS = ("host", "image")  # host: the agent's uid inside (files written back are the user's)
IPC_MODES = ("private", "host")
MAX_MOUNTS = 64
T = TypeVar("T")


# -- checks, each naming its field -----------------------------------------------------------------


def _number(value: Any, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise SpecError("spec.%s: expected a number between %g and %g, got %r" % (name, low, high, value))
    return float(value)


def _count(value: Any, name: str, low: int = 1, high: int = 1 << 20) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SpecError("spec.%s: expected a whole number %d..%d, got %r" % (name, low, high, value))
    return value


def _text(value: Any, name: str, limit: int = MAX_PATH, empty: bool = False) -> str:
    if not isinstance(value, str) or "\0" in value or len(value) > limit or (not value and not empty):
        raise SpecError(
            "spec.%s: expected %stext of at most %d characters" % (name, "" if empty else "non-empty ", limit)
        )
    return value


def _texts(value: Any, name: str, limit: int = 65536) -> Tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or len(value) > limit:
        raise SpecError("spec.%s: expected a list of text" % name)
    return tuple(_text(v, "%s[%d]" % (name, i), 1 << 20, empty=True) for i, v in enumerate(value))


def _optional(value: Any, check: Any, *args: Any) -> Any:
    return None if value is None else check(value, *args)


def _object(value: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise SpecError("spec.%s: expected an object" % name)
    return value


def _only(obj: Mapping[str, Any], cls: Any, name: str) -> None:
    """Unknown fields are refused: a misspelt one would otherwise be silently ignored."""
    known = {f.name for f in fields(cls)}
    unknown = sorted(k for k in obj if k not in known)
    if unknown:
        raise SpecError("spec%s: unknown field %r" % ("." + name if name else "", unknown[0]))


def _wire(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_wire(v) for v in value]
    if hasattr(value, "to_wire"):
        return value.to_wire()
    return value


def _to_wire(obj: Any) -> Dict[str, Any]:
    """Every field with a value; None (unset) is left out, as the wire always had it."""
    return {f.name: _wire(getattr(obj, f.name)) for f in fields(obj) if getattr(obj, f.name) is not None}


def read(cls: Type[T], obj: Any) -> Optional[T]:
    """For readers (a listing, an old spec.json): `cls.from_wire(obj)`, or None for anything else."""
    try:
        return cls.from_wire(obj) if isinstance(obj, dict) else None  # type: ignore[attr-defined]
    except SpecError:
        return None


# -- the parts -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Price:
    """What the job's host costs and the job's share of it: the supervisor's budget counts with it."""

    per_hour: float
    share: float = 1.0
    currency: str = "USD"
    market: Optional[str] = None  # on-demand, spot…: shown, not computed with
    source: Optional[str] = None

    @classmethod
    def from_wire(cls, obj: Any) -> Price:
        obj = _object(obj, "price")
        _only(obj, cls, "price")
        return cls(
            per_hour=_number(obj.get("per_hour"), "price.per_hour", 0, MAX_PRICE_PER_HOUR),
            share=_number(obj.get("share", 1.0), "price.share", 1e-6, 1),
            currency=_text(obj.get("currency") or "USD", "price.currency", 8),
            market=_optional(obj.get("market"), _text, "price.market", 32),
            source=_optional(obj.get("source"), _text, "price.source", 256),
        )

    def to_wire(self) -> Dict[str, Any]:
        return _to_wire(self)


@dataclass(frozen=True)
class IdleStop:
    """Stop the job when its GPUs stay under `below_pct` for `minutes`, not in its first `grace_minutes`."""

    below_pct: float = 10.0
    minutes: float = 30.0
    grace_minutes: float = 15.0

    @classmethod
    def from_wire(cls, obj: Any) -> IdleStop:
        obj = _object(obj, "idle_stop")
        _only(obj, cls, "idle_stop")
        return cls(
            below_pct=_number(obj.get("below_pct", 10), "idle_stop.below_pct", 0, 100),
            minutes=_number(obj.get("minutes", 30), "idle_stop.minutes", 0.001, 100000),
            grace_minutes=_number(obj.get("grace_minutes", 15), "idle_stop.grace_minutes", 0, 100000),
        )

    def to_wire(self) -> Dict[str, Any]:
        return _to_wire(self)


@dataclass(frozen=True)
class Multinode:
    """One node's place in a multi-node job, and what a resize needs to start more nodes like it."""

    nodes: int  # the node count launched with
    rank: int
    host: str
    hosts: Tuple[str, ...]  # every rank's host, rank order
    launcher: str = "torchrun"  # or "none": the command learns its place from the environment
    nproc_per_node: int = 1
    master_addr: str = "127.0.0.1"
    master_port: int = 29500
    port_chosen: bool = True  # gpudeck chose the port (a resize may choose again)
    command: Tuple[str, ...] = ()  # the user's command, before the launcher's line around it
    pool: Tuple[str, ...] = ()  # hosts the job may scale onto
    pinned: Tuple[str, ...] = ()  # the `--host` list
    setup: Tuple[str, ...] = ()  # the job's own setup lines (not the host's)
    workdir: Optional[str] = None  # as asked (None: each host's default)
    env_keys: Tuple[str, ...] = ()  # names only: the values stay on the hosts
    elastic: Optional[Tuple[int, int]] = None  # (MIN, MAX): torchrun's c10d rendezvous
    hints: Tuple[str, ...] = ()  # the preflight's advice (NCCL interface…)
    round_trips: Tuple[str, ...] = ()  # the preflight's measured round trips ("node 1: 0.42 ms"): NCCL advice

    @classmethod
    def from_wire(cls, obj: Any) -> Multinode:
        obj = _object(obj, "multinode")
        _only(obj, cls, "multinode")
        launcher = obj.get("launcher", "torchrun")
        if launcher not in LAUNCHERS:
            raise SpecError("spec.multinode.launcher: torchrun or none, got %r" % (launcher,))
        elastic = obj.get("elastic")
        if elastic is not None:
            if not (isinstance(elastic, (list, tuple)) and len(elastic) == 2):
                raise SpecError("spec.multinode.elastic: expected [MIN, MAX]")
            elastic = (_count(elastic[0], "multinode.elastic[0]"), _count(elastic[1], "multinode.elastic[1]"))
            if elastic[0] > elastic[1]:
                raise SpecError("spec.multinode.elastic: MIN %d > MAX %d" % elastic)
        return cls(
            nodes=_count(obj.get("nodes"), "multinode.nodes"),
            rank=_count(obj.get("rank"), "multinode.rank", 0),
            host=_text(obj.get("host"), "multinode.host", 256),
            hosts=_texts(obj.get("hosts"), "multinode.hosts"),
            launcher=launcher,
            nproc_per_node=_count(obj.get("nproc_per_node", 1), "multinode.nproc_per_node"),
            master_addr=_text(obj.get("master_addr", "127.0.0.1"), "multinode.master_addr", 256),
            master_port=_count(obj.get("master_port", 29500), "multinode.master_port", 1, 65535),
            port_chosen=bool(obj.get("port_chosen", True)),
            command=_texts(obj.get("command"), "multinode.command"),
            pool=_texts(obj.get("pool"), "multinode.pool"),
            pinned=_texts(obj.get("pinned"), "multinode.pinned"),
            setup=_texts(obj.get("setup"), "multinode.setup"),
            workdir=_optional(obj.get("workdir"), _text, "multinode.workdir"),
            env_keys=_texts(obj.get("env_keys"), "multinode.env_keys"),
            elastic=elastic,
            hints=_texts(obj.get("hints"), "multinode.hints"),
            round_trips=_texts(obj.get("round_trips"), "multinode.round_trips"),
        )

    @classmethod
    def read(cls, obj: Any) -> Optional[Multinode]:
        return read(cls, obj)

    def to_wire(self) -> Dict[str, Any]:
        out = _to_wire(self)
        out["workdir"] = self.workdir  # null means "each host's default", and is said so
        out["elastic"] = list(self.elastic) if self.elastic else None
        return out

    def without_place(self) -> Dict[str, Any]:
        """The job's plan, the same on every node: the wire form without this node's rank and host."""
        return {k: v for k, v in self.to_wire().items() if k not in ("rank", "host")}


@dataclass(frozen=True)
class ResizedFrom:
    """The job a resize replaced, its node count, why, and when the old job last made a step."""

    job: str
    nodes: int
    why: Optional[str] = None
    last_step_at: Optional[float] = None  # added by the agent's restart: the old node's last metric time

    @classmethod
    def from_wire(cls, obj: Any) -> ResizedFrom:
        obj = _object(obj, "resized_from")
        _only(obj, cls, "resized_from")
        if not is_job_id(obj.get("job")):
            raise SpecError("spec.resized_from.job: expected a job id, got %r" % (obj.get("job"),))
        return cls(
            obj["job"],
            _count(obj.get("nodes"), "resized_from.nodes"),
            _optional(obj.get("why"), _text, "resized_from.why", 1024, True),
            _optional(obj.get("last_step_at"), _number, "resized_from.last_step_at", 0, 1e11),
        )

    def to_wire(self) -> Dict[str, Any]:
        return _to_wire(self)


@dataclass(frozen=True)
class Watch:
    """A run gpudeck did not start: its log file, and optionally its pid (stop/kill act on its tree)."""

    path: str
    pid: Optional[int] = None
    pid_start: Optional[int] = None  # the pid's start time (clock ticks): a reused pid is never signalled
    from_end: bool = False
    slurm_job: Optional[str] = None  # `watch --slurm-job`: the watch ends when Slurm says the job ended

    @classmethod
    def from_wire(cls, obj: Any) -> Watch:
        obj = _object(obj, "watch")
        _only(obj, cls, "watch")
        pid = obj.get("pid")
        if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int) or not 1 < pid <= PID_MAX):
            raise SpecError("spec.watch.pid: expected a process id 2..%d, got %r" % (PID_MAX, pid))
        start = obj.get("pid_start")
        if start is not None and (isinstance(start, bool) or not isinstance(start, int) or start < 0):
            raise SpecError("spec.watch.pid_start: expected clock ticks, got %r" % (start,))
        slurm_job = obj.get("slurm_job")
        if slurm_job is not None and not (
            isinstance(slurm_job, str) and slurm_job.isdigit() and len(slurm_job) < 20
        ):
            raise SpecError("spec.watch.slurm_job: expected a Slurm job id (digits), got %r" % (slurm_job,))
        # empty: a watch of a TensorBoard LOGDIR alone (spec.tensorboard), no log file
        path = _text(obj.get("path", ""), "watch.path", empty=True)
        return cls(path, pid, start, bool(obj.get("from_end")), slurm_job)

    def to_wire(self) -> Dict[str, Any]:
        wire: Dict[str, Any] = {
            "path": self.path,
            "pid": self.pid,
            "pid_start": self.pid_start,
            "from_end": self.from_end,
        }
        if self.slurm_job is not None:
            wire["slurm_job"] = self.slurm_job
        return wire


def _hex(value: Any, name: str, length: int = 64) -> str:
    if not (isinstance(value, str) and len(value) == length and all(c in "0123456789abcdef" for c in value)):
        raise SpecError("spec.%s: expected %d lowercase hex digits, got %r" % (name, length, value))
    return value


@dataclass(frozen=True)
class Code:
    """The job's code: a snapshot in the host's content-addressed store (agent dir `code/`), made
    the job's working directory. `home` is the job whose work dir it is: a restart or a resize keeps
    it (and the snapshot), so they run the code the job started with, beside its checkpoints."""

    snapshot: str  # sha256 of the snapshot's manifest
    home: str  # a job id: the work dir is `work/<home>` in the agent dir
    files: int = 0
    bytes: int = 0
    source: Optional[str] = None  # the client's directory, as shown (never read on the host)

    @classmethod
    def from_wire(cls, obj: Any) -> Code:
        obj = _object(obj, "code")
        _only(obj, cls, "code")
        if not is_job_id(obj.get("home")):
            raise SpecError("spec.code.home: expected a job id, got %r" % (obj.get("home"),))
        return cls(
            snapshot=_hex(obj.get("snapshot"), "code.snapshot"),
            home=obj["home"],
            files=_count(obj.get("files", 0), "code.files", 0, 1 << 40),
            bytes=_count(obj.get("bytes", 0), "code.bytes", 0, 1 << 60),
            source=_optional(obj.get("source"), _text, "code.source"),
        )

    def to_wire(self) -> Dict[str, Any]:
        return _to_wire(self)


@dataclass(frozen=True)
class Environment:
    """A Python environment built on the host from requirement text, cached under a key the agent
    derives from (interpreter version, requirements, pip options): built once, reused by every job."""

    requirements: str  # the requirement file's text (pip's format)
    source: str = "requirements.txt"  # where it came from, as shown
    pip_options: Tuple[str, ...] = ()
    python: str = "python3"  # the interpreter the environment is made from (after setup lines)

    @classmethod
    def from_wire(cls, obj: Any) -> Environment:
        obj = _object(obj, "environment")
        _only(obj, cls, "environment")
        return cls(
            requirements=_text(obj.get("requirements"), "environment.requirements", MAX_REQUIREMENTS, True),
            source=_text(obj.get("source") or "requirements.txt", "environment.source"),
            pip_options=_texts(obj.get("pip_options"), "environment.pip_options", 256),
            python=_text(obj.get("python") or "python3", "environment.python"),
        )

    def to_wire(self) -> Dict[str, Any]:
        return _to_wire(self)


@dataclass(frozen=True)
class DataObject:
    key: str
    size: int
    etag: str

    @classmethod
    def from_wire(cls, obj: Any, name: str) -> DataObject:
        if not (isinstance(obj, (list, tuple)) and len(obj) == 3):
            raise SpecError("spec.%s: expected [key, size, etag]" % name)
        return cls(
            _text(obj[0], name + "[0]", 1024),
            _count(obj[1], name + "[1]", 0, 1 << 50),
            _text(obj[2], name + "[2]", 256, True),
        )

    def to_wire(self) -> Any:
        return [self.key, self.size, self.etag]


@dataclass(frozen=True)
class DataSource:
    """Objects of an S3-compatible store put at `path` (relative: in the work dir) before the command
    starts. `copy`: fetched into the host's cache from presigned URLs the client made (they travel
    beside the spec, never in it); `mount`: mounted with the host's s3fs or rclone."""

    url: str  # s3://BUCKET/PREFIX
    path: str
    mode: str = "copy"
    objects: Tuple[DataObject, ...] = ()  # copy: the listing the client made
    endpoint_url: Optional[str] = None
    from_host: Optional[str] = None  # the hosts.toml table it came from; None: the job's own `--data`

    @classmethod
    def from_wire(cls, obj: Any, name: str = "data") -> DataSource:
        obj = _object(obj, name)
        _only(obj, cls, name)
        url = _text(obj.get("url"), name + ".url", 2048)
        if not url.startswith("s3://") or len(url) < 6:
            raise SpecError("spec.%s.url: expected s3://BUCKET[/PREFIX], got %r" % (name, url))
        mode = obj.get("mode", "copy")
        if mode not in DATA_MODES:
            raise SpecError("spec.%s.mode: copy or mount, got %r" % (name, mode))
        raw = obj.get("objects") or []
        if not isinstance(raw, (list, tuple)) or len(raw) > MAX_DATA_OBJECTS:
            raise SpecError("spec.%s.objects: expected a list of [key, size, etag]" % name)
        return cls(
            url=url,
            path=_text(obj.get("path"), name + ".path"),
            mode=mode,
            objects=tuple(DataObject.from_wire(o, "%s.objects[%d]" % (name, i)) for i, o in enumerate(raw)),
            endpoint_url=_optional(obj.get("endpoint_url"), _text, name + ".endpoint_url", 2048),
            from_host=_optional(obj.get("from_host"), _text, name + ".from_host", 256),
        )

    def to_wire(self) -> Dict[str, Any]:
        return _to_wire(self)


_SHM = "0123456789"


def _shm_size(value: Any, name: str) -> str:
    """`16g`, `512m`, `1073741824`: the runtime's size syntax, checked here so it never fails there."""
    text = _text(value, name, 32)
    digits, unit = (text[:-1], text[-1].lower()) if text[-1].lower() in "kmg" else (text, "")
    if not digits or any(c not in _SHM for c in digits) or int(digits) == 0:
        raise SpecError("spec.%s: expected a size such as 16g, 512m or bytes, got %r" % (name, value))
    return digits + unit


@dataclass(frozen=True)
class Mount:
    """`HOST:CONTAINER[:ro]`: a host path (data, a cache) bind-mounted into the job's container."""

    host: str
    container: str
    read_only: bool = False

    @classmethod
    def parse(cls, text: Any, name: str) -> Mount:
        parts = _text(text, name).split(":")
        read_only = len(parts) == 3 and parts[2] == "ro"
        if len(parts) == 3 and parts[2] not in ("ro", "rw"):
            raise SpecError("spec.%s: the third part is ro or rw, got %r" % (name, parts[2]))
        if len(parts) not in (2, 3) or not all(p.startswith(("/", "~")) for p in parts[:2]):
            raise SpecError(
                "spec.%s: expected HOST:CONTAINER[:ro] with absolute paths, got %r" % (name, text)
            )
        if "," in text:
            raise SpecError("spec.%s: a comma is not allowed in a mount (the runtime splits on it)" % name)
        return cls(parts[0], parts[1], read_only)

    def to_wire(self) -> str:
        return "%s:%s%s" % (self.host, self.container, ":ro" if self.read_only else "")


@dataclass(frozen=True)
class Container:
    """The job runs in a container of `image` (remote_agent/containers): the supervisor stays on
    the host and runs the runtime's foreground client as the job's command. `digest` is the image
    id the job ran (pinned by a restart or a resize, so every node runs the same bytes)."""

    image: str
    runtime: str = "auto"
    digest: Optional[str] = None  # sha256:<64 hex>, the image id
    mounts: Tuple[Mount, ...] = ()
    shm_size: Optional[str] = None  # None: half the host's memory (DataLoader workers need room)
    ipc: str = "private"
    user: str = "host"
    gpus: Optional[Tuple[str, ...]] = None  # None: the job's CUDA_VISIBLE_DEVICES, else every GPU of the host

    @classmethod
    def from_wire(cls, obj: Any) -> Container:
        obj = _object(obj, "runtime")
        _only(obj, cls, "runtime")
        image = _text(obj.get("image"), "runtime.image", 512)
        if image.startswith("-") or any(c.isspace() for c in image):
            raise SpecError("spec.runtime.image: expected an image reference, got %r" % (image,))
        runtime = obj.get("runtime", "auto")
        if runtime not in RUNTIMES:
            raise SpecError("spec.runtime.runtime: auto, docker or podman, got %r" % (runtime,))
        digest = obj.get("digest")
        if digest is not None and not (isinstance(digest, str) and digest.startswith("sha256:")):
            raise SpecError("spec.runtime.digest: expected sha256:<64 hex digits>, got %r" % (digest,))
        if digest is not None:
            _hex(digest[7:], "runtime.digest")
        mounts = obj.get("mounts") or []
        if not isinstance(mounts, (list, tuple)) or len(mounts) > MAX_MOUNTS:
            raise SpecError("spec.runtime.mounts: expected a list of HOST:CONTAINER[:ro]")
        ipc = obj.get("ipc", "private")
        if ipc not in IPC_MODES:
            raise SpecError("spec.runtime.ipc: private or host, got %r" % (ipc,))
        user = obj.get("user", "host")
        if user not in CONTAINER_USERS:
            raise SpecError("spec.runtime.user: host or image, got %r" % (user,))
        gpus = obj.get("gpus")
        if gpus is not None:
            gpus = _texts(gpus, "runtime.gpus", 64)
            if not all(g.isdigit() for g in gpus):
                raise SpecError(
                    'spec.runtime.gpus: expected GPU indices such as ["0", "1"], got %r' % (list(gpus),)
                )
        return cls(
            image=image,
            runtime=runtime,
            digest=digest,
            mounts=tuple(Mount.parse(m, "runtime.mounts[%d]" % i) for i, m in enumerate(mounts)),
            shm_size=_optional(obj.get("shm_size"), _shm_size, "runtime.shm_size"),
            ipc=ipc,
            user=user,
            gpus=gpus,
        )

    def to_wire(self) -> Dict[str, Any]:
        return _to_wire(self)


_SLURM_NAME = re.compile(r"^[A-Za-z0-9_.,:+-]{1,128}$")  # a partition, account or QOS (lists with ,)
_SLURM_TIME = re.compile(r"^(\d{1,4}-)?\d{1,6}(:\d{1,2}){0,2}$")  # MM, MM:SS, HH:MM:SS, D-HH[:MM[:SS]]
MAX_SBATCH_ARGS = 64


def _slurm_name(value: Any, name: str) -> str:
    if not isinstance(value, str) or not _SLURM_NAME.match(value):
        raise SpecError(
            "spec.placement.%s: expected 1-128 of A-Z a-z 0-9 _ . , : + -, got %r" % (name, value)
        )
    return value


def _sbatch_args(value: Any) -> Tuple[str, ...]:
    args = _texts(value, "placement.sbatch_args", MAX_SBATCH_ARGS)
    for i, arg in enumerate(args):
        # Each goes to sbatch as one argv item (never through a shell); an option, on one line.
        if not arg.startswith("-") or not arg.isprintable() or len(arg) > 1024:
            raise SpecError(
                "spec.placement.sbatch_args[%d]: expected one printable sbatch option, got %r" % (i, arg)
            )
    return args


@dataclass(frozen=True)
class SlurmPlacement:
    """The job's nodes come from a Slurm allocation: the login node's agent submits it (sbatch) and
    one supervisor per node starts inside it (remote_agent/slurm)."""

    nodes: int = 1
    gpus_per_node: Optional[int] = None  # --gpus-per-node; None: none asked
    time: Optional[str] = None  # --time, Slurm's forms (MM, HH:MM:SS, D-HH…); None: the partition's
    partition: Optional[str] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    sbatch_args: Tuple[str, ...] = ()  # more sbatch options, each one argv item
    launcher: str = "none"  # torchrun: the command is started by torchrun on every node
    nproc_per_node: int = 1
    master_port: int = 29500
    warn_before: Optional[int] = None  # with `time`: seconds before the limit every node stops (checkpoints)
    kind: str = "slurm"

    @classmethod
    def from_wire(cls, obj: Any) -> SlurmPlacement:
        obj = _object(obj, "placement")
        _only(obj, cls, "placement")
        if obj.get("kind", "slurm") != "slurm":
            raise SpecError(
                "spec.placement.kind: slurm is the only placement kind, got %r" % (obj.get("kind"),)
            )
        launcher = obj.get("launcher", "none")
        if launcher not in LAUNCHERS:
            raise SpecError("spec.placement.launcher: torchrun or none, got %r" % (launcher,))
        time_limit = obj.get("time")
        if time_limit is not None and not (isinstance(time_limit, str) and _SLURM_TIME.match(time_limit)):
            raise SpecError(
                "spec.placement.time: expected MM, MM:SS, HH:MM:SS or D-HH[:MM[:SS]], got %r" % (time_limit,)
            )
        return cls(
            nodes=_count(obj.get("nodes", 1), "placement.nodes", 1, 128),
            gpus_per_node=_optional(obj.get("gpus_per_node"), _count, "placement.gpus_per_node", 0, 64),
            time=time_limit,
            partition=_optional(obj.get("partition"), _slurm_name, "partition"),
            account=_optional(obj.get("account"), _slurm_name, "account"),
            qos=_optional(obj.get("qos"), _slurm_name, "qos"),
            sbatch_args=_sbatch_args(obj.get("sbatch_args")),
            launcher=launcher,
            nproc_per_node=_count(obj.get("nproc_per_node", 1), "placement.nproc_per_node", 1, 64),
            master_port=_count(obj.get("master_port", 29500), "placement.master_port", 1, 65535),
            warn_before=_optional(obj.get("warn_before"), _count, "placement.warn_before", 1, 65535),
        )

    @classmethod
    def read(cls, obj: Any) -> Optional[SlurmPlacement]:
        return read(cls, obj)

    def to_wire(self) -> Dict[str, Any]:
        return _to_wire(self)


def _data(value: Any) -> Tuple[DataSource, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or len(value) > 64:
        raise SpecError("spec.data: expected a list of at most 64 sources")
    return tuple(DataSource.from_wire(v, "data[%d]" % i) for i, v in enumerate(value))


# -- the spec --------------------------------------------------------------------------------------


MAX_GPUS_PER_NODE = 64  # what one host can hold (an HGX has 8; a ceiling for typos, not a policy)


@dataclass(frozen=True)
class GpuRequest:
    """GPUs a node of the job asks for: the host's agent assigns that many free ones (of the model,
    when given) at launch and sets CUDA_VISIBLE_DEVICES to them (remote_agent/gpus/)."""

    count: int
    model: Optional[str] = None  # matched case-insensitively within NVML's name ("A100", "H100 80GB")

    @classmethod
    def from_wire(cls, obj: Any) -> GpuRequest:
        obj = _object(obj, "gpus")
        _only(obj, cls, "gpus")
        model = _optional(obj.get("model"), _text, "gpus.model", 64)
        if model is not None and not (model.strip() and model.isprintable()):
            raise SpecError("spec.gpus.model: expected a GPU model name, got %r" % (model,))
        return cls(count=_count(obj.get("count"), "gpus.count", 1, MAX_GPUS_PER_NODE), model=model)

    def to_wire(self) -> Dict[str, Any]:
        return _to_wire(self)

    def __str__(self) -> str:
        return "%d%s" % (self.count, ":" + self.model if self.model else "")


NOTICE_PROVIDERS = ("aws", "aliyun")  # whose metadata service publishes a spot interruption notice


@dataclass(frozen=True)
class PreemptNotice:
    """The host's provider (hosts.toml `provider`) whose interruption notice the job's supervisor
    watches while the job runs, at `metadata_endpoint` when given (remote_agent/preempt/)."""

    provider: str
    metadata_endpoint: Optional[str] = None  # http(s)://HOST[:PORT]; None: the provider's own address

    @classmethod
    def from_wire(cls, obj: Any) -> PreemptNotice:
        obj = _object(obj, "notice")
        _only(obj, cls, "notice")
        provider = obj.get("provider")
        if provider not in NOTICE_PROVIDERS:
            raise SpecError(
                "spec.notice.provider: expected one of %s, got %r" % (", ".join(NOTICE_PROVIDERS), provider)
            )
        url = _optional(obj.get("metadata_endpoint"), _text, "notice.metadata_endpoint", 256)
        if url is not None and not (url.startswith(("http://", "https://")) and url.isprintable()):
            raise SpecError("spec.notice.metadata_endpoint: expected an http:// address, got %r" % (url,))
        return cls(provider=provider, metadata_endpoint=url)

    def to_wire(self) -> Dict[str, Any]:
        return _to_wire(self)


@dataclass(frozen=True)
class Notify:
    """Who hears of the job's end from its host (`[notify]` of the client's config.toml): the URLs
    (remote_agent/notify/send.py: json://, ntfy://, Slack and Discord webhooks; they may hold
    tokens, so they stay in spec.json, 0600, as env values do) and the events sent. The events are
    also in the `jobs` answer (`notify_events`, never the URLs): the user's side tells its own
    targets of the same events (tui/notify_late.py)."""

    urls: Tuple[str, ...]
    events: Tuple[str, ...]

    @classmethod
    def from_wire(cls, obj: Any) -> Notify:
        from .notify.events import HOST_EVENTS
        from .notify.send import kind_of

        obj = _object(obj, "notify")
        _only(obj, cls, "notify")
        urls = _texts(obj.get("urls"), "notify.urls", 2048)
        if len(urls) > 16:  # none: only the user's side tells (its apprise targets), by these events
            raise SpecError("spec.notify.urls: expected up to 16 URLs")
        for i, url in enumerate(urls):
            if kind_of(url) is None:
                raise SpecError("spec.notify.urls[%d]: not a target a host can send to" % i)
        events = _texts(obj.get("events"), "notify.events", 32)
        bad = [e for e in events if e not in HOST_EVENTS]
        if not events or bad:
            raise SpecError("spec.notify.events: some of %s" % ", ".join(HOST_EVENTS))
        return cls(urls=urls, events=events)

    def to_wire(self) -> Dict[str, Any]:
        return _to_wire(self)


STALL_ACTIONS = ("notify", "dump", "stop", "restart")
STALL_RESTARTS = 3  # a chain's stall restarts by default: a job that hangs each time is not looped for ever


@dataclass(frozen=True)
class Stall:
    """When the job counts as stalled (supervision/stall.py): `after` seconds without progress (0:
    never; None: auto, from its own pace), and what then: `notify` (journal, flag, tell), `dump` (that,
    and the stacks of its Python processes: stacks/take.py), `stop`, or `restart`: a graceful stop
    (its checkpoint), then the same spec again as a new job on this host (supervision/stall_restart.py),
    `restarts` more times at most along its chain."""

    after: Optional[float] = None
    action: str = "notify"
    restarts: int = STALL_RESTARTS

    @classmethod
    def from_wire(cls, obj: Any) -> Stall:
        obj = _object(obj, "stall")
        _only(obj, cls, "stall")
        action = obj.get("action", "notify")
        if action not in STALL_ACTIONS:
            raise SpecError("spec.stall.action: %s, got %r" % (" or ".join(STALL_ACTIONS), action))
        restarts = obj.get("restarts", STALL_RESTARTS)
        if isinstance(restarts, bool) or not isinstance(restarts, int) or not 0 <= restarts <= 100:
            raise SpecError("spec.stall.restarts: a count from 0 to 100, got %r" % (restarts,))
        return cls(
            after=_optional(obj.get("after"), _number, "stall.after", 0, 7 * 86400),
            action=action,
            restarts=restarts,
        )

    def to_wire(self) -> Dict[str, Any]:
        out = _to_wire(self)
        out["after"] = self.after  # null means auto, and is said so
        if self.restarts == STALL_RESTARTS:
            del out["restarts"]  # the default: specs written before the field stay as they were
        return out


@dataclass(frozen=True)
class JobSpec:
    id: str
    name: str
    node: str = "0"
    argv: Tuple[str, ...] = ()  # empty only for a watch
    workdir: str = "~"
    env: Mapping[str, str] = field(default_factory=dict)  # values never leave the host once sent
    setup: Tuple[str, ...] = ()  # shell lines run before the command (the host's, then the job's)
    grace: float = DEFAULT_GRACE  # seconds from the stop signal to SIGKILL
    stop_signal: str = "SIGTERM"
    path: Optional[str] = None  # the launcher's PATH (local jobs: the venv it was launched from)
    created_at: Optional[float] = None
    output_cap: int = DEFAULT_OUTPUT_CAP  # bytes of output.log kept; 0: no cap
    gpu_interval: Optional[float] = None
    heartbeat_interval: Optional[float] = None
    price: Optional[Price] = None
    budget: Optional[float] = None  # stop gracefully when the job's cost reaches it (needs price)
    hold_on_fail: Optional[float] = None  # seconds a failed job's node is kept for debugging (hold.py)
    idle_stop: Optional[IdleStop] = None
    multinode: Optional[Multinode] = None
    restart_of: Optional[str] = None  # the job this one restarted
    resized_from: Optional[ResizedFrom] = None
    watch: Optional[Watch] = None
    code: Optional[Code] = None  # a synced snapshot: the work dir is made from it on the host
    environment: Optional[Environment] = None
    data: Tuple[DataSource, ...] = ()
    runtime: Optional[Container] = None  # None: on the bare host
    gpus: Optional[GpuRequest] = None  # None: the job sees what CUDA_VISIBLE_DEVICES says (all)
    notify: Optional[Notify] = None  # None: nobody is told of its end from the host
    stall: Optional[Stall] = None  # None: auto, notify
    placement: Optional[SlurmPlacement] = None  # None: this host's own node (SSH or local)
    notice: Optional[PreemptNotice] = None  # None: no provider's preemption notice is watched
    pty: Optional[bool] = None  # True: the command's output is a pseudo-terminal (ptyrelay.py)
    tensorboard: Optional[str] = None  # a LOGDIR whose event files' scalars are points too (tbread/)
    logger_files: Optional[bool] = None  # False: no lightning_logs/ found and read (loggerfiles/)

    @property
    def key(self) -> str:
        """`id/node`: one node of one job, whatever host it runs on."""
        return "%s/%s" % (self.id, self.node)

    @classmethod
    def from_wire(cls, obj: Any) -> JobSpec:
        """The typed spec, or SpecError naming the first bad field. No IO."""
        obj = _object(obj, "")
        _only(obj, cls, "")
        if not is_job_id(obj.get("id")):
            raise SpecError("spec.id: expected YYYYMMDD-HHMMSS-xxxxxx, got %r" % (obj.get("id"),))
        if not is_job_name(obj.get("name")):
            raise SpecError(
                "spec.name: 1-64 of A-Z a-z 0-9 . _ - (starting alphanumeric), got %r" % (obj.get("name"),)
            )
        node = obj.get("node", "0")
        if not is_node(node):
            raise SpecError("spec.node: 1-32 of A-Z a-z 0-9 . _ -, got %r" % (node,))
        watch = _optional(obj.get("watch"), Watch.from_wire)
        tensorboard = _optional(obj.get("tensorboard"), _text, "tensorboard")
        if watch is not None and not watch.path and tensorboard is None:
            raise SpecError("spec.watch.path: expected the log file (or spec.tensorboard alone)")
        argv = _texts(obj.get("argv"), "argv")
        if watch is None and not argv:
            raise SpecError("spec.argv: expected a non-empty list of strings")
        price = _optional(obj.get("price"), Price.from_wire)
        budget = _optional(obj.get("budget"), _number, "budget", 1e-9, MAX_BUDGET)
        if budget is not None and not (price and price.per_hour):
            raise SpecError("spec.budget: needs spec.price.per_hour (the host's price is unknown)")
        runtime = _optional(obj.get("runtime"), Container.from_wire)
        gpus = _optional(obj.get("gpus"), GpuRequest.from_wire)
        if gpus is not None and watch is not None:
            raise SpecError("spec.gpus: a watch runs nothing to give GPUs to")
        if obj.get("placement") is not None and obj.get("multinode") is not None:
            raise SpecError(
                "spec.placement: a Slurm job's nodes come from its allocation, not spec.multinode"
            )
        restart_of = obj.get("restart_of")
        if restart_of is not None and not is_job_id(restart_of):
            raise SpecError("spec.restart_of: expected a job id, got %r" % (restart_of,))
        return cls(
            id=obj["id"],
            name=obj["name"],
            node=node,
            argv=argv,
            workdir=_text(obj.get("workdir", "~"), "workdir"),
            env=_env(obj.get("env")),
            setup=_texts(obj.get("setup"), "setup"),
            grace=_number(obj.get("grace", DEFAULT_GRACE), "grace", 0, MAX_GRACE),
            stop_signal=_signal(obj.get("stop_signal") or "SIGTERM"),
            path=_optional(obj.get("path"), _text, "path", 65535),
            created_at=_optional(obj.get("created_at"), _number, "created_at", 0, 1e11),
            output_cap=_output_cap(obj.get("output_cap", DEFAULT_OUTPUT_CAP)),
            gpu_interval=_optional(obj.get("gpu_interval"), _number, "gpu_interval", 0.1, 3600),
            heartbeat_interval=_optional(
                obj.get("heartbeat_interval"), _number, "heartbeat_interval", 0.1, 3600
            ),
            price=price,
            budget=budget,
            hold_on_fail=_optional(obj.get("hold_on_fail"), _number, "hold_on_fail", 1, MAX_HOLD),
            idle_stop=_optional(obj.get("idle_stop"), IdleStop.from_wire),
            multinode=_optional(obj.get("multinode"), Multinode.from_wire),
            restart_of=restart_of,
            resized_from=_optional(obj.get("resized_from"), ResizedFrom.from_wire),
            watch=watch,
            code=_optional(obj.get("code"), Code.from_wire),
            environment=_optional(obj.get("environment"), Environment.from_wire),
            data=_data(obj.get("data")),
            runtime=runtime,
            gpus=gpus,
            notify=_optional(obj.get("notify"), Notify.from_wire),
            stall=_optional(obj.get("stall"), Stall.from_wire),
            placement=_optional(obj.get("placement"), SlurmPlacement.from_wire),
            notice=_optional(obj.get("notice"), PreemptNotice.from_wire),
            pty=_optional(obj.get("pty"), _flag, "pty"),
            tensorboard=tensorboard,
            logger_files=_optional(obj.get("logger_files"), _on_by_default, "logger_files"),
        )

    @classmethod
    def read(cls, obj: Any) -> Optional[JobSpec]:
        return read(cls, obj)

    def to_wire(self) -> Dict[str, Any]:
        out = _to_wire(self)
        out["env"] = dict(self.env)
        if not self.data:
            out.pop("data", None)  # as old agents wrote it: no sources, no field
        return out

    def replace(self, **changes: Any) -> JobSpec:
        return replace(self, **changes)


def _on_by_default(value: Any, name: str) -> Optional[bool]:
    if not isinstance(value, bool):
        raise SpecError("spec.%s: expected true or false, got %r" % (name, value))
    return None if value else False  # true is the default: not written, so older agents still read it


def _flag(value: Any, name: str) -> Optional[bool]:
    if not isinstance(value, bool):
        raise SpecError("spec.%s: expected true or false, got %r" % (name, value))
    return value or None  # false is the default: not written, so older agents still read the spec


def _env(value: Any) -> Dict[str, str]:
    env = value or {}
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise SpecError("spec.env: expected an object of string to string")
    for key, val in env.items():
        if not key or "=" in key or "\0" in key or "\0" in val:
            raise SpecError("spec.env: bad variable name %r" % key)
    return dict(env)


def _signal(value: Any) -> str:
    if not (isinstance(value, str) and value.startswith("SIG") and hasattr(signal, value)):
        raise SpecError("spec.stop_signal: unknown signal %r" % (value,))
    return value


def _output_cap(value: Any) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not (value == 0 or MIN_OUTPUT_CAP <= value <= MAX_OUTPUT_CAP)
    ):
        raise SpecError(
            "spec.output_cap: expected bytes: 0 (no cap) or %d..2**50, got %r" % (MIN_OUTPUT_CAP, value)
        )
    return value
