"""A restart-mode resize chain as one job (issue 14, "one job through resizes").

A restart-mode resize stops the job and launches a new id that says `resized_from: {job, nodes}`.
Walking those links back gives the job's ancestors; their points, each cut where its successor
resumed, followed by the job's own, are one continuous series. Plain Python, no IO.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .jobs import JobModel

MAX_CHAIN = 64  # links followed at most: a cycle or a corrupt spec cannot loop


def ancestors(jobs: Mapping[str, JobModel], job: JobModel) -> list[JobModel]:
    """The jobs `job` was resized from, oldest first, as far back as `jobs` knows them."""
    out: list[JobModel] = []
    seen = {job.id}
    link = job.resized_from
    while link is not None and link.job in jobs and link.job not in seen and len(out) < MAX_CHAIN:
        prev = jobs[link.job]
        seen.add(prev.id)
        out.append(prev)
        link = prev.resized_from
    return out[::-1]


def successors(jobs: Mapping[str, JobModel]) -> dict[str, str]:
    """Ancestor id → the id of the job resized from it (for folding a chain into one row)."""
    return {
        j.resized_from.job: j.id
        for j in jobs.values()
        if j.resized_from is not None and j.resized_from.job in jobs and j.resized_from.job != j.id
    }


def joined(parts: Sequence[Sequence[tuple[float, float]]]) -> list[tuple[float, float]]:
    """Points of a chain (oldest part first) as one series: each part keeps only its points before
    the next part's first x, because the successor resumed from a checkpoint taken at or before
    the ancestor's last step and trained the steps after it again."""
    kept: list[Sequence[tuple[float, float]]] = []
    cut = float("inf")
    for part in reversed(parts):
        before = [p for p in part if p[0] < cut]
        kept.append(before)
        if before:
            cut = before[0][0]
    return [p for part in reversed(kept) for p in part]
