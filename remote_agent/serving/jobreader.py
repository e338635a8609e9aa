"""The read side of an agent dir's jobs: one view per (job, node), and the `jobs` listing.

Apart from jobs.py (launching, stopping, logs) so that a listing loads only what a listing uses: the
client's local `ps` (tui/remote/local_jobs.py) reads the local host's jobs in its own process. What
only some jobs need (a Slurm job's look at squeue, a frozen or lost supervisor's handling) is
imported when such a job is met."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..jobstate import JobView
from ..names import is_job_id, is_node
from ..slurm.placed import is_slurm
from ..storage.layout import job_dir
from .deletedjobs import deleted_objects
from .listing import list_jobs, list_some

if TYPE_CHECKING:
    from ..slurm.states import SlurmLook


class JobError(Exception):
    """A request about a job that cannot be done; the message is the one-line answer."""


class JobReader:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._views: Dict[Tuple[str, str], JobView] = {}
        self._lock = threading.Lock()
        self._look: Optional[SlurmLook] = None

    def view(self, job: Any, node: Any) -> JobView:
        if not is_job_id(job):
            raise JobError("job: not a job id: %r" % (job,))
        node = "0" if node is None else node
        if not is_node(node):
            raise JobError("node: not a node name: %r" % (node,))
        directory = job_dir(self.root, job, node)
        with self._lock:
            existing = self._views.get((job, node))
            if existing is None:
                if not directory.is_dir():
                    raise JobError("unknown job %s (node %s)" % (job, node))
                existing = self._views[(job, node)] = JobView(job, node, directory)
        return existing

    def list(self, ids: Optional[List[str]] = None) -> List[Dict[str, Any]]:
        """Every job's nodes; with `ids`, only those jobs' (the client knows where its job is)."""
        self._look = None  # one squeue for this listing's Slurm jobs, however many
        if ids is not None:
            wanted = set(ids)
            deleted = [o for o in deleted_objects(self.root) if o.get("id") in wanted]
            return list_some(self.root, self._fold, ids) + deleted
        listed = list_jobs(self.root, self._fold)  # ended jobs from one cache file (listing.py)
        return listed + deleted_objects(self.root)  # and those whose dir was deleted while they ran

    def _fold(self, job: str, node: str, look: Optional[SlurmLook] = None) -> Dict[str, Any]:
        try:
            view = self.view(job, node)
            obj = view.refresh()
            if view.spec is None and obj["state"] == "starting":
                # A launch still writing the job's dir: listed once its spec is there, so a client
                # never holds the job without its name (a TUI toasted a quick failure by its id).
                # One that never finishes turns `lost` after NEVER_STARTED_AFTER and is listed.
                raise LookupError(job)
            if is_slurm(view.spec):  # Slurm's word over its journal; never adopted here (slurm/states.py)
                from ..slurm.states import SlurmLook, fold_slurm

                if look is None:
                    look = self._look = self._look or SlurmLook()
                return fold_slurm(view, obj, look)
            found_by = "a job listing"
            if obj["state"] in ("starting", "running"):
                from .frozen import end_frozen_supervisor

                frozen = end_frozen_supervisor(view)
                if frozen is not None:
                    obj, found_by = view.refresh(), "a job listing; %s" % frozen
            if obj["state"] == "lost":
                from ..supervision.adoption import adopt_if_lost

                outcome = adopt_if_lost(view.files, found_by)
                if outcome == "ended":
                    obj = view.refresh()  # nothing of it was left: its end is journaled now
                elif outcome == "adopting":
                    obj["state"] = view.fields["state"]  # as its journal says: a new supervisor takes over
            return obj
        except JobError:
            raise LookupError(job) from None  # removed while we listed
