"""`gpudeck run`: launch a command detached on a host; prints the job id alone on stdout."""

from __future__ import annotations

import argparse
import os
import re
import time

from remote_agent.names import is_job_name, new_job_id

from ..cost.rules import CostRuleError, launch_share, spec_cost_fields
from ..cost.settings import HostPrice, host_price
from ..errors import EXIT_USAGE, CliError
from ..session import LOCAL, Session
from ..store import JobRecord
from .cost import host_settings


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="launch a command as a detached job", description="Launch CMD as a job. Prints its id.")
    p.add_argument("--host", default=LOCAL, help="host to run on (default: local)")
    p.add_argument("--name", help="a name for people (default: from the command)")
    p.add_argument("--workdir", help="working directory (default: current dir on local, login dir on SSH hosts)")
    p.add_argument("--env", action="append", default=[], metavar="K=V|K", help="set a variable; K alone takes the caller's value")
    p.add_argument("--setup", action="append", default=[], metavar="LINE", help="shell line run before the command (e.g. conda activate)")
    p.add_argument("--grace", type=float, default=60.0, help="seconds between the stop signal and SIGKILL (default 60)")
    p.add_argument("--budget", type=float, metavar="AMOUNT", help="stop gracefully when the job's cost reaches AMOUNT (warns at 80 %%)")
    p.add_argument("--price-per-hour", type=float, metavar="P", help="the host's price per hour for this job (default: the host's setting)")
    p.add_argument("--idle-stop", metavar="30m@10%%+15m", help="stop when the job's GPUs stay under 10 %% for 30 min, not in its first 15 min (off: none; default: the host's setting)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]")


def parse_env(items: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise CliError(f"--env {item.split('=')[0]!r}: not a variable name", EXIT_USAGE)
        if not sep:
            if key not in os.environ:
                raise CliError(f"--env {key}: not set in your environment", EXIT_USAGE)
            value = os.environ[key]
        env[key] = value
    return env


def default_name(argv: list[str], job_id: str) -> str:
    """`python -m trainer` → trainer-xxxx; `python train.py` → train.py-xxxx; `./run.sh` → run.sh-xxxx."""
    prog = os.path.basename(argv[0])
    rest = argv[1:]
    if prog in ("torchrun", "accelerate", "deepspeed") or prog.startswith("python"):
        if "-m" in rest[:-1] and prog.startswith("python"):
            prog = rest[rest.index("-m") + 1]
        else:
            scripts = [a for a in rest if a.endswith(".py")]
            prog = os.path.basename(scripts[0]) if scripts else prog
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", prog).strip("-._")[:40] or "job"
    return f"{stem}-{job_id[-4:]}"


def cost_rules(args: argparse.Namespace, env: dict[str, str], session: Session | None) -> dict:
    """price (with this job's share of the host), budget and idle stop, for the supervisor.

    Without a session (the TUI's form builds specs off the network) the share is taken as 1:
    a budget can then only stop early, never late."""
    settings = host_settings(args.host)
    price = None
    if args.price_per_hour is not None:
        if args.price_per_hour < 0:
            raise CliError("--price-per-hour: must be >= 0", EXIT_USAGE)
        price = HostPrice(per_hour=args.price_per_hour, currency="USD", market="on-demand", source="--price-per-hour")
    share = 1.0
    if session is not None and (price or host_price(settings)).known:
        hello = session.request(args.host, "hello")
        gpus = len(((hello.get("gpu") or {}).get("gpus")) or [])
        live = sum(1 for j in session.request(args.host, "jobs")["jobs"] if j["state"] in ("starting", "running"))
        share = launch_share(gpus, env.get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES")), live)
    try:
        return spec_cost_fields(settings, budget=args.budget, idle_stop=args.idle_stop, share=share, price=price)
    except CostRuleError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def build_spec(args: argparse.Namespace, argv: list[str], job_id: str, session: Session | None = None) -> dict:
    name = args.name or default_name(argv, job_id)
    if not is_job_name(name):
        raise CliError(f"--name {name!r}: use 1-64 of A-Z a-z 0-9 . _ - starting with a letter or digit", EXIT_USAGE)
    if args.grace < 0:
        raise CliError("--grace: must be >= 0 seconds", EXIT_USAGE)
    workdir = args.workdir or (os.getcwd() if args.host == LOCAL else "~")
    if args.host == LOCAL:
        workdir = os.path.abspath(os.path.expanduser(workdir))
    env = parse_env(args.env)
    return {
        "id": job_id,
        "name": name,
        "node": "0",
        "argv": argv,
        "workdir": workdir,
        "env": env,
        "setup": list(args.setup),
        "grace": args.grace,
        "created_at": time.time(),
        # A local job runs with the PATH it was launched from (an activated venv, conda env…).
        **({"path": os.environ.get("PATH", "")} if args.host == LOCAL else {}),
        **cost_rules(args, env, session),
    }


def run(args: argparse.Namespace, session: Session) -> int:
    argv = list(args.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise CliError("run: no command given (gpudeck run [OPTIONS] -- CMD [ARGS...])", EXIT_USAGE)
    job_id = new_job_id()
    spec = build_spec(args, argv, job_id, session)
    job = session.request(args.host, "launch", timeout=60.0, spec=spec)
    session.store.record_job(
        JobRecord(id=job_id, name=spec["name"], created_at=spec["created_at"], nodes=[{"host": args.host, "node": "0"}], argv=argv)
    )
    print(job["id"])
    return 0
