"""A job's journal records, node by node, as they are and (follow) as they come: what the
TensorBoard export reads. The same subscription `gpudeck metrics` uses (`tail`, as text)."""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator
from typing import Any

from remote_agent.storage.records import expand_all

from ..actions.find import Job
from ..errors import EXIT_NO_SUCH_JOB, GpudeckError
from ..fleet.states import ENDED
from ..remote.client import AgentError, decode_object
from ..session import Session

Records = list[dict[str, Any]]


def journal_batches(
    session: Session, job: Job, follow: bool, idle: Callable[[], None] = lambda: None
) -> Iterator[tuple[str, Records]]:
    """(node, records) batches: every record up to now; with `follow`, then new ones until every
    node has ended. `idle` runs whenever nothing came for a moment (flush what was written)."""
    targets: dict[tuple[str, str], int] = {}
    for n in job.nodes:
        try:
            targets[(job.id, n["node"])] = session.client(n["host"]).tail(
                job.id, n["node"], since_seq=0, text=True
            )
        except AgentError as exc:
            raise GpudeckError(f"{n['host']}: {exc}", EXIT_NO_SUCH_JOB) from None
    clients = {session.client(n["host"]) for n in job.nodes}
    seen = dict.fromkeys(targets, 0)
    finished: set[tuple[str, str]] = set()
    while True:
        if all(seen[k] >= targets[k] for k in targets) and (
            not follow or job.ended or finished == set(targets)
        ):
            return
        for client in clients:
            try:
                job_id, node, last_seq, data = client.journals.get(timeout=0.2)
            except queue.Empty:
                if not client.connected:
                    raise GpudeckError(f"{client.host}: the connection closed while reading") from None
                idle()
                continue
            if (job_id, node) not in targets:
                continue
            seen[(job_id, node)] = last_seq
            lines = data.decode("utf-8", "replace").split("\n")[:-1]
            records = expand_all(r for r in map(decode_object, lines) if r is not None)
            if any(r.get("kind") == "state" and r.get("state") in ENDED for r in records):
                finished.add((job_id, node))
            yield node, records
