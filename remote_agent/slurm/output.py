"""Where a Slurm job writes its output (`gpudeck watch --slurm-job ID`): `StdOut` from
`scontrol show job -o ID`, with the filename patterns scontrol leaves (it expands %j, %x, %u in
22.05, not %N) resolved here: %N is the short host name slurmd writes it on, the batch host's
NodeHostName (measured: NodeName n1 with NodeHostname vm writes out-vm.log)."""

from __future__ import annotations

import re
from typing import Any, Dict, Optional

from .commands import SlurmError, checked, run

_FIELD_END = r"(?=\s+[A-Za-z:/]+=|\s*$)"  # a value runs to the next ` Key=` (paths may hold spaces)


class OutputError(Exception):
    """One line: the job is unknown, or Slurm does not say where its output goes."""


def field(out: str, key: str) -> Optional[str]:
    found = re.search(r"(?:^|\s)%s=(.*?)%s" % (re.escape(key), _FIELD_END), out)
    return found.group(1) if found and found.group(1) not in ("", "(null)") else None


def expand(pattern: str, fields: Dict[str, str]) -> str:
    """sbatch's filename patterns: %j/%A job id, %x name, %u user, %N first node, %% a percent.
    Any other (%a, %t, %s: arrays and steps) is left as written."""
    names = {"j": "job", "A": "job", "x": "name", "u": "user", "N": "node"}

    def one(m: re.Match[str]) -> str:
        letter = m.group(2)
        if letter == "%":
            return "%"
        key = names.get(letter)
        value = fields.get(key) if key else None
        return m.group(0) if value is None else value.rjust(int(m.group(1) or 0), "0")

    return re.sub(r"%(\d*)([jAxuN%])", one, pattern)


def first_node(out: str) -> Optional[str]:
    """What sbatch's %N becomes for a batch job's output: the short host name of its batch host
    (`NodeHostName`, which is not always the node's name), else that name."""
    node = field(out, "BatchHost")
    if not node:
        nodes = field(out, "NodeList")
        try:
            names = checked(["scontrol", "show", "hostnames", nodes]).split() if nodes else []
        except SlurmError:
            names = []
        node = names[0] if names else None
    if not node:
        return None
    try:
        host = field(checked(["scontrol", "show", "node", "-o", node]), "NodeHostName")
    except SlurmError:
        host = None
    return (host or node).split(".")[0]


def output_of(job_id: Any) -> Dict[str, Any]:
    """{"job_id", "path", "state", "name"} of a Slurm job slurmctld still knows."""
    if not isinstance(job_id, str) or not job_id.isdigit():
        raise OutputError("output_of: expected a Slurm job id (digits), got %r" % (job_id,))
    try:
        code, out, err = run(["scontrol", "show", "job", "-o", job_id])
    except SlurmError as exc:
        raise OutputError(str(exc)) from None
    if code != 0:
        said = (err.strip() or out.strip() or "no output").splitlines()[0][:200]
        raise OutputError("Slurm job %s: %s" % (job_id, said))
    path = field(out, "StdOut")
    if not path:
        raise OutputError("Slurm job %s: scontrol names no output file (StdOut)" % job_id)
    user = (field(out, "UserId") or "").split("(")[0]
    values = {"job": job_id, "name": field(out, "JobName") or "", "user": user}
    node = first_node(out)
    if node:
        values["node"] = node
    resolved = expand(path, values)
    if "%N" in resolved:
        raise OutputError(
            "Slurm job %s: its output %s names %%N and it has no node yet (pending)" % (job_id, path)
        )
    return {"job_id": job_id, "path": resolved, "state": field(out, "JobState"), "name": values["name"]}
