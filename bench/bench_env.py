"""`run --requirements`: how long after launch the job's command starts, side by side in one run:

- baseline: the same job without --requirements;
- reused: the environment was built by an earlier job (the claim: <= 2 s after launch);
- first build: a new key each round (a nonce comment in the requirements), with pip (venv + pip)
  and with uv, the job's PATH choosing which.

Launch = `gpudeck run` started (a fresh CLI process, as a user types it); start = the command's
own clock when it runs (it prints time.time()). Local host, offline: a tiny wheel from a wheel
directory (PIP_FIND_LINKS + PIP_NO_INDEX). Medians of --rounds.

    python bench/bench_env.py [--rounds 5] [--uv PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.wheels import job_path, make_wheel, uv_binary  # noqa: E402

STAMP = "import time; print('STARTED', repr(time.time()), flush=True)"


def launch_to_start(home: Path, workdir: Path, path: str, extra: list[str]) -> float:
    """Seconds from `gpudeck run` to the command's first line."""
    env = dict(os.environ, GPUDECK_HOME=str(home), HOME=str(home.parent / "user"), PATH=path)
    started = time.time()
    done = subprocess.run(
        [sys.executable, "-m", "tui", "run", *extra, "--", "python3", "-c", STAMP],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise SystemExit(f"gpudeck run failed: {done.stderr.strip()}")
    output = home / "local-agent" / "jobs" / done.stdout.strip() / "0" / "output.log"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        text = output.read_text() if output.exists() else ""
        for line in text.splitlines():
            if line.startswith("STARTED "):
                return float(line.split()[1]) - started
        if "gpudeck: " in text:
            raise SystemExit(f"the job failed:\n{text}")
        time.sleep(0.01)
    raise SystemExit("the job never started its command")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--uv", default=uv_binary(), help="uv binary (default: the uv package's, or PATH's)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-env-"))
    try:
        home, work, user = base / "home", base / "work", base / "user"
        for d in (home, work, user):
            d.mkdir()
        (user / ".profile").write_text("")  # a quick login shell, not this machine's profile
        make_wheel(base / "wheels", "gdtiny", "0.1")
        offline = ["--env", "PIP_NO_INDEX=1", "--env", f"PIP_FIND_LINKS={base / 'wheels'}"]
        pip_path = job_path(base / "bin-pip")
        uv_path = job_path(base / "bin-uv", args.uv) if args.uv else None
        (work / "reused.txt").write_text("gdtiny==0.1\n")
        launch_to_start(home, work, pip_path, ["--requirements", "reused.txt", *offline])  # built once, here

        results: dict[str, list[float]] = {"baseline (no --requirements)": [], "reused": []}
        results["first build, pip"] = []
        if uv_path:
            results["first build, uv"] = []
        for round_ in range(args.rounds):
            results["baseline (no --requirements)"].append(launch_to_start(home, work, pip_path, []))
            results["reused"].append(
                launch_to_start(home, work, pip_path, ["--requirements", "reused.txt", *offline])
            )
            for tool, path in (("pip", pip_path), ("uv", uv_path)):
                if path is None:
                    continue
                fresh = work / f"fresh-{tool}-{round_}.txt"
                fresh.write_text(f"# {tool} round {round_}\ngdtiny==0.1\n")  # a new key
                results[f"first build, {tool}"].append(
                    launch_to_start(home, work, path, ["--requirements", fresh.name, *offline])
                )
        print(f"launch -> command start, local host, median of {args.rounds} (min..max):")
        for name, values in results.items():
            print(f"  {name:<30} {statistics.median(values):6.2f} s  ({min(values):.2f}..{max(values):.2f})")
    finally:
        shutil.rmtree(base, ignore_errors=True)  # every job has ended: its command printed and exited


if __name__ == "__main__":
    main()
