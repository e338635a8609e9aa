"""Spot recovery, measured (issue 31): from the notice (a fake metadata service starts serving it)
to training running again on the replacement (the first loss point the new trainer journals), with
instance boot instant (the fallback hosts are already up: three gpudeck hosts box-a/b/c on one
private sshd, each a spot host with its own fake metadata service). The real CLI, the detached
controller `run --managed` starts, the agents over SSH, and the reference trainer on CPU (torchrun
for 2 nodes).

Cases, each beside a cold `gpudeck run` of the same job on the same hosts (the replacement's), in
the same run, medians over --runs rounds:
- 1 node: the job on box-a, preempted, goes on on box-b;
- 2 nodes: node 1 (box-b) preempted: node 0 stopped to checkpoint, the job relaunched on box-a,box-c;
- 2 nodes --elastic 1:2: node 1 preempted; node 0 trains on alone, the replacement joins (box-c).
Each round also says where the time went: notice → agent saw it (goal ≤ 5 s), → the node's end
journaled, → the controller decided (`recovering`), → the new job launched (`recovered`) → its
first loss point. The machine's load is printed before and after.

    python bench/bench_recovery.py [--runs 3] [--cases 1,2,elastic] [--interval S]

`--interval S` starts the detached controller with that pass interval first (default: the one
`run --managed` starts, every 10 s): what a shorter wait for the controller's next pass would buy.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.cleanup import kill_all_jobs  # noqa: E402
from tests.support.metadata import FakeMetadata, fake_metadata  # noqa: E402
from tests.support.sshd import free_port, host_key_line, make_sshd  # noqa: E402
from tests.support.trainer_runs import TINY  # noqa: E402

BOXES = ("box-a", "box-b", "box-c")
ENDED = ("stopped", "failed", "exited", "killed")


class Bench:
    def __init__(self, root: Path, metas: dict[str, FakeMetadata]) -> None:
        self.root, self.metas = root, metas
        self.server = make_sshd(root / "sshd")
        home, self.home = root / "user", root / "gpudeck"
        (home / ".ssh").mkdir(parents=True)
        shutil.copy(self.server.client_key, home / ".ssh" / "id_ed25519")
        (home / ".ssh" / "config").write_text(
            "".join(
                f"Host {b}\n  HostName 127.0.0.1\n  Port {self.server.port}\n  User root\n" for b in BOXES
            )
        )
        os.environ.update(HOME=str(home), GPUDECK_SSH_HOME=str(home), GPUDECK_HOME=str(self.home))
        os.environ["PYTHONPATH"] = str(REPO)
        os.environ.pop("SSH_AUTH_SOCK", None)
        self.home.mkdir()
        (self.home / "known_hosts").write_text(host_key_line(self.server))
        lines = []
        for b in BOXES:
            lines += [
                f'[hosts.{b}]\ntarget = "{b}"\nagent_dir = "{self.agent(b)}"\npython = "{sys.executable}"',
                f'setup = ["export PATH={Path(sys.executable).parent}:$PATH"]',
                f'provider = "aws"\nmetadata_endpoint = "{metas[b].url}"\nprice_per_hour = 3.6\n',
            ]
        (self.home / "hosts.toml").write_text("\n".join(lines))

    def agent(self, box: str) -> Path:
        return self.root / "agents" / box

    def gd(self, *args: str, timeout: float = 300) -> str:
        r = subprocess.run(
            [sys.executable, "-m", "tui", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.root,
        )
        if r.returncode != 0:
            raise SystemExit(f"bench_recovery: gpudeck {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def journal(self, box: str, job: str, node: str) -> list[dict[str, Any]]:
        path = self.agent(box) / "jobs" / job / node / "events.jsonl"
        try:
            text = path.read_text()
        except FileNotFoundError:
            return []
        return [json.loads(x) for x in text.splitlines() if x.endswith("}")]

    def losses(self, box: str, job: str, node: str) -> list[tuple[float, int]]:
        """(t, world size) of each loss point the node journaled."""
        out = []
        for r in self.journal(box, job, node):
            v = r.get("values") if r.get("kind") == "metric" else None
            if isinstance(v, dict) and "loss" in v:
                out.append((float(r["t"]), int(v.get("world_size") or 1)))
        return out

    def controller(self) -> list[dict[str, Any]]:
        path = self.home / "policy-journal.jsonl"
        text = path.read_text() if path.exists() else ""
        return [json.loads(x) for x in text.splitlines() if x.endswith("}")]

    def managed(self, head: str) -> dict[str, Any]:
        return json.loads((self.home / "managed" / f"{head}.json").read_text())


def wait(cond: Callable[[], Any], what: str, timeout: float = 300.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := cond()):
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_recovery: timed out waiting for {what}")
        time.sleep(0.05)
    return got


def trainer(ck: Path) -> list[str]:
    return [sys.executable, "-m", "trainer", "--steps", "100000", *TINY, "--checkpoint-dir", str(ck)]


def placement(hosts: list[str]) -> list[str]:
    if len(hosts) == 1:
        return ["--host", hosts[0]]
    port = str(free_port())
    return [
        "--host",
        ",".join(hosts),
        "--nodes",
        str(len(hosts)),
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        port,
    ]


def managed_round(b: Bench, case: str, k: int) -> dict[str, float]:
    """One preemption and its recovery; the seconds from the notice to each stage."""
    elastic = case == "elastic"
    hosts = ["box-a"] if case == "1" else ["box-a", "box-b"]
    lost_box, lost_node = hosts[-1], str(len(hosts) - 1)
    ck = b.root / f"ck-{case}-{k}"
    extra = ["--elastic", "1:2"] if elastic else []
    head = b.gd(
        "run", "--managed", "--name", f"rec-{case}-{k}", *placement(hosts), *extra, "--grace", "30",
        "--workdir", str(REPO), "--fallback", ",".join(BOXES), "--lost-after", "0",
        "--", *trainer(ck),
    ).strip()  # fmt: skip
    wait(lambda: len(b.losses("box-a", head, "0")) >= 2, "the first job's loss points")
    time.sleep(random.uniform(0, 2))  # anywhere in the agent's poll cycle
    served = time.time()
    b.metas[lost_box].serve_notice(seconds=120)
    pre = wait(
        lambda: next(
            (r for r in b.journal(lost_box, head, lost_node) if r.get("event") == "preempted"), None
        ),
        "the agent's preempted record",
    )
    end = wait(
        lambda: next(
            (
                r
                for r in b.journal(lost_box, head, lost_node)
                if r.get("kind") == "state" and r.get("state") in ENDED
            ),
            None,
        ),
        "the node's end",
    )
    mine = lambda outcome: next(  # noqa: E731
        (r for r in b.controller() if r.get("chain") == head and r.get("outcome") == outcome), None
    )
    recovering = wait(lambda: mine("recovering"), "the controller's recovering record")
    recovered = wait(lambda: mine("recovered"), "the controller's recovered record", timeout=600)
    m = b.managed(head)
    new, new_hosts = m["current"], m["hosts"]
    out = {
        "agent saw the notice": pre["data"]["seen_at"] - served,
        "node's end journaled": end["t"] - served,
        "controller decided (recovering)": recovering["t"] - served,
        "replacement launched": recovered["t"] - served,
    }
    b.metas[lost_box].notice_at = None  # the next round's jobs there are not taken at once
    if elastic:  # the same job: the survivor's first point alone, then the first with the joined node
        alone = wait(
            lambda: [t for t, w in b.losses("box-a", head, "0") if t > end["t"] and w == 1], "world size 1"
        )
        out["survivor trained on (world 1)"] = alone[0] - served

        def rejoined() -> list[float]:
            ts = [
                t
                for n in ("0", "2")
                for t, w in b.losses(new_hosts[int(n)], head, n)
                if w == 2 and t > alone[0]
            ]
            return sorted(ts)

        out["training again (world 2)"] = wait(rejoined, "world size 2 again")[0] - served
    else:
        first = wait(lambda: b.losses(new_hosts[0], new, "0"), "the new job's first loss point")
        out["training again"] = first[0][0] - served
    b.gd("kill", new)
    wait(lambda: b.managed(head).get("finished"), "the chain's end", timeout=120)
    return out


def cold_round(b: Bench, case: str, k: int) -> float:
    """A cold `gpudeck run` of the same job on the replacement's hosts: command → first loss point."""
    hosts = ["box-b"] if case == "1" else ["box-a", "box-c"]
    extra = ["--elastic", "1:2"] if case == "elastic" else []
    t0 = time.time()
    job = b.gd(
        "run", "--name", f"cold-{case}-{k}", *placement(hosts), *extra, "--grace", "30", "--workdir", str(REPO),
        "--", *trainer(b.root / f"cold-ck-{case}-{k}"),
    ).strip()  # fmt: skip
    first = wait(lambda: b.losses(hosts[0], job, "0"), "the cold run's first loss point")
    b.gd("kill", job)
    return first[0][0] - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", default="1,2,elastic")
    ap.add_argument("--interval", type=float, help="start the controller with this pass interval (s) first")
    args = ap.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cpus)")
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        metas = {box: stack.enter_context(fake_metadata()) for box in BOXES}
        b = Bench(Path(tmp), metas)
        try:
            if args.interval:  # `run --managed` finds it running and starts none of its own
                controller = [
                    sys.executable,
                    "-m",
                    "tui",
                    "policy",
                    "run",
                    "--interval",
                    f"{args.interval:g}",
                ]
                b.gd("run", "--host", "local", "--name", "policy", "--", *controller)
            print(f"controller's pass interval: {args.interval or 'as run --managed starts it (10)'} s")
            for case in cases:
                rounds, colds = [], []
                for k in range(args.runs):
                    rounds.append(managed_round(b, case, k))
                    colds.append(cold_round(b, case, k))
                    print(f"  case {case} round {k}: " + ", ".join(f"{n} {v:.1f}" for n, v in rounds[-1].items())
                          + f"; cold run {colds[-1]:.1f}", flush=True)  # fmt: skip
                name = {"1": "1 node", "2": "2 nodes", "elastic": "2 nodes, --elastic 1:2"}[case]
                print(f"{name}: notice → (median of {args.runs} rounds, s)")
                for stage in rounds[0]:
                    xs = [r[stage] for r in rounds]
                    print(f"  {stage:34s} median {statistics.median(xs):6.1f}  max {max(xs):6.1f}")
                print(
                    f"  {'baseline: cold run → first point':34s} median {statistics.median(colds):6.1f}  max {max(colds):6.1f}"
                )
        finally:
            subprocess.run([sys.executable, "-m", "tui", "kill", "policy"], capture_output=True, timeout=60)
            for box in BOXES:
                kill_all_jobs(b.agent(box))
            b.server.stop()
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
