"""Issue 31: the controller launches capacity for the queue. Jobs wait for GPUs the pool cannot give;
the pool allows launches with a spend ceiling → an instance is launched for the queue's head (journal
first, by a token from its id, as in-flight work), joins the pool once it answers, and the queued job
starts there; never past `max_spend_per_hour` (said in `gpudeck queue`'s reason); released once idle.

Fakes stand only for the agents (free GPUs) and the cloud; the controller, the queue's pass, the
journal and policies.toml are the real ones."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from remote_agent.spec import GpuRequest
from tests.test_managed import Starts
from tests.test_policy_capacity import FakeObserver
from tui import paths
from tui.actions.find import Job
from tui.actions.options import LaunchOptions
from tui.errors import GpudeckError
from tui.policy.capacity import CapacityLaunched
from tui.policy.controller import Controller
from tui.policy.inflight import InFlight
from tui.policy.journal import PolicyJournal
from tui.policy.pool_file import add_pool_host, remove_pool_host
from tui.policy.queue_capacity import QueueCapacity
from tui.policy.rules import PolicyError, Pool, load
from tui.queue.entries import Queue
from tui.queue.listing import waiting_jobs
from tui.queue.notes import read_notes
from tui.queue.start import start_waiting

POOL = (
    '[pool.gpus]\nhosts = ["alpha"]\nlaunch = true\nprovider = "aliyun"\n'
    'instance_type = "ecs.gn7i-c8g1.2xlarge"\nimage = "img-1"\nzone = "cn-hangzhou-i"\n'
    'max_spend_per_hour = {ceiling}\nidle_release = "5m"\n'
)
IDS = ("20261206-100000-aaaaaa", "20261206-100001-bbbbbb", "20261206-100002-cccccc")


class Agents:
    """Each host's GPUs: `alpha` has one, busy; a launched instance has one, free until a job starts."""

    def __init__(self) -> None:
        self.busy = {"alpha"}

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        processes = [{"pid": 1}] if host in self.busy else []
        return {"gpus": [{"uuid": f"GPU-{host}", "processes": processes}]}

    def notice(self, line: str) -> None:
        pass


class Cloud:
    """One instance per token (as the providers' client tokens make it), booting until `gate` opens."""

    def __init__(self, per_hour: float | None = 2.0) -> None:
        self.per_hour = per_hour
        self.gate = threading.Event()
        self.made: dict[str, str] = {}
        self.tokens: list[str] = []
        self.released: list[str] = []

    def free(self, hosts: Sequence[str]) -> Mapping[str, int]:
        return {}

    def price(self, pool: Pool) -> float | None:
        return self.per_hour

    def release(self, host: Mapping[str, Any], how: str) -> str:
        return ""

    def launch(self, pool: Pool, token: str) -> CapacityLaunched:
        self.tokens.append(token)
        assert pool.zone == "cn-hangzhou-i" and pool.instance_type == "ecs.gn7i-c8g1.2xlarge"
        host = self.made.setdefault(token, f"i-q{len(self.made) + 1}")
        if not self.gate.wait(timeout=20):
            raise GpudeckError(f"{host}: SSH did not answer")
        return CapacityLaunched(host, host)


class World:
    """A controller over the queue (tmp dir), policies.toml and the fakes; `restart()` makes a new
    controller on the same files, as a killed `policy run` started again."""

    def __init__(self, tmp_path: Path, ceiling: float = 5.0, per_hour: float | None = 2.0) -> None:
        self.dir = tmp_path
        (tmp_path / "policies.toml").write_text(POOL.format(ceiling=ceiling))
        self.agents, self.cloud, self.starts = Agents(), Cloud(per_hour), Starts()
        self.now = 1_800_000_000.0
        self.live: list[Job] = []
        self.queue = Queue(tmp_path / "queue")
        self.restart()

    def restart(self) -> None:
        path = self.dir / "policies.toml"
        policies = load(path)
        self.flights = InFlight()
        journal = PolicyJournal(self.dir / "journal.jsonl")

        def release(host: str) -> str:
            self.cloud.released.append(host)
            return host

        def join(pool: str, host: str) -> None:
            add_pool_host(path, pool, host)

        def leave(pool: str, host: str) -> None:
            remove_pool_host(path, pool, host)

        self.qc = QueueCapacity(
            policies,
            self.cloud,
            journal,
            self.queue,
            self.flights,
            jobs=lambda: self.live,
            release=release,
            clock=lambda: self.now,
            join_pool=join,
            leave_pool=leave,
        )
        self.ctl = Controller(
            jobs=lambda: [],
            observer=FakeObserver(),  # type: ignore[arg-type]
            policies=policies,
            journal=journal,
            resize=lambda *a: "",
            clock=lambda: self.now,
            queue_pass=lambda: start_waiting(
                self.agents,  # type: ignore[arg-type]
                None,
                self.queue,
                start=self.starts,
                hosts_of=self.qc.hosts_of,
            ),
            queue_capacity=self.qc,
        )

    def enqueue(self, *ids: str) -> None:
        for job_id in ids:
            opts = LaunchOptions(argv=("python", "t.py"), host="alpha", pool=("alpha",), gpus=GpuRequest(1))
            self.queue.add(job_id, opts)

    def tick(self) -> list[tuple[str, str]]:
        return [(str(r["outcome"]), str((r.get("job") or {}).get("id"))) for r in self.ctl.tick()]

    def boot(self) -> None:
        self.cloud.gate.set()
        self.flights.wait(timeout=30)


def test_a_queued_job_gets_an_instance_launched_and_starts_there(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.enqueue(IDS[0])
    assert ("launching", IDS[0]) in w.tick()  # the pass goes on while it boots
    assert "being launched" in read_notes(w.queue.dir)["alpha"]
    assert w.tick() == []  # still booting: nothing said twice, nothing launched twice
    w.boot()
    done = w.tick()
    assert ("launched", IDS[0]) in done and ("started", IDS[0]) in done
    [(job_id, opts)] = w.starts.calls
    assert job_id == IDS[0] and opts.host == "i-q1" and opts.hosts == ("i-q1",)
    assert "i-q1" in (tmp_path / "policies.toml").read_text()  # joined the pool, for a restart too
    assert len(w.cloud.made) == 1 and not w.queue.entries()


def test_the_spend_ceiling_holds_a_launch_back_and_the_queue_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = World(tmp_path, ceiling=3.0)
    w.enqueue(IDS[0], IDS[1])
    w.tick()
    w.boot()
    w.tick()  # the first starts on i-q1 ($2/h); the second would need $4/h > $3/h
    w.agents.busy.add("i-q1")
    held = w.tick()
    assert ("held", IDS[1]) in held and len(w.cloud.made) == 1
    note = read_notes(w.queue.dir)["alpha"]
    assert "spend ceiling" in note and "$2.00/h launched + $2.00/h" in note and "$3.00/h" in note
    assert w.tick() == []  # held is journaled once, not every pass
    monkeypatch.setattr(paths, "queue_dir", lambda: w.queue.dir)
    [row] = waiting_jobs(lambda line: None)  # what `gpudeck queue` and `ps` list
    assert row["id"] == IDS[1] and "spend ceiling" in row["why"] and "waiting for 1 GPU" in row["why"]


def test_an_unknown_price_launches_nothing(tmp_path: Path) -> None:
    w = World(tmp_path, per_hour=None)
    w.enqueue(IDS[0])
    assert w.tick() == [("held", IDS[0])] and not w.cloud.tokens
    assert "price of ecs.gn7i-c8g1.2xlarge is unknown" in read_notes(w.queue.dir)["alpha"]


def test_a_controller_killed_mid_launch_resumes_the_same_launch(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.enqueue(IDS[0])
    w.tick()  # journaled `launching`, then the controller dies
    w.restart()
    assert w.tick() == []  # the same launch resumed: no new `launching`
    w.boot()
    assert ("started", IDS[0]) in w.tick()
    assert len(set(w.cloud.tokens)) == 1 and len(w.cloud.made) == 1  # one token, one instance


def test_an_instance_idle_past_idle_release_is_released_and_leaves_the_pool(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.enqueue(IDS[0])
    w.tick()
    w.boot()
    w.tick()
    w.live = [Job(IDS[0], "q", [{"host": "i-q1", "state": "running"}])]
    w.now += 3600
    assert w.tick() == []  # busy: kept
    w.live = []  # the job ended
    w.now += 240
    assert w.tick() == []  # idle 4 min < 5 min
    w.restart()  # a restarted controller counts the idle time from its own first look
    w.now += 120
    assert w.tick() == []  # idle since the restart's first look, not since the job's end
    w.now += 299
    assert w.tick() == []
    w.now += 2
    [released] = w.ctl.tick()
    assert (released["outcome"], released["host"], released["pool_name"]) == ("released", "i-q1", "gpus")
    assert w.cloud.released == ["i-q1"]
    assert "i-q1" not in (tmp_path / "policies.toml").read_text()
    assert w.qc.policies.pools["gpus"].hosts == ("alpha",)


def test_pool_fields_are_checked_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "policies.toml"
    for bad, field in (
        ('max_spend_per_hour = "lots"', "max_spend_per_hour: expected a number > 0"),
        ('idle_release = "soon"', "idle_release: expected a duration"),
        ("subnet = 3", "subnet: expected a non-empty string"),
    ):
        path.write_text(
            POOL.replace("max_spend_per_hour = {ceiling}\n", "").replace('idle_release = "5m"\n', "")
            + bad
            + "\n"
        )
        try:
            load(path)
        except PolicyError as exc:
            assert field in str(exc) and "[pool.gpus]" in str(exc) and ":8:" in str(exc), str(exc)
        else:
            raise AssertionError(f"{bad!r} was accepted")
    path.write_text('[pool.p]\nhosts = ["a"]\nmax_spend_per_hour = 2\n')
    try:
        load(path)
    except PolicyError as exc:
        assert "needs launch = true" in str(exc)
    else:
        raise AssertionError("a ceiling without launch was accepted")


def test_policy_run_once_waits_for_its_launch_and_the_next_pass_starts_the_job(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.flights.inline = True  # `policy run --once`: no next pass to ask again
    w.cloud.gate.set()
    w.enqueue(IDS[0])
    assert [o for o, _ in w.tick()] == ["launching", "launched"]
    w.restart()  # the next `policy run --once`
    assert ("started", IDS[0]) in w.tick() and len(w.cloud.made) == 1
