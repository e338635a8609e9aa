"""What Slurm says of jobs: one `squeue` for all of this user's live jobs per agent request, and for
a job squeue no longer lists, `sacct -P` (text: its JSON's exit codes are wrong in 22.05), falling
back to `scontrol show job` when accounting is disabled (no slurmdbd: sacct says so and exits 0)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple

from .commands import SlurmError, run, user

SQUEUE_FORMAT = "%i|%T|%r|%N|%S"
SACCT_FORMAT = "JobID,State,ExitCode,NodeList,Elapsed,AllocTRES"
ENDED_STATES = frozenset(
    [
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
        "REVOKED",
        "SPECIAL_EXIT",
    ]
)


@dataclass(frozen=True)
class SlurmJob:
    job_id: str
    state: str  # Slurm's word: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT…
    reason: Optional[str] = None  # why it waits (Resources, Priority…); None for "None"
    nodes: Optional[str] = None  # the node list, Slurm's form (n[1-2])
    start: Optional[str] = None  # a pending job's expected start, as Slurm gives it
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    elapsed: Optional[int] = None  # seconds the allocation ran, as accounting (sacct) bills it
    gpus: Optional[int] = None  # GPUs allocated to the whole job (sacct's AllocTRES gres/gpu=N)

    @property
    def ended(self) -> bool:
        return self.state in ENDED_STATES

    def to_wire(self) -> Dict[str, object]:
        return {
            "job_id": self.job_id,
            "state": self.state,
            "reason": self.reason,
            "nodes": self.nodes,
            "start": self.start,
            "exit_code": self.exit_code,
            "elapsed": self.elapsed,
            "alloc_gpus": self.gpus,
        }


def _none(text: str) -> Optional[str]:
    text = text.strip()
    return None if text in ("", "(null)", "None", "N/A", "Unknown", "(None)") else text


def _exit(text: str) -> Tuple[Optional[int], Optional[int]]:
    """`3:0` (code:signal) as Slurm writes an exit code."""
    code, _, sig = text.strip().partition(":")
    try:
        return int(code), int(sig or 0)
    except ValueError:
        return None, None


def parse_squeue(out: str) -> Dict[str, SlurmJob]:
    """Readers are total: a line of another shape is skipped."""
    jobs = {}
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) != 5 or not parts[0].strip():
            continue
        job_id, state, reason, nodes, start = parts
        reason_text = _none(reason.strip("()"))
        jobs[job_id.strip()] = SlurmJob(
            job_id.strip(), state.strip().split(" ")[0], reason_text, _none(nodes), _none(start)
        )
    return jobs


def squeue() -> Dict[str, SlurmJob]:
    """Every live job of this user, by id: one command for all of them."""
    code, out, err = run(["squeue", "-h", "-u", user(), "-o", SQUEUE_FORMAT])
    if code != 0:
        raise SlurmError("squeue exited %d: %s" % (code, (err.strip() or "no output").splitlines()[0][:300]))
    return parse_squeue(out)


def parse_elapsed(text: str) -> Optional[int]:
    """`[days-]hours:minutes:seconds` (sacct's Elapsed; `MM:SS` too) in seconds, None otherwise."""
    days, _, clock = text.strip().rpartition("-")
    parts = clock.split(":")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts) or (days and not days.isdigit()):
        return None
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + int(part)
    return seconds + int(days or 0) * 86400


def tres_gpus(text: str) -> Optional[int]:
    """N of `gres/gpu=N` in a TRES list (`billing=4,cpu=4,gres/gpu=4,mem=8G,node=2`); typed entries
    (`gres/gpu:a100=4`) repeat the untyped count, so only that one is read. None: no GPUs named."""
    for item in text.split(","):
        key, _, value = item.strip().partition("=")
        if key == "gres/gpu" and value.isdigit():
            return int(value)
    return None


def parse_sacct(out: str) -> Dict[str, SlurmJob]:
    """`JobID|State|ExitCode|NodeList|Elapsed|AllocTRES` lines (the last two may be missing)."""
    jobs = {}
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) < 4 or not parts[0].strip() or "." in parts[0]:
            continue  # steps (ID.batch, ID.0) are not the job
        job_id, state, exit_code, nodes = parts[:4]
        code, sig = _exit(exit_code)
        jobs[job_id.strip()] = SlurmJob(
            job_id.strip(),
            state.strip().split(" ")[0],
            nodes=_none(nodes),
            exit_code=code,
            signal=sig,
            elapsed=parse_elapsed(parts[4]) if len(parts) > 4 else None,
            gpus=tres_gpus(parts[5]) if len(parts) > 5 else None,
        )
    return jobs


def sacct(job_ids: Iterable[str]) -> Optional[Dict[str, SlurmJob]]:
    """None when accounting is disabled (or sacct fails): the caller asks scontrol instead."""
    ids = sorted(set(job_ids))
    if not ids:
        return {}
    try:
        code, out, err = run(["sacct", "-P", "-n", "-X", "-j", ",".join(ids), "-o", SACCT_FORMAT])
    except SlurmError:
        return None
    if code != 0 or "accounting storage is disabled" in (out + err).lower():
        return None
    return parse_sacct(out)


def parse_scontrol(out: str) -> Optional[SlurmJob]:
    fields: Dict[str, str] = {}
    for token in out.split():
        key, sep, value = token.partition("=")
        if sep and key not in fields:
            fields[key] = value
    if "JobId" not in fields or "JobState" not in fields:
        return None
    code, sig = _exit(fields.get("ExitCode", ""))
    return SlurmJob(
        fields["JobId"],
        fields["JobState"],
        _none(fields.get("Reason", "")),
        _none(fields.get("NodeList", "")),
        _none(fields.get("StartTime", "")),
        code,
        sig,
    )


def scontrol_job(job_id: str) -> Optional[SlurmJob]:
    """None once slurmctld has forgotten the job (MinJobAge after its end) or cannot be asked."""
    try:
        code, out, _ = run(["scontrol", "show", "job", "-o", job_id])
    except SlurmError:
        return None
    return parse_scontrol(out) if code == 0 else None


def ended_jobs(job_ids: Iterable[str]) -> Dict[str, SlurmJob]:
    """How jobs squeue no longer lists ended: sacct for all of them at once, else scontrol each."""
    ids = list(job_ids)
    found = sacct(ids)
    if found is not None and all(i in found for i in ids):
        return found
    found = dict(found or {})
    for job_id in ids:
        if job_id not in found:
            job = scontrol_job(job_id)
            if job is not None:
                found[job_id] = job
    return found
