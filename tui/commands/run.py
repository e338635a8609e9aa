"""`gpudeck run`: launch a command detached on a host; prints the job id alone on stdout."""

from __future__ import annotations

import argparse
import os
import re
import time

from remote_agent.names import is_job_name, new_job_id

from ..errors import EXIT_USAGE, CliError
from ..session import LOCAL, Session
from ..store import JobRecord


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
    p.add_argument("--idle-stop", metavar="30m@10%%", help="stop when the job's GPUs stay under 10 %% for 30 min")
    p.add_argument("--idle-grace", default="15m", metavar="DURATION", help="no idle stop this soon after start (default 15m)")
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


def parse_duration(text: str, what: str) -> float:
    """'90s', '30m', '1.5h' or plain minutes → minutes."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", text.strip())
    if not match:
        raise CliError(f"{what} {text!r}: expected a duration like 90s, 30m or 2h", EXIT_USAGE)
    value, unit = float(match.group(1)), match.group(2) or "m"
    return value * {"s": 1 / 60, "m": 1.0, "h": 60.0}[unit]


def parse_idle_stop(text: str, grace: str) -> dict[str, float]:
    duration, sep, pct = text.partition("@")
    pct_match = re.fullmatch(r"(\d+(?:\.\d+)?)%?", pct.strip()) if sep else None
    if not pct_match or not 0 <= float(pct_match.group(1)) <= 100:
        raise CliError(f"--idle-stop {text!r}: expected DURATION@PERCENT, e.g. 30m@10%", EXIT_USAGE)
    return {
        "below_pct": float(pct_match.group(1)),
        "minutes": parse_duration(duration, "--idle-stop"),
        "grace_minutes": parse_duration(grace, "--idle-grace"),
    }


def cost_rules(args: argparse.Namespace, env: dict[str, str]) -> dict:
    rules: dict = {}
    if args.price_per_hour is not None:
        if args.price_per_hour < 0:
            raise CliError("--price-per-hour: must be >= 0", EXIT_USAGE)
        rules["price"] = {"per_hour": args.price_per_hour, "currency": "USD", "share": 1.0, "source": "--price-per-hour"}
    if args.budget is not None:
        if args.budget <= 0:
            raise CliError("--budget: must be > 0", EXIT_USAGE)
        if "price" not in rules:
            raise CliError(f"--budget: the price of host {args.host} is unknown; pass --price-per-hour", EXIT_USAGE)
        rules["budget"] = args.budget
    if args.idle_stop:
        rules["idle_stop"] = parse_idle_stop(args.idle_stop, args.idle_grace)
    return rules


def build_spec(args: argparse.Namespace, argv: list[str], job_id: str) -> dict:
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
        **cost_rules(args, env),
    }


def run(args: argparse.Namespace, session: Session) -> int:
    argv = list(args.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise CliError("run: no command given (gpudeck run [OPTIONS] -- CMD [ARGS...])", EXIT_USAGE)
    job_id = new_job_id()
    spec = build_spec(args, argv, job_id)
    job = session.request(args.host, "launch", timeout=60.0, spec=spec)
    session.store.record_job(
        JobRecord(id=job_id, name=spec["name"], created_at=spec["created_at"], nodes=[{"host": args.host, "node": "0"}], argv=argv)
    )
    print(job["id"])
    return 0
