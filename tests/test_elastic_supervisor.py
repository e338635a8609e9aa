"""The supervisor of an `--elastic` job's node, driven by a real agent and a shell command that prints
what torchrun and the trainer print: node 0 journals a `resized` record with the client's why at
the regroup, and a node whose own worker failed ends itself `failed` with that worker's cause."""

from __future__ import annotations

from pathlib import Path

from tests.support.jobs import collect, ended, journal, launch, wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient

ELASTIC = {"nodes": 2, "rank": 0, "host": "local", "elastic": [1, 3], "nproc_per_node": 1}
FAILED = (
    "E1201 07:35:17.682000 7336 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
    "local_rank: 0 (pid: 7632) of binary: python"
)


def test_node_0_journals_the_regroup_with_the_clients_why(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    script = """echo '{"step": 1, "loss": 1.0}'; echo '{"step": 2, "loss": 1.0}'
while [ ! -e go ]; do sleep 0.05; done
echo '{"event": "world_size_changed", "previous": 2, "world_size": 3, "step": 2}'
echo '{"step": 3, "loss": 0.9}'; exec sleep 60"""
    job = launch(client, workdir, ["bash", "-c", script], multinode=ELASTIC)
    wait_for(
        lambda: any(r.get("values", {}).get("step") == 2 for r in journal(agent_dir, job["id"])),
        timeout=20,
        what="step 2",
    )
    assert client.request("resizing", job=job["id"], node="0", why="scale +1", **{"from": 2, "to": 3}) == {
        "noted": True
    }
    note = agent_dir / "jobs" / job["id"] / "0" / "resize.json"
    wait_for(lambda: not note.exists(), timeout=20, what="the supervisor read the note")
    (workdir / "go").touch()
    wait_for(
        lambda: any(x.get("event") == "resized" for x in journal(agent_dir, job["id"])),
        timeout=20,
        what="the resized record",
    )
    records = journal(agent_dir, job["id"])
    kinds = [
        (r["kind"], r.get("event") or r.get("values", {}).get("step"))
        for r in records
        if r["kind"] in ("event", "metric")
    ]
    assert kinds[-3:] == [("event", "world_size_changed"), ("event", "resized"), ("metric", 3)]
    data = next(r["data"] for r in records if r.get("event") == "resized")
    assert (data["from"], data["to"], data["world_size"], data["why"], data["step"]) == (
        2,
        3,
        3,
        "scale +1",
        3,
    )
    assert data["pause_s"] >= 0
    client.request("kill", job=job["id"], node="0", timeout=30)


def test_a_node_whose_own_worker_failed_ends_itself_with_that_cause(
    client: AgentClient, workdir: Path
) -> None:
    script = f"""printf '[rank1]: Traceback (most recent call last):\\n[rank1]:   File "x.py", line 1\\n'
echo '[rank1]: RuntimeError: bad GPU'; echo '{FAILED}'; exec sleep 60"""
    job = launch(client, workdir, ["bash", "-c", script], multinode=dict(ELASTIC, rank=1), node="1", grace=5)
    client.request("tail", job=job["id"], node="1", since_seq=0)
    records = collect(client, ended, timeout=30)
    assert {
        "event": "node_failed",
        "data": {"exit_code": 1, "cause": "RuntimeError: bad GPU"},
    }.items() <= next(r for r in records if r.get("event") == "node_failed").items()
    final = records[-1]
    assert (final["state"], final["exit_code"], final["cause"]) == ("failed", 1, "RuntimeError: bad GPU"), (
        final
    )
    assert wait_state(client, job["id"], {"failed"})["cause"] == "RuntimeError: bad GPU"


def test_a_peers_loss_is_left_to_torchrun(client: AgentClient, workdir: Path) -> None:
    script = f"""echo '[rank0]: RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:43442'
echo '{FAILED}'; echo '{{"step": 1, "loss": 1.0}}'; exec sleep 60"""
    job = launch(client, workdir, ["bash", "-c", script], multinode=ELASTIC)
    client.request("tail", job=job["id"], node="0", since_seq=0)
    records = collect(client, lambda got: any(r["kind"] == "metric" for r in got), timeout=20)
    assert not [r for r in records if r.get("event") == "node_failed"]
    assert wait_state(client, job["id"], {"running"})["state"] == "running"
    client.request("kill", job=job["id"], node="0", timeout=30)
