"""`--data` against `aws s3 sync`, side by side in one run: 2,000 objects / 200 MB on a moto S3 server
(its own process) on 127.0.0.1.

Each round, in alternating order: the AWS CLI's `aws s3 sync s3://bkt/ds DIR` into an empty DIR, and
a gpudeck job `run --data s3://bkt/ds:data -- true` on the local host with an empty agent dir (no
cache), timed from the launch call to the job's end: the client's listing and presigning, the launch,
the agent's fetch and the links, all included. Then an unchanged second job on the same agent dir:
its data's "ready in" (the agent's own line) and its launch-to-end time. Medians.

    python bench/bench_data.py [--objects 2000] [--size 100000] [--rounds 3] [--aws /tmp/awscli-venv/bin/aws]

The AWS CLI (awscli from PyPI) lives in a venv of its own (`python3 -m venv /tmp/awscli-venv &&
/tmp/awscli-venv/bin/pip install awscli`): it pins an exact botocore, which would move the project's.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.cleanup import kill_all_jobs  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_moto() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, url
        except OSError:
            time.sleep(0.05)
    raise SystemExit("moto server did not start")


def fill(url: str, objects: int, size: int) -> None:
    import boto3

    s3 = boto3.client("s3", endpoint_url=url)
    s3.create_bucket(Bucket="bkt")
    with ThreadPoolExecutor(16) as pool:
        list(
            pool.map(
                lambda i: s3.put_object(
                    Bucket="bkt", Key=f"ds/shard-{i // 100}/{i:05d}.bin", Body=os.urandom(size)
                ),
                range(objects),
            )
        )


def aws_sync(aws: str, url: str, into: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [aws, "s3", "sync", "s3://bkt/ds", str(into), "--endpoint-url", url, "--only-show-errors"],
        check=True,
        env={k: v for k, v in os.environ.items() if k != "AWS_ENDPOINT_URL"},
    )
    return time.perf_counter() - start


def gpudeck_job(workdir: Path) -> tuple[float, str]:
    """(launch-to-end seconds, output) of one `--data` job on the local host."""
    from tui.actions import find, launch
    from tui.actions.options import LaunchOptions
    from tui.session import Session

    session = Session()
    try:
        start = time.perf_counter()
        job = launch.launch(
            session,
            session.store,
            LaunchOptions(argv=("true",), workdir=str(workdir), data=("s3://bkt/ds:data",)),
        )
        while (state := find.resolve(session, job.id).state) not in ("exited", "failed"):
            time.sleep(0.01)
        took = time.perf_counter() - start
        jobs = Path(os.environ["GPUDECK_HOME"]) / "local-agent" / "jobs" / job.id
        out = (jobs / "0" / "output.log").read_text()
        if state != "exited":
            raise SystemExit(f"the job {state}: {find.resolve(session, job.id).first.get('cause')}")
        return took, out
    finally:
        session.close()


def ready_in(output: str) -> float:
    found = re.search(r"ready in ([0-9.]+) s", output)
    assert found, output
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--aws", default=shutil.which("aws") or "/tmp/awscli-venv/bin/aws")
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1"
    )
    moto, url = start_moto()
    os.environ["AWS_ENDPOINT_URL"] = url  # gpudeck's client finds the store as boto3 does
    base = Path(tempfile.mkdtemp(prefix="bench-data-"))
    times: dict[str, list[float]] = {"aws": [], "first": [], "second": [], "second_ready": []}
    try:
        fill(url, args.objects, args.size)
        for r in range(args.rounds):
            home = base / f"home{r}"
            work = base / f"work{r}"
            work.mkdir(parents=True)
            os.environ["GPUDECK_HOME"] = str(home)
            order = ("aws", "gpudeck") if r % 2 == 0 else ("gpudeck", "aws")
            for which in order:
                if which == "aws":
                    times["aws"].append(aws_sync(args.aws, url, base / f"sync{r}"))
                else:
                    took, out = gpudeck_job(work)
                    assert f"{args.objects} fetched" in out, out
                    times["first"].append(took)
            took, out = gpudeck_job(work)
            assert "all cached" in out, out
            times["second"].append(took)
            times["second_ready"].append(ready_in(out))
            kill_all_jobs(home / "local-agent")
            files = sum(1 for p in (work / "data").rglob("*") if p.is_file())
            assert files == args.objects, files
    finally:
        moto.terminate()
        moto.wait()
        shutil.rmtree(base, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    mb = args.objects * args.size / 1e6
    print(f"objects={args.objects} size={args.size} ({mb:.0f} MB) rounds={args.rounds}, moto S3 on 127.0.0.1")
    print(f"aws s3 sync (first copy)         : median {med['aws']:.2f} s  {times['aws']}")
    print(
        f"gpudeck --data first job, to end : median {med['first']:.2f} s  "
        f"({med['first'] / med['aws']:.2f}x aws)  {times['first']}"
    )
    print(
        f"gpudeck --data unchanged 2nd job : data ready median {med['second_ready']:.2f} s, to end {med['second']:.2f} s"
    )


if __name__ == "__main__":
    main()
