"""~450 bad inputs through the real CLI (#25, "Done when"): every verb with bad option values, hostile
names, unknown jobs and hosts, and hosts.toml / config.toml / policies.toml in broken shapes (binary,
wrong types, huge, deeply nested, unknown keys). Counts what must stay 0: "internal error", tracebacks
and hangs; also what must hold for a refusal: exit code 2 for bad usage, one stderr line.

    python bench/bad_inputs.py [--jobs 2] [--timeout 30] [--show]

Each case runs `python -m tui …` in a fresh GPUDECK_HOME (jobs a case did start are killed at the
end). Nothing here reaches a cloud provider or another machine: regions and credentials are unset,
SSH targets are 127.0.0.1 on a closed port.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.cleanup import kill_all_jobs  # noqa: E402

UNKNOWN_JOB = "20991231-235959-abcdef"
NUMBERS = ["nan", "inf", "-1", "1e309", "1e23", "abc", "\x1b[2J", "１"]
TEXTS = ["", "\x1b]0;pwned\x07", "a" * 5000, "../../etc/passwd", "-rf", "$(touch /tmp/gpudeck-pwn)", "名前"]
REFS = ["", UNKNOWN_JOB, "\x1b[2J", "a" * 5000, "2026", "%", "$(id)", ".."]


@dataclass
class Case:
    label: str
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass
class Outcome:
    case: Case
    code: int | None  # None: hung (killed at the timeout)
    stderr: str
    seconds: float

    @property
    def internal(self) -> bool:
        return "internal error" in self.stderr

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stderr


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def option_cases() -> list[Case]:
    cases: list[Case] = []
    numeric = {
        ("run", "--grace"): ["--", "true"],
        ("run", "--budget"): ["--", "true"],
        ("run", "--price-per-hour"): ["--", "true"],
        ("run", "--nodes"): ["--", "true"],
        ("run", "--nproc-per-node"): ["--", "true"],
        ("run", "--master-port"): ["--nodes", "2", "--", "true"],
        ("stop", "--grace"): [UNKNOWN_JOB],
        ("watch", "--pid"): ["/tmp/gpudeck-bad-input.log"],
        ("watch", "--grace"): ["/tmp/gpudeck-bad-input.log"],
        ("policy run", "--interval"): ["--once"],
        ("cloud idle", "--below"): [],
        ("cloud idle", "--for"): [],
        ("cloud launch", "--ssh-port"): ["--provider", "aws", "--type", "g5.xlarge"],
        ("cloud launch", "--timeout"): ["--provider", "aws", "--type", "g5.xlarge"],
    }
    for (verb, option), rest in numeric.items():
        for value in NUMBERS:
            cases.append(Case(f"{verb} {option} {value!r}", [*verb.split(), option, value, *rest]))
    for value in NUMBERS[:6]:
        cases.append(
            Case(
                f"--replay-speed {value!r}",
                ["--replay", str(ROOT / "docs" / "gpu-fleet.jsonl"), "--replay-speed", value, "ps"],
            )
        )
    textual = {
        ("run", "--name"): ["--", "true"],
        ("run", "--workdir"): ["--", "true"],
        ("run", "--host"): ["--", "true"],
        ("run", "--pool"): ["--", "true"],
        ("run", "--env"): ["--", "true"],
        ("run", "--setup"): ["--", "true"],
        ("run", "--idle-stop"): ["--", "true"],
        ("run", "--output-cap"): ["--", "true"],
        ("run", "--elastic"): ["--nodes", "2", "--", "true"],
        ("run", "--master-addr"): ["--nodes", "2", "--", "true"],
        ("watch", "--name"): ["/tmp/gpudeck-bad-input.log"],
        ("watch", "--host"): ["/tmp/gpudeck-bad-input.log"],
        ("cost", "--since"): [],
        ("policy eval", "--at"): [],
        ("hosts add", "--identity-file"): ["box", "127.0.0.1:1", "--no-connect"],
        ("hosts add", "--python"): ["box", "127.0.0.1:1", "--no-connect"],
        ("hosts add", "--agent-dir"): ["box", "127.0.0.1:1", "--no-connect"],
        ("hosts resolve", "-F"): ["somehost"],
    }
    for (verb, option), rest in textual.items():
        for value in TEXTS:
            cases.append(Case(f"{verb} {option} {value[:20]!r}", [*verb.split(), option, value, *rest]))
    for value in TEXTS:
        cases += [
            Case(f"hosts add NAME {value[:20]!r}", ["hosts", "add", value, "127.0.0.1:1", "--no-connect"]),
            Case(f"hosts add TARGET {value[:20]!r}", ["hosts", "add", "box", value, "--no-connect"]),
            Case(f"hosts set VALUE {value[:20]!r}", ["hosts", "set", "local", f"price_per_hour={value}"]),
            Case(f"hosts set KEY {value[:20]!r}", ["hosts", "set", "local", f"{value}=1"]),
            Case(f"hosts resolve {value[:20]!r}", ["hosts", "resolve", value]),
            Case(f"watch PATH {value[:20]!r}", ["watch", value]),
            Case(f"scale COUNT {value[:20]!r}", ["scale", UNKNOWN_JOB, value]),
        ]
    return cases


def reference_cases() -> list[Case]:
    cases = []
    for verb in (
        ["logs"],
        ["logs", "-f"],
        ["metrics"],
        ["inspect"],
        ["stop"],
        ["kill"],
        ["rm"],
        ["restart"],
        ["autostop", "pause"],
    ):
        for ref in REFS:
            cases.append(Case(f"{' '.join(verb)} {ref[:20]!r}", [*verb, ref]))
    for verb in (["hosts", "rm"], ["hosts", "trust"], ["hosts", "set"]):
        for name in ("nope", "\x1b[2J", "a" * 300, "local" if verb[1] == "rm" else "-x"):
            extra = ["price_per_hour=1"] if verb[1] == "set" else []
            cases.append(Case(f"{' '.join(verb)} {name[:20]!r}", [*verb, name, *extra]))
    cases += [
        Case("unknown verb", ["frobnicate"]),
        Case("extra word", ["ps", "extra"]),
        Case("help unknown", ["help", "frobnicate"]),
        Case("completion unknown shell", ["completion", "tcsh"]),
        Case("run without a command", ["run"]),
        Case("run -- only", ["run", "--"]),
        Case("replay a missing file", ["--replay", "/nonexistent", "ps"]),
        Case("replay a binary file", ["--replay", "/bin/true", "ps"]),
        Case("record into a directory", ["--record", "/", "ps"]),
    ]
    return cases


DEEP = b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n"
HUGE = b"# " + b"x" * 4_000_000 + b"\n"


def hosts_cases(port: int) -> list[Case]:
    target = f'target = "127.0.0.1:{port}"\n'.encode()
    shapes = {
        "binary": b"\xfe\xff\x00\x9c garbage \x80",
        "not TOML": b"[hosts\n",
        "empty": b"",
        "BOM": b"\xef\xbb\xbf[hosts.a]\n" + target,
        "hosts a number": b"hosts = 5\n",
        "hosts a string": b'hosts = "x"\n',
        "host a number": b"[hosts]\na = 1\n",
        "array of tables": b"[[hosts]]\nname = 'a'\n",
        "target a number": b"[hosts.a]\ntarget = 5\n",
        "no target": b"[hosts.a]\npython = 'x'\n",
        "setup a number": b"[hosts.a]\n" + target + b"setup = 5\n",
        "setup numbers": b"[hosts.a]\n" + target + b"setup = [1, 2]\n",
        "price text": b'[hosts.local]\nprice_per_hour = "abc"\n',
        "price nan": b"[hosts.local]\nprice_per_hour = nan\n",
        "price negative": b"[hosts.local]\nprice_per_hour = -1\n",
        "price bool": b"[hosts.local]\nprice_per_hour = true\n",
        "idle_stop number": b"[hosts.local]\nidle_stop = 5\n",
        "idle_stop text": b'[hosts.local]\nidle_stop = "zz"\n',
        "instance_idle_stop list": b"[hosts.local]\ninstance_idle_stop = []\n",
        "market moon": b'[hosts.local]\nmarket = "moon"\n',
        "currency number": b"[hosts.local]\ncurrency = 5\n",
        "unknown top-level key": b"colour = 1\n",
        "huge": HUGE + b"[hosts.a]\n" + target,
        "deeply nested": DEEP,
        "hostile name": b'[hosts."\\u001b[2J"]\n' + target,
        "name with spaces": b'[hosts."a b"]\n' + target,
        "target with ESC": b'[hosts.a]\ntarget = "\\u001b]0;x\\u0007@h"\n',
        "target with a shell": b'[hosts.a]\ntarget = "$(touch /tmp/gpudeck-pwn)"\n',
        "local with a target": b'[hosts.local]\ntarget = "x"\n',
    }
    verbs = [
        ["ps"],
        ["hosts", "--json"],
        ["run", "--", "true"],
        ["hosts", "set", "local", "price_per_hour=1"],
    ]
    return [
        Case(f"hosts.toml {shape}: {' '.join(v)}", v, {"hosts.toml": content})
        for shape, content in shapes.items()
        for v in verbs
    ]


def config_cases() -> list[Case]:
    shapes = {
        "binary": b"\x80\x81\xfe",
        "not TOML": b"[ui\n",
        "unknown section": b"[colours]\nx = 1\n",
        "unknown top-level key": b"theme = 1\n",
        "ui a number": b"ui = 5\n",
        "alive_timeout text": b'[ssh]\nalive_timeout = "x"\n',
        "alive_timeout negative": b"[ssh]\nalive_timeout = -1\n",
        "alive_timeout nan": b"[ssh]\nalive_timeout = nan\n",
        "currency number": b"[cost]\ncurrency = 5\n",
        "timezone Mars": b'[cost]\ntimezone = "Mars/Base"\n',
        "daily_budget text": b'[cost]\ndaily_budget = "lots"\n',
        "fx text": b'[cost.fx]\nCNY = "a"\n',
        "keys number": b"[keys]\nstop_job = 5\n",
        "regions number": b"[cloud]\naws_regions = 5\n",
        "refresh zero": b"[cloud]\nrefresh = 0\n",
        "kept_ended_jobs negative": b"[ui]\nkept_ended_jobs = -1\n",
        "huge": HUGE,
        "deeply nested": DEEP,
    }
    verbs = [["ps"], ["hosts"], ["cost"]]
    return [
        Case(f"config.toml {shape}: {' '.join(v)}", v, {"config.toml": content})
        for shape, content in shapes.items()
        for v in verbs
    ]


def policy_cases() -> list[Case]:
    rule = b'[[rule]]\nname = "r"\nkind = "schedule"\njobs = "*"\nbetween = "09:00-18:00"\nnodes = 2\n'
    shapes = {
        "binary": b"\x80\x81\xfe",
        "not TOML": b"[[rule]\n",
        "rule a number": b"rule = 5\n",
        "rule a table": b"[rule]\nname = 'r'\n",
        "unknown kind": rule.replace(b"schedule", b"teleport"),
        "nodes text": rule.replace(b"nodes = 2", b'nodes = "many"'),
        "nodes negative": rule.replace(b"nodes = 2", b"nodes = -3"),
        "between nonsense": rule.replace(b"09:00-18:00", b"25:99-xx"),
        "unknown key": rule + b"colour = 1\n",
        "unknown section": b"[colours]\nx = 1\n",
        "pool a number": b"pool = 5\n",
        "hostile name": rule.replace(b'name = "r"', b'name = "\\u001b[2J"'),
        "huge": HUGE,
        "deeply nested": DEEP,
    }
    verbs = [["policy", "eval"], ["policy", "eval", "--json"], ["policy", "run", "--once"]]
    return [
        Case(f"policies.toml {shape}: {' '.join(v)}", v, {"policies.toml": content})
        for shape, content in shapes.items()
        for v in verbs
    ]


def run_case(case: Case, base: Path, timeout: float, homes: list[Path]) -> Outcome:
    home = Path(tempfile.mkdtemp(prefix="home-", dir=base))
    homes.append(home)
    for name, content in case.files.items():
        (home / name).write_bytes(content)
    env = {
        **os.environ,
        "GPUDECK_HOME": str(home),
        "PYTHONPATH": str(ROOT),
        "GPUDECK_DEBUG": "",
        "AWS_DEFAULT_REGION": "",
        "AWS_REGION": "",
        "ALIBABA_CLOUD_REGION_ID": "",
        "AWS_ACCESS_KEY_ID": "",
        "AWS_SECRET_ACCESS_KEY": "",
        "ALIBABA_CLOUD_ACCESS_KEY_ID": "",
        "HOME": str(home),
    }
    start = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tui", *case.argv],
            env=env,
            cwd=home,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return Outcome(case, None, err, time.monotonic() - start)
    return Outcome(case, done.returncode, done.stderr, time.monotonic() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before a case counts as a hang")
    parser.add_argument(
        "--show", action="store_true", help="print every case's exit code and first stderr line"
    )
    args = parser.parse_args()
    cases = option_cases() + reference_cases() + hosts_cases(closed_port()) + config_cases() + policy_cases()
    homes: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="bad-inputs-") as tmp:
        start = time.monotonic()
        try:
            with ThreadPoolExecutor(max_workers=args.jobs) as pool:
                outcomes = list(pool.map(lambda c: run_case(c, Path(tmp), args.timeout, homes), cases))
        finally:
            for home in homes:
                kill_all_jobs(home / "local-agent")
        took = time.monotonic() - start
    bad = [o for o in outcomes if o.internal or o.traceback or o.code is None]
    codes = Counter("hang" if o.code is None else o.code for o in outcomes)
    multi = [o for o in outcomes if o.code not in (0, None) and len(o.stderr.strip().splitlines()) > 1]
    if args.show:
        for o in outcomes:
            first = (o.stderr.strip().splitlines() or [""])[0]
            print(f"{'HANG' if o.code is None else o.code:>4}  {o.case.label[:60]!r:64} {first[:120]!r}")
    for o in bad:
        what = "hang" if o.code is None else "internal error" if o.internal else "traceback"
        print(f"{what}: {o.case.label!r}: {o.stderr.strip()[-300:]!r}")
    print(
        f"{len(outcomes)} bad inputs in {took:.0f} s: {sum(o.internal for o in outcomes)} internal error, "
        f"{sum(o.traceback for o in outcomes)} tracebacks, {codes.get('hang', 0)} hangs; "
        f"exit codes {dict(sorted(codes.items(), key=str))}; {len(multi)} refusals of more than one stderr line"
    )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
