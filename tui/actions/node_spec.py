"""A launch in one pass: what a job asks of every node is checked once into `JobTerms`, then each
node's `JobSpec` is made from those terms and its host's own (hosts.toml: setup lines, price,
output cap, idle stop default; the host's GPUs for the job's share). The CLI's `run`, the TUI's form,
a resize's node on a new host (`newnode.py`) and an elastic join all make node specs here alone."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from remote_agent.spec import (
    DEFAULT_GRACE,
    DEFAULT_OUTPUT_CAP,
    Code,
    Container,
    Environment,
    GpuRequest,
    IdleStop,
    JobSpec,
    Multinode,
    Notify,
    Price,
    SpecError,
    Stall,
)

from ..cost.rules import CostRuleError, launch_share, parse_idle_stop, spec_cost_fields
from ..cost.settings import HostPrice, host_price
from ..errors import GpudeckError
from ..hosts_file import LOCAL, HostEntry, HostsFileError, hosts_path, load_hosts
from .agents import Agents
from .notice_spec import preempt_notice
from .options import (
    LaunchOptions,
    container_message,
    container_of,
    default_name,
    parse_output_cap,
    usage,
)
from .requirements import environment_for, job_environment, source_dir


@dataclass(frozen=True)
class JobTerms:
    """What a job asks of every node, whatever its host (options.check already passed on them)."""

    id: str
    name: str
    command: tuple[str, ...]  # the user's argv (a node's launcher line is made around it)
    env: tuple[tuple[str, str], ...] = ()
    setup: tuple[str, ...] = ()  # the job's own lines (each host's run first)
    workdir: str | None = None  # None: each host's default
    grace: float = DEFAULT_GRACE
    output_cap: int | None = None  # None: each host's `output_cap`, else the spec's default
    budget: float | None = None
    price_per_hour: float | None = None  # overrides each host's price
    idle_stop: str | None = None  # None: each host's default; "off": none
    requirements: str | None = None  # --requirements as given; None: each host's `requirements`
    environment: Environment | None = None  # read from it, once for every node
    source_dir: str = "."  # where `auto` looks (a host's `requirements = "auto"` too)
    code: Code | None = None  # a synced snapshot: the job runs in it (the agent sets the workdir)
    image: str | None = None  # None: each host's `image` (hosts.toml), else the bare host
    container_runtime: str | None = None
    mounts: tuple[str, ...] = ()
    shm_size: str | None = None
    ipc: str | None = None
    gpus: GpuRequest | None = None  # per node: the host's agent assigns them at launch
    restart_of: str | None = None  # the job this one goes on from (a managed job's recovery)
    hold_on_fail: float | None = None  # seconds a failed job's node is kept for debugging
    notify: tuple[str, ...] | None = None  # `run --notify`: the events told of it (None: config.toml's)
    stall: Stall | None = None  # when it counts as stalled, and what then (None: auto, notify)
    pty: bool = False
    tensorboard: str | None = None  # a LOGDIR (relative: to the work dir) read as points by the agent
    logger_files: bool = True  # the agent finds and reads lightning_logs/ under the work dir

    @classmethod
    def of_options(cls, opts: LaunchOptions, job_id: str) -> JobTerms:
        return cls(
            id=job_id,
            name=opts.name or default_name(opts.argv, job_id),
            command=tuple(opts.argv),
            env=opts.env,
            setup=opts.setup,
            workdir=opts.workdir,
            grace=opts.grace,
            output_cap=parse_output_cap(opts.output_cap),
            budget=opts.budget,
            price_per_hour=opts.price_per_hour,
            idle_stop=opts.idle_stop,
            requirements=opts.requirements,
            environment=environment_for(opts.requirements, source_dir(opts)),
            source_dir=str(source_dir(opts)),
            image=opts.image,
            container_runtime=opts.container_runtime,
            mounts=opts.mounts,
            shm_size=opts.shm_size,
            ipc=opts.ipc,
            gpus=opts.gpus,
            restart_of=opts.restart_of,
            hold_on_fail=opts.hold_on_fail,
            notify=opts.notify,
            stall=opts.stall,
            pty=opts.pty,
            tensorboard=opts.tensorboard,
            logger_files=opts.logger_files,
        )


def job_notify(host: str, asked: tuple[str, ...] | None) -> Notify | None:
    """config.toml's [notify] for this host, as the host sends it (tui/notify_targets.py)."""
    from ..notify_late import remember
    from ..notify_targets import late_urls, spec_notify
    from ..settings import load_or_default

    notify = load_or_default()[0].notify  # a broken file was said already, by the command's start
    remember(late_urls(notify.urls_for(host)))  # its user's-side targets count from this launch on
    return spec_notify(notify, host, asked)


def host_entry(host: str) -> HostEntry:
    try:
        return load_hosts().get(host) or HostEntry(name=host)
    except HostsFileError as exc:
        raise GpudeckError(str(exc), exc.code) from None


def node_spec(
    agents: Agents | None,
    terms: JobTerms,
    host: str,
    node: str = "0",
    argv: tuple[str, ...] | None = None,
    env: tuple[tuple[str, str], ...] | None = None,
    multinode: Multinode | None = None,
) -> JobSpec:
    """One node's spec on `host`: `argv`/`env` are the node's own (a launcher line, its placement
    variables) where a plan gave them. Without `agents` the job's share of its host is taken as 1
    (a budget can then only stop early, never late)."""
    entry = host_entry(host)
    workdir = terms.workdir or (os.getcwd() if host == LOCAL else "~")
    if host == LOCAL and terms.code is None:
        workdir = os.path.abspath(os.path.expanduser(workdir))
        if not os.path.isdir(workdir):  # here, before anything is sent: the agent's refusal would come later
            raise usage(
                f"--workdir {workdir}: {'not a directory' if os.path.exists(workdir) else 'no such directory'}"
            )
    node_env = {**host_env(entry), **dict(terms.env if env is None else env)}
    spec = JobSpec(
        id=terms.id,
        name=terms.name,
        node=node,
        argv=terms.command if argv is None else argv,
        workdir=workdir,
        env=node_env,
        setup=(*entry.setup, *terms.setup),
        grace=terms.grace,
        created_at=time.time(),
        output_cap=output_cap(terms, host, entry.extra),
        # A local job runs with the PATH it was launched from (an activated venv, conda env…).
        path=os.environ.get("PATH", "") if host == LOCAL else None,
        multinode=multinode,
        environment=job_environment(
            terms.requirements, terms.environment, terms.source_dir, host, entry.extra
        ),
        code=terms.code,
        runtime=container(terms, host, entry.extra),
        gpus=terms.gpus,
        restart_of=terms.restart_of,
        hold_on_fail=terms.hold_on_fail,
        notify=job_notify(host, terms.notify),
        stall=terms.stall,
        notice=preempt_notice(host, entry.extra),  # the host's spot notice, watched by its agent
        pty=terms.pty or None,
        tensorboard=terms.tensorboard,
        logger_files=None if terms.logger_files else False,
    )
    return spec.replace(**cost_fields(agents, host, terms, node_env, entry.extra))


def host_env(entry: HostEntry) -> dict[str, str]:
    """The host's `env_file` (hosts.toml; relative to that file's directory): its variables under
    the job's own, secrets as theirs are."""
    path = entry.extra.get("env_file")
    if path is None:
        return {}
    label = f"{hosts_path()}: [hosts.{entry.name}] env_file"
    if not isinstance(path, str) or not path:
        raise usage(f"{label}: expected a file name")
    from .env_file import read_env_file

    return dict(read_env_file(str(hosts_path().parent / os.path.expanduser(path)), label=label))


def container(terms: JobTerms, host: str, settings: dict[str, Any]) -> Container | None:
    """--image, else the host's `image` (hosts.toml), with --runtime over its `container_runtime`."""
    image = terms.image or settings.get("image")
    if image is None:
        if terms.container_runtime or terms.mounts or terms.shm_size or terms.ipc:
            raise usage(f"--runtime/--mount/--shm-size/--ipc: need --image (host {host} has no `image`)")
        return None
    try:
        return container_of(str(image), terms, settings.get("container_runtime"))
    except SpecError as exc:
        source = "" if terms.image else f"{hosts_path()}: [hosts.{host}] image/container_runtime: "
        raise usage(source + container_message(exc)) from None


def output_cap(terms: JobTerms, host: str, settings: dict[str, Any]) -> int:
    """The job's output cap: --output-cap, else the host's `output_cap` (hosts.toml), else the
    spec's default (1 GiB)."""
    cap = terms.output_cap
    if cap is None:
        cap = parse_output_cap(settings.get("output_cap"), label=f"{hosts_path()}: [hosts.{host}] output_cap")
    return DEFAULT_OUTPUT_CAP if cap is None else cap


def live_jobs(agents: Agents, host: str) -> int:
    """The jobs running on `host`, as its agent counts them (no full listing: issue 33); an older
    agent without the op is asked for its listing."""
    try:
        live = agents.request(host, "live_jobs")["live"]
    except Exception as exc:
        if "unknown op" not in str(exc):
            raise
        jobs = agents.request(host, "jobs")["jobs"]
        return sum(1 for j in jobs if j["state"] in ("starting", "running"))
    return live if isinstance(live, int) and not isinstance(live, bool) and live >= 0 else 0


def cost_fields(
    agents: Agents | None,
    host: str,
    terms: JobTerms | LaunchOptions,
    env: dict[str, str],
    settings: dict[str, Any],
) -> dict[str, Any]:
    """price (with this job's share of the host), budget and idle stop, for the supervisor;
    `settings` are the host's price fields from hosts.toml."""
    price = None
    if terms.price_per_hour is not None:
        price = HostPrice(
            per_hour=terms.price_per_hour, currency="USD", market="on-demand", source="--price-per-hour"
        )
    share = 1.0
    idle_stop = terms.idle_stop
    try:
        idle_rule = parse_idle_stop(idle_stop if idle_stop is not None else settings.get("idle_stop"))
    except CostRuleError as exc:
        raise usage(str(exc)) from None
    if agents is not None and ((price or host_price(settings)).known or idle_rule is not None):
        hello = agents.request(host, "hello")
        gpus = len(((hello.get("gpu") or {}).get("gpus")) or [])
        if idle_rule is not None and gpus == 0:
            # an idle stop watches the job's GPUs: without one it would never fire
            if idle_stop is not None:
                raise usage(
                    f"--idle-stop {idle_stop}: host {host} has no NVIDIA GPU to watch "
                    "(leave it out, or --idle-stop off)"
                )
            agents.notice(
                f"host {host} has no NVIDIA GPU: its idle_stop default ({settings.get('idle_stop')}) "
                "is skipped for this job"
            )
            idle_stop = "off"
        live = live_jobs(agents, host) if gpus == 0 else 0  # with GPUs the share is the job's own GPUs'
        asked = getattr(terms, "gpus", None)
        visible = (
            ",".join(["-"] * asked.count)  # its count is what the share needs: the agent picks which
            if asked is not None
            else env.get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"))
        )
        share = launch_share(gpus, visible, live)
    try:
        fields = spec_cost_fields(
            settings, budget=terms.budget, idle_stop=idle_stop, share=share, price=price
        )
    except CostRuleError as exc:
        raise usage(str(exc)) from None
    try:  # the spec's own bounds (a hosts.toml price past them is the user's input too)
        return {
            "price": Price.from_wire(fields["price"]) if "price" in fields else None,
            "budget": fields.get("budget"),
            "idle_stop": IdleStop.from_wire(fields["idle_stop"]) if "idle_stop" in fields else None,
        }
    except SpecError as exc:
        raise usage(f"host {host}: {exc}") from None
