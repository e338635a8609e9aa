"""Launching a job: its spec from LaunchOptions (priced by the host's settings), sent to the agent,
recorded in the store. One path for `gpudeck run` and the TUI's form."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from remote_agent.names import new_job_id

from ..cost.rules import CostRuleError, launch_share, spec_cost_fields
from ..cost.settings import HostPrice, host_price
from ..errors import GpudeckError
from ..hosts_file import LOCAL, HostEntry, HostsFileError, load_hosts
from ..store import JobRecord, Store
from .agents import Agents
from .options import LaunchOptions, check, default_name, usage

LAUNCH_TIMEOUT = 60.0


@dataclass(frozen=True)
class Launched:
    id: str
    name: str
    host: str
    state: str

    def __str__(self) -> str:
        return f"launched {self.name} on {self.host} ({self.state})"


def launch(agents: Agents, store: Store | None, opts: LaunchOptions, job_id: str | None = None) -> Launched:
    """Build the spec, launch it, record it. Blocks (hosts.toml, the agent): call from a worker."""
    spec = build_spec(agents, check(opts), job_id or new_job_id())
    obj = agents.request(opts.host, "launch", timeout=LAUNCH_TIMEOUT, spec=spec)
    if store is not None:
        store.record_job(JobRecord(id=spec["id"], name=spec["name"], created_at=spec["created_at"],
                                   nodes=[{"host": opts.host, "node": spec["node"]}], argv=spec["argv"]))
    return Launched(spec["id"], spec["name"], opts.host, obj.get("state", "starting") if isinstance(obj, dict) else "starting")


def build_spec(agents: Agents | None, opts: LaunchOptions, job_id: str) -> dict[str, Any]:
    """The agent's launch spec: the host's setup lines (hosts.toml) run before the job's. Without
    `agents` the job's share of its host is taken as 1 (a budget can then only stop early, never late)."""
    try:
        entry = load_hosts().get(opts.host) or HostEntry(name=opts.host)
    except HostsFileError as exc:
        raise GpudeckError(str(exc)) from None
    workdir = opts.workdir or (os.getcwd() if opts.host == LOCAL else "~")
    if opts.host == LOCAL:
        workdir = os.path.abspath(os.path.expanduser(workdir))
        if os.path.exists(workdir) and not os.path.isdir(workdir):
            raise usage(f"--workdir {workdir}: not a directory")
    env = dict(opts.env)
    return {
        "id": job_id,
        "name": opts.name or default_name(opts.argv, job_id),
        "node": "0",
        "argv": list(opts.argv),
        "workdir": workdir,
        "env": env,
        "setup": [*entry.setup, *opts.setup],
        "grace": opts.grace,
        "created_at": time.time(),
        # A local job runs with the PATH it was launched from (an activated venv, conda env…).
        **({"path": os.environ.get("PATH", "")} if opts.host == LOCAL else {}),
        **cost_fields(agents, opts, env, entry.extra),
    }


def cost_fields(agents: Agents | None, opts: LaunchOptions, env: dict[str, str],
                settings: dict[str, Any]) -> dict[str, Any]:
    """price (with this job's share of the host), budget and idle stop, for the supervisor;
    `settings` are the host's price fields from hosts.toml."""
    price = None
    if opts.price_per_hour is not None:
        price = HostPrice(per_hour=opts.price_per_hour, currency="USD", market="on-demand", source="--price-per-hour")
    share = 1.0
    if agents is not None and (price or host_price(settings)).known:
        hello = agents.request(opts.host, "hello")
        gpus = len(((hello.get("gpu") or {}).get("gpus")) or [])
        live = sum(1 for j in agents.request(opts.host, "jobs")["jobs"] if j["state"] in ("starting", "running"))
        share = launch_share(gpus, env.get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES")), live)
    try:
        return spec_cost_fields(settings, budget=opts.budget, idle_stop=opts.idle_stop, share=share, price=price)
    except CostRuleError as exc:
        raise usage(str(exc)) from None
