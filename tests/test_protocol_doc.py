"""PROTOCOL.md against serve's op table: every op documented, every documented op real, answers as stated.

The table of ops is parsed from the document (rows `| \\`op\\` | arguments | result |`); the keys a
result states are the quoted names inside its backticked `{...}` spans, or the job object's keys
(its own section) when the result is "the job object". A live agent then answers each op once.
"""

from __future__ import annotations

import re
from pathlib import Path

from remote_agent.names import new_job_id
from remote_agent.serving.serve import OPS
from tests.support.jobs import launch, wait_state
from tests.support.sshd import free_port
from tui.remote.client import AgentClient

DOC = Path(__file__).resolve().parents[1] / "remote_agent" / "PROTOCOL.md"
_ROW = re.compile(r"^\|\s*`(\w+)`\s*\|(.*)\|(.*)\|\s*$")
_BRACED = re.compile(r"`(\{[^`]*\})`")
_QUOTED = re.compile(r'"(\w+)"')
_JOB_OBJECT = "the job object"


def section(text: str, heading: str) -> str:
    start = text.index("\n## " + heading)
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def documented_ops() -> dict[str, str]:
    """op -> its result cell, from the table under "Requests and responses"."""
    rows = {}
    for line in section(DOC.read_text(), "Requests and responses").splitlines():
        m = _ROW.match(line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} is documented twice"
            rows[m.group(1)] = m.group(3)
    return rows


def job_object_keys() -> set[str]:
    body = section(DOC.read_text(), "Job object")
    paragraph = body[body.index("Keys:") :].split("\n\n")[0]
    return set(re.findall(r"`(\w+)`", paragraph))


def stated_keys(result: str) -> set[str] | None:
    """The keys a result cell states, or None when it states none (prose only)."""
    spans = _BRACED.findall(result)
    if spans:
        return {key for span in spans for key in _QUOTED.findall(span)}
    if _JOB_OBJECT in result or "the new job's object" in result:
        return job_object_keys()
    return None


def test_the_doc_table_parses():
    rows = documented_ops()
    assert len(rows) >= 10, rows
    assert {"id", "state", "last_seq"} <= job_object_keys()
    assert stated_keys(rows["logs"]) == {"offset", "data", "size", "done", "gap"}


def test_every_op_of_serve_is_documented():
    missing = sorted(set(OPS) - set(documented_ops()))
    assert not missing, f"ops serve answers but remote_agent/PROTOCOL.md does not document: {missing}"


def test_every_documented_op_exists():
    extra = sorted(set(documented_ops()) - set(OPS))
    assert not extra, f"ops PROTOCOL.md documents but serve does not answer: {extra}"


def test_each_op_answers_the_keys_the_doc_states(client: AgentClient, workdir: Path):
    answers = {
        "hello": client.request("hello"),
        "gpus": client.request("gpus", history_since=0),
        "ping": client.request("ping"),
        "metrics_listen": client.request("metrics_listen", listen=None),  # none serves: nothing starts
        "versions": client.request("versions", python="/nonexistent/python3"),  # no torch import: quick
    }
    answers["listen"] = held = client.request("listen", port=free_port(), seconds=10)
    answers["probe"] = client.request("probe", addr="127.0.0.1", port=held["port"], count=1)
    answers["unlisten"] = client.request("unlisten", port=held["port"])
    answers["containers"] = client.request("containers")
    answers["slurm"] = client.request("slurm")  # here no cluster: `missing` says why, the keys stay
    argv = ["bash", "-c", "trap '' INT; echo step=1 loss=0.5; exec sleep 60"]  # `signal` INT: ignored
    answers["launch"] = job = launch(client, workdir, argv)
    wait_state(client, job["id"], {"running"})
    answers["jobs"] = client.request("jobs")
    answers["live_jobs"] = client.request("live_jobs")
    answers["tail"] = client.request("tail", job=job["id"], node="0", since_seq=0)
    answers["untail"] = client.request("untail", job=job["id"], node="0")
    answers["series"] = client.request("series", job=job["id"], node="0", width=100)
    answers["follow"] = client.request("follow", job=job["id"], node="0", offset=0)
    answers["unfollow"] = client.request("unfollow", job=job["id"], node="0")
    answers["autostop"] = client.request("autostop", job=job["id"], node="0", paused=True)
    answers["resizing"] = client.request(
        "resizing", job=job["id"], node="0", **{"from": 2, "to": 3}, why="scale +1"
    )
    answers["pace_note"] = client.request("pace_note", job=job["id"], node="0", straggler="slow", hang=None)
    answers["logs"] = client.request("logs", job=job["id"], node="0")
    answers["lines"] = client.request("lines", job=job["id"], node="0")
    answers["search"] = client.request("search", job=job["id"], node="0", text="loss", offset=0, line=0)
    answers["price"] = client.request("price", per_hour=1.5, currency="USD")
    answers["code_have"] = client.request("code_have", snapshot="0" * 64)
    answers["code_gc"] = client.request("code_gc", keep_days=7)
    answers["gc"] = client.request("gc", keep_days=7)
    answers["job_data"] = client.request("job_data", job=job["id"], node="0")
    answers["procs"] = client.request("procs", job=job["id"], node="0", interval=0.05)
    command = next(p for p in answers["procs"]["processes"] if p["role"] == "command")
    answers["dump"] = client.request("dump", job=job["id"], node="0")  # `sleep`: listed, not Python
    answers["signal"] = client.request("signal", job=job["id"], node="0", pid=command["pid"], signal="INT")
    answers["stop"] = client.request("stop", job=job["id"], node="0", grace=1, timeout=60)
    new_id = new_job_id()
    answers["transition"] = client.request(
        "transition", job=job["id"], act="begin", what="restart", token=new_id
    )
    answers["restart"] = client.request("restart", job=job["id"], node="0", new_id=new_id)
    assert client.request("transition", job=job["id"], act="commit", token=new_id)["phase"] == "committed"
    answers["kill"] = client.request("kill", job=new_id, node="0", timeout=60)
    answers["rm"] = client.request("rm", job=job["id"], node="0")
    failing = launch(client, workdir, ["bash", "-c", "exit 3"], hold_on_fail=600)
    wait_state(client, failing["id"], {"failed"})
    answers["release"] = client.request("release", job=failing["id"], node="0")
    client.request("rm", job=failing["id"], node="0")
    client.request("rm", job=new_id, node="0")

    stated = {op: stated_keys(result) for op, result in documented_ops().items()}
    unchecked = sorted(op for op, keys in stated.items() if keys is not None and op not in answers)
    assert not unchecked, f"documented answers this test does not exercise yet: {unchecked}"
    for op, keys in stated.items():
        if keys is not None:
            assert set(answers[op]) == keys, (
                f"{op}: the agent answers {sorted(answers[op])}, PROTOCOL.md says {sorted(keys)}"
            )
    job_keys = job_object_keys()
    assert all(set(j) == job_keys for j in answers["jobs"]["jobs"])
    assert answers["unfollow"] == {"was_following": True}
    assert answers["untail"] == {"was_tailing": True} and answers["rm"] == {"removed": job["id"]}
    assert answers["restart"]["restart_of"] == job["id"] and answers["restart"]["id"] == new_id
