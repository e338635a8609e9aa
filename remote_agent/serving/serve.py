"""`serve`: answers JSON-line requests on stdin and pushes journal events on stdout.

Stateless: everything it says comes from the journals and NVML, so clients may come and go.
Requests run on a thread pool, so a stop waiting out its grace period blocks nothing else.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Optional

from .. import PROTOCOL, VERSION
from ..codestore.ops import CodeOpError, code_gc, code_have
from ..datafetch.ops import DataOpError, job_data
from ..gpus.assign import held
from ..probes.gpu import default as default_nvml
from ..probes.gpuhealth import HealthProbe, with_health
from ..probes.gpuring import GpuRing
from ..probes.network import Listeners, ProbeError, probe
from ..probes.sysinfo import CpuMeter, cpu_ram_sample, host_info
from ..probes.versions import VersionsError, versions
from ..storage.files import describe_os_error, ensure_private_dir
from ..storage.jsonio import loads_object
from ..supervision.hold import release as release_hold
from .adopting import adopt_lost_jobs
from .collect import collect_all
from .dumpop import dump
from .jobs import JobError, JobTable
from .logindex import IndexCache, LogArgError, search
from .output import LineWriter
from .outputhub import OutputHub
from .prices import PriceError, record_price
from .procview import ProcsError, procs
from .seriesfold import series
from .serieswarm import SeriesWarmer
from .signalop import send_signal
from .tailhub import TailHub
from .transition import TransitionError, transition

MAX_REQUEST_BYTES = 4 << 20
MAX_SERIES_WIDTH = 4000


class BadRequest(Exception):
    pass


class Server:
    def __init__(self, root: Path, out: LineWriter) -> None:
        self.root = ensure_private_dir(root)
        ensure_private_dir(root / "jobs")
        self.out = out
        self.jobs = JobTable(root)
        self.hub = TailHub(out)
        self.outputs = OutputHub(out)
        self.line_index = IndexCache()  # the full log's reopening reads only what is new
        self.warmer = SeriesWarmer(root)
        # Made now: the first CPU reading needs an earlier one, and two first requests must share NVML.
        self._nvml = default_nvml()
        self._health: Optional[HealthProbe] = None  # XID events and ECC counts (probes/gpuhealth.py)
        self._cpu = CpuMeter()
        self.gpu_ring = GpuRing(lambda: self._nvml.sample(processes=False))
        self.listeners = Listeners()
        # Jobs lost while nobody looked (a supervisor killed, OOM-killed, a reboot of the agent's
        # user session) are adopted now, not when someone next lists them.
        threading.Thread(target=adopt_lost_jobs, args=(root,), name="adopt", daemon=True).start()

    # -- ops: one method each; OPS, below the class, is the table requests are dispatched on -----

    def op_hello(self, req: Dict[str, Any]) -> Dict[str, Any]:
        info = dict(host_info())
        info.update(agent_version=VERSION, protocol=PROTOCOL, time=time.time(), agent_dir=str(self.root))
        info["gpu"] = self._nvml.inventory()
        return info

    def op_containers(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """The container runtimes here, their versions and whether they can pass GPUs (issue 28)."""
        from ..containers.host import runtimes_report

        return {"runtimes": runtimes_report()}

    def op_slurm(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """A Slurm login node's tools, version and partitions (issue 30: remote_agent/slurm); with
        `output_of`: where that Slurm job writes its output (slurm/output.py); with `preflight`
        ({job, nodes}): that job's new allocation tried with `sbatch --test-only` (slurm/preflight.py)."""
        if "preflight" in req:
            from ..slurm.preflight import PreflightError, preflight

            asked = req["preflight"] if isinstance(req["preflight"], dict) else {}
            try:
                return preflight(self.root, asked.get("job"), asked.get("nodes"))
            except PreflightError as exc:
                raise ProbeError(str(exc)) from None
        if "output_of" in req:
            from ..slurm.output import OutputError, output_of

            try:
                return output_of(req["output_of"])
            except OutputError as exc:
                raise ProbeError(str(exc)) from None
        from ..slurm.probe import slurm_report

        return slurm_report(self.root)

    def op_gpus(self, req: Dict[str, Any]) -> Dict[str, Any]:
        if self._health is None:
            self._health = HealthProbe(self._nvml)
        sample = with_health(dict(self._nvml.sample()), self._health)
        sample["time"] = time.time()
        sample.update(cpu_ram_sample(self._cpu))
        since = req.get("history_since")
        if isinstance(since, (int, float)) and not isinstance(since, bool):
            sample["history"] = self.gpu_ring.since(float(since))
        if req.get("assigned") is True:  # placement asks: a GPU given to a job (--gpus) is not free
            holders = held(self.root)
            sample["gpus"] = [
                dict(g, held_by=holders.get(str(g.get("uuid")))) for g in sample.get("gpus", [])
            ]
        return sample

    def op_jobs(self, req: Dict[str, Any]) -> Dict[str, Any]:
        ids = req.get("ids")
        if ids is not None and not (
            isinstance(ids, list) and len(ids) <= 1000 and all(isinstance(i, str) for i in ids)
        ):
            raise BadRequest("ids: expected a list of job ids")
        listed = {"jobs": self.jobs.list(ids)}
        if req.get("warm_series") is True:
            self.warmer.kick()  # after the listing: a `series` later answers from the cache
        return listed

    def op_live_jobs(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """The jobs running here, counted by their supervisors' locks (a launch's share, issue 33)."""
        from ..supervision.livejobs import live_jobs

        return {"live": live_jobs(self.root)}

    def op_launch(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return self.jobs.launch(req.get("spec"), req.get("data_urls"))

    def op_restart(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return self.jobs.restart(
            req.get("job"),
            req.get("node"),
            req.get("new_id"),
            req.get("as_node"),
            req.get("changes"),
            req.get("data_urls"),
        )

    def op_job_data(self, req: Dict[str, Any]) -> Dict[str, Any]:
        view = self.jobs.view(req.get("job"), req.get("node"))
        return job_data(view.files.spec, view.fields["id"], view.fields["node"])

    def op_stop(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return self.jobs.end(req.get("job"), req.get("node"), "stop", req.get("grace"), req.get("reason"))

    def op_kill(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return self.jobs.end(req.get("job"), req.get("node"), "kill", 0.0)

    def op_tail(self, req: Dict[str, Any]) -> Dict[str, Any]:
        since = req.get("since_seq", 0)
        if isinstance(since, bool) or not isinstance(since, int) or since < 0:
            raise BadRequest("since_seq: expected an integer >= 0, got %r" % (since,))
        view = self._stream_view(req)
        as_text = req.get("text", False)
        if not isinstance(as_text, bool):
            raise BadRequest("text: expected true or false, got %r" % (as_text,))
        self.hub.subscribe(view.fields["id"], view.fields["node"], view.files.journal, since, as_text)
        return {"last_seq": view.refresh()["last_seq"]}

    def _stream_view(self, req: Dict[str, Any]) -> Any:
        """The job a tail or follow names; a client resuming one after a cut learns why it is gone."""
        try:
            return self.jobs.view(req.get("job"), req.get("node"))
        except JobError as exc:
            if not str(exc).startswith("unknown job"):
                raise
            raise JobError("%s: not on this host (removed, or never launched here)" % exc) from None

    def op_series(self, req: Dict[str, Any]) -> Dict[str, Any]:
        width = req.get("width", 1000)
        if isinstance(width, bool) or not isinstance(width, int) or not 16 <= width <= MAX_SERIES_WIDTH:
            raise BadRequest("width: expected an integer from 16 to %d, got %r" % (MAX_SERIES_WIDTH, width))
        view = self.jobs.view(req.get("job"), req.get("node"))
        answer, _ = series(view.files.dir, width)
        return answer

    def op_untail(self, req: Dict[str, Any]) -> Dict[str, Any]:
        view = self.jobs.view(req.get("job"), req.get("node"))
        return {"was_tailing": self.hub.unsubscribe(view.fields["id"], view.fields["node"])}

    def op_logs(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return self.jobs.logs(
            req.get("job"), req.get("node"), req.get("offset", 0), req.get("limit", 1 << 20)
        )

    def op_lines(self, req: Dict[str, Any]) -> Dict[str, Any]:
        view = self.jobs.view(req.get("job"), req.get("node"))
        done = self.jobs.output_done(view)  # first: when it says over, every byte is in the file
        answer = self.line_index.lines(
            str(view.files.output),
            req.get("offset"),
            req.get("line"),
            req.get("step"),
            req.get("max_bytes"),
            view.refresh()["output_gap"],
        )
        return dict(answer, done=done)

    def op_search(self, req: Dict[str, Any]) -> Dict[str, Any]:
        view = self.jobs.view(req.get("job"), req.get("node"))
        return search(
            str(view.files.output),
            req.get("text"),
            req.get("offset"),
            req.get("line"),
            req.get("backward", False),
            req.get("max_bytes"),
            view.refresh()["output_gap"],
        )

    def op_follow(self, req: Dict[str, Any]) -> Dict[str, Any]:
        offset = req.get("offset", 0)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise BadRequest("offset: expected a byte offset >= 0, got %r" % (offset,))
        view = self._stream_view(req)
        self.outputs.follow(view.fields["id"], view.fields["node"], view, offset)
        return {"offset": offset}

    def op_unfollow(self, req: Dict[str, Any]) -> Dict[str, Any]:
        view = self.jobs.view(req.get("job"), req.get("node"))
        return {"was_following": self.outputs.unfollow(view.fields["id"], view.fields["node"])}

    def op_autostop(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return self.jobs.set_autostop(req.get("job"), req.get("node"), req.get("paused"))

    def op_resizing(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return self.jobs.note_resize(
            req.get("job"), req.get("node"), req.get("from"), req.get("to"), req.get("why")
        )

    def op_pace_note(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return self.jobs.note_pace(req.get("job"), req.get("node"), req.get("straggler"), req.get("hang"))

    def op_price(self, req: Dict[str, Any]) -> Dict[str, Any]:
        try:
            return record_price(self.root, req.get("per_hour"), req.get("currency", "USD"), req.get("at"))
        except PriceError as exc:
            raise BadRequest(str(exc)) from None

    def op_procs(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return procs(req, self.jobs, self._nvml)

    def op_signal(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return send_signal(req, self.jobs)

    def op_dump(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return dump(req, self.jobs)

    def op_rm(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return self.jobs.remove(req.get("job"), req.get("node"))

    def op_release(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """End a failed job's --hold-on-fail early (supervision/hold.py); its object after."""
        view = self.jobs.view(req.get("job"), req.get("node"))
        until = view.refresh().get("held_until")
        if not (isinstance(until, (int, float)) and until > time.time()):
            raise JobError("job %s is not held for debugging (or its hold was released)" % req.get("job"))
        if not release_hold(view.files):
            raise JobError("job %s: its journal's lock stays taken: try again" % req.get("job"))
        return view.refresh()

    def op_transition(self, req: Dict[str, Any]) -> Dict[str, Any]:
        try:
            return transition(self.root, req.get("job"), req.get("act"), req.get("what"), req.get("token"))
        except TransitionError as exc:
            raise JobError(str(exc)) from None

    def op_ping(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return {"time": time.time()}

    def op_metrics_listen(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """This host's own /metrics at `listen` (hosts.toml metrics_listen), or none (null)."""
        from ..exporter.daemon import ensure
        from ..supervision.launcher import self_command

        listen = req.get("listen")
        try:
            running = ensure(self.root, listen, self_command())
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        except OSError as exc:
            raise BadRequest("metrics_listen: %s" % (exc,)) from None
        return {"serving": running}

    # -- pre-flight for multi-node jobs (probes/network.py, probes/versions.py) ------------------

    def op_listen(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return self.listeners.listen(req.get("port"), seconds=req.get("seconds", 30.0))

    def op_unlisten(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return self.listeners.unlisten(req.get("port"))

    def op_probe(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return probe(
            req.get("addr"),
            req.get("port"),
            req.get("count", 3),
            req.get("timeout", 3.0),
            req.get("banner", True),
        )

    def op_versions(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return versions(req.get("python"), req.get("setup"), req.get("path"), req.get("workdir"))

    # -- the code store (remote_agent/codestore): a sync's first question, and its collection ------

    def op_code_have(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return code_have(self.root, req.get("snapshot"))

    def op_code_gc(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return code_gc(self.root, req.get("keep_days"), self.jobs.list())

    def op_gc(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return collect_all(self.root, req.get("keep_days"), self.jobs.list())

    # -- dispatch --------------------------------------------------------------------------------

    def handle(self, req: Dict[str, Any]) -> None:
        rid = req.get("id")
        try:
            op = OPS.get(req.get("op"))  # type: ignore[arg-type]
            if op is None:
                raise BadRequest("unknown op %r (known: %s)" % (req.get("op"), ", ".join(sorted(OPS))))
            result = op(self, req)
        except (
            BadRequest,
            CodeOpError,
            DataOpError,
            JobError,
            LogArgError,
            ProbeError,
            ProcsError,
            VersionsError,
        ) as exc:
            self.out.send({"id": rid, "ok": False, "error": str(exc)})
        except OSError as exc:  # a full disk, a vanished file: the cause, in one line
            self.out.send(
                {"id": rid, "ok": False, "error": "%s: %s" % (req.get("op"), describe_os_error(exc))}
            )
        except Exception as exc:  # serve must outlive any one request
            self.out.send(
                {
                    "id": rid,
                    "ok": False,
                    "error": "internal error in %s: %s: %s" % (req.get("op"), type(exc).__name__, exc),
                }
            )
        else:
            self.out.send({"id": rid, "ok": True, "result": result})


# The protocol's ops, by the name a request gives in "op". PROTOCOL.md documents each one;
# tests/test_protocol_doc.py fails when the two differ.
OPS: Dict[str, Callable[[Server, Dict[str, Any]], Any]] = {
    "hello": Server.op_hello,
    "gpus": Server.op_gpus,
    "jobs": Server.op_jobs,
    "launch": Server.op_launch,
    "restart": Server.op_restart,
    "job_data": Server.op_job_data,
    "stop": Server.op_stop,
    "live_jobs": Server.op_live_jobs,
    "kill": Server.op_kill,
    "tail": Server.op_tail,
    "untail": Server.op_untail,
    "series": Server.op_series,
    "logs": Server.op_logs,
    "lines": Server.op_lines,
    "search": Server.op_search,
    "follow": Server.op_follow,
    "unfollow": Server.op_unfollow,
    "autostop": Server.op_autostop,
    "resizing": Server.op_resizing,
    "pace_note": Server.op_pace_note,
    "procs": Server.op_procs,
    "signal": Server.op_signal,
    "dump": Server.op_dump,
    "rm": Server.op_rm,
    "release": Server.op_release,
    "transition": Server.op_transition,
    "price": Server.op_price,
    "ping": Server.op_ping,
    "metrics_listen": Server.op_metrics_listen,
    "listen": Server.op_listen,
    "unlisten": Server.op_unlisten,
    "probe": Server.op_probe,
    "versions": Server.op_versions,
    "code_have": Server.op_code_have,
    "code_gc": Server.op_code_gc,
    "gc": Server.op_gc,
    "containers": Server.op_containers,
    "slurm": Server.op_slurm,
}


def parse_request(raw: bytes) -> Dict[str, Any]:
    if len(raw) > MAX_REQUEST_BYTES:
        raise BadRequest("request line over %d bytes" % MAX_REQUEST_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("request is not UTF-8") from None
    req = loads_object(text)
    if req is None:
        raise BadRequest("request is not a JSON object: %s" % text.strip()[:80])
    if not isinstance(req.get("op"), str):
        raise BadRequest('request has no "op"')
    return req


def serve(
    root: Path,
    stdin: Optional[IO[bytes]] = None,
    stdout: Optional[IO[bytes]] = None,
    heartbeat: float = 0.0,
    on_silence: Optional[Callable[[], None]] = None,
) -> int:
    """Answer requests until stdin ends.

    With heartbeat > 0 (SSH clients ask for it): push `{"push": "heartbeat", "t": …}` every
    `heartbeat` seconds, and call on_silence (default: exit the process at once) when the client
    has sent nothing for SILENT_BEATS heartbeats or our stdout is gone: a client that vanished
    without closing the pipe (network cut, laptop asleep) must not leave a serve behind.
    """
    stdin = stdin or sys.stdin.buffer
    out = LineWriter(stdout or sys.stdout.buffer)
    out.send({"gpudeck": "agent", "version": VERSION, "protocol": PROTOCOL, "pid": os.getpid()})
    server = Server(root, out)
    server.gpu_ring.start()
    pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="op")
    last_input = [time.monotonic()]
    done = threading.Event()
    if heartbeat > 0:
        threading.Thread(
            target=_beat,
            args=(out, heartbeat, last_input, done, on_silence or _exit_now),
            name="heartbeat",
            daemon=True,
        ).start()
    try:
        while True:
            raw = stdin.readline(MAX_REQUEST_BYTES + 1)
            last_input[0] = time.monotonic()
            if not raw:
                break
            if not raw.strip():
                continue
            try:
                req = parse_request(raw)
            except BadRequest as exc:
                if len(raw) > MAX_REQUEST_BYTES and not raw.endswith(b"\n"):
                    _skip_rest_of_line(stdin)
                out.send({"id": None, "ok": False, "error": str(exc)})
                continue
            pool.submit(server.handle, req)
    finally:
        done.set()
        server.hub.close()
        server.outputs.close()
        server.listeners.close_all()
        server.gpu_ring.stop()
        pool.shutdown(wait=False)  # cancel_futures is 3.9+; the agent runs on 3.8
    return 0


SILENT_BEATS = 4  # the SSH client pings every heartbeat; this many missed means it is gone


def _beat(
    out: LineWriter,
    every: float,
    last_input: List[float],
    done: threading.Event,
    on_silence: Callable[[], None],
) -> None:
    while not done.wait(every):
        silent = time.monotonic() - last_input[0] > SILENT_BEATS * every
        if silent or not out.send({"push": "heartbeat", "t": time.time()}):
            on_silence()
            return


def _exit_now() -> None:
    os._exit(0)  # in-flight ops are abandoned on purpose: each job's supervisor owns its job


def _skip_rest_of_line(stdin: IO[bytes]) -> None:
    while True:
        chunk = stdin.readline(1 << 20)
        if not chunk or chunk.endswith(b"\n"):
            return
