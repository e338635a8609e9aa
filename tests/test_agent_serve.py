"""serve speaks the protocol: hello marker first, answers by id, errors for garbage, never dies."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support.jobs import launch
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient, AgentError


class RawServe:
    """serve as a bare subprocess, to feed it bytes no well-behaved client would send."""

    def __init__(self, agent_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "remote_agent", "serve", "--agent-dir", str(agent_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.lines: list[dict] = []
        self._cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            with self._cv:
                self.lines.append(json.loads(raw))
                self._cv.notify_all()

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def wait_lines(self, n: int, timeout: float = 10) -> list[dict]:
        with self._cv:
            assert self._cv.wait_for(lambda: len(self.lines) >= n, timeout), self.lines
            return list(self.lines)

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=10)


@pytest.fixture
def raw(agent_dir: Path):
    serve = RawServe(agent_dir)
    yield serve
    if serve.proc.poll() is None:
        serve.proc.kill()
        serve.proc.wait()


def test_first_line_is_the_hello_marker(raw: RawServe) -> None:
    marker = raw.wait_lines(1)[0]
    assert marker["gpudeck"] == "agent" and marker["protocol"] == 1 and isinstance(marker["pid"], int)


def test_garbage_gets_errors_and_serve_keeps_answering(raw: RawServe) -> None:
    raw.wait_lines(1)
    raw.send(b"this is not json\n")
    raw.send(b"[1, 2, 3]\n")
    raw.send(b'{"id": 5}\n')
    raw.send(b'{"id": 6, "op": "frobnicate"}\n')
    raw.send(b'{"id": 7, "op": "tail", "job": "../../etc", "node": "0", "since_seq": 0}\n')
    raw.send(b'{"id": 8, "op": "logs", "job": "20260101-000000-abcdef", "offset": -4}\n')
    raw.send(b"\xff\xfe\x00garbage\n")
    raw.send(b'{"id": 9, "op": "ping"}\n')
    lines = raw.wait_lines(9)
    answers = {line.get("id"): line for line in lines[1:]}
    by_error = [line["error"] for line in lines[1:] if not line.get("ok")]
    assert any("not a JSON object" in e for e in by_error)
    assert any('no "op"' in e for e in by_error)
    assert "unknown op 'frobnicate'" in answers[6]["error"]
    assert "not a job id" in answers[7]["error"]
    assert "unknown job" in answers[8]["error"]
    assert any("not UTF-8" in e for e in by_error)
    assert answers[9]["ok"] is True and answers[9]["result"]["time"] > 0
    assert raw.proc.poll() is None


def test_oversized_line_is_refused_without_killing_serve(raw: RawServe) -> None:
    raw.wait_lines(1)
    raw.send(b'{"id": 1, "op": "ping", "pad": "' + b"x" * (5 << 20) + b'"}\n')
    raw.send(b'{"id": 2, "op": "ping"}\n')
    lines = raw.wait_lines(3)
    assert "over" in lines[1]["error"]
    assert lines[2]["id"] == 2 and lines[2]["ok"]


def test_serve_exits_cleanly_on_eof(raw: RawServe) -> None:
    raw.wait_lines(1)
    assert raw.close() == 0


def test_hello_reports_host_and_no_gpu_reason(client: AgentClient) -> None:
    hello = client.request("hello")
    assert hello["protocol"] == 1 and hello["cpu_count"] >= 1 and hello["ram_total_mib"] > 0
    assert hello["hostname"] and abs(hello["time"] - __import__("time").time()) < 60
    # This machine has no NVIDIA driver: the report says so once, with the reason.
    assert hello["gpu"]["available"] is False
    assert hello["gpu"]["reason"].startswith("no NVIDIA GPU: ")


def test_gpus_without_nvml_reports_cpu_and_ram(client: AgentClient) -> None:
    sample = client.request("gpus")
    assert sample["available"] is False and sample["gpus"] == []
    text = json.dumps(sample)
    assert "cpu" in text and "ram" in text


def test_bad_launch_specs_name_the_field(client: AgentClient, workdir: Path) -> None:
    base = {"id": "20261129-120000-abcdef", "name": "ok", "argv": ["true"], "workdir": str(workdir)}
    cases = {
        "spec.name": {**base, "name": "../evil"},
        "spec.id": {**base, "id": "x/../../y"},
        "spec.argv": {**base, "argv": []},
        "spec.workdir": {**base, "workdir": str(workdir / "missing")},
        "spec.env": {**base, "env": {"A": 1}},
        "spec.grace": {**base, "grace": -1},
        "spec.stop_signal": {**base, "stop_signal": "SIGNOPE"},
    }
    for field, spec in cases.items():
        with pytest.raises(AgentError, match=field.replace(".", r"\.")):
            client.request("launch", spec=spec)
    assert client.request("jobs")["jobs"] == []


@pytest.mark.slow
def test_a_slow_stop_does_not_block_other_requests(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    script = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
    job = launch(client, workdir, [sys.executable, "-c", script], grace=3)
    wait_for(
        lambda: "up" in (agent_dir / "jobs" / job["id"] / "0" / "output.log").read_text(),
        what="the job to ignore SIGTERM",
    )
    stop = client.submit("stop", job=job["id"], node="0")
    assert client.request("ping", timeout=30)["time"] > 0
    assert not stop.done()  # the ping was answered while the stop still waits out its 3 s grace
    assert stop.result(30)["state"] == "stopped"
