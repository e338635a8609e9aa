"""The job view's header lists a job's latest values (issue 32, cosmetic): HF's end-of-run summary
(train_runtime, train_loss...) is no latest value, and a distributed job's rank and other ranks'
copies of a value are not listed beside rank 0's."""

from __future__ import annotations

from tui.fleet.jobs import JobModel
from tui.widgets.job_stats import _in_header


def test_a_summary_point_leaves_the_latest_values_as_they_were() -> None:
    job = JobModel(id="j")
    job._metric({"loss": 0.2214, "epoch": 1.92}, 1.0)
    job._metric({"summary": 1, "train_runtime": 662.31, "train_loss": 0.3388, "epoch": 2.0}, 2.0)
    assert job.last == {"loss": 0.2214, "epoch": 1.92}


def test_the_header_leaves_out_the_rank_and_other_ranks_values() -> None:
    last = {"step": 2, "loss": 2.64, "rank": 0, "loss/rank1": 3.77, "lr": 0.1}
    assert [k for k in last if _in_header(k)] == ["loss", "lr"]
