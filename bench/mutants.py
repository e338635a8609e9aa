"""Named mutation checks: do the tests notice when one token of a hot spot changes?

A small, deterministic stand-in for a full mutmut run (the whole suite takes minutes per mutant
here). Each mutant names a file, an exact snippet that must occur exactly once in it, its
replacement, and the narrow test selection that should fail when the snippet changes.

By default the runner never writes to the checkout: it copies the tree once (without .venv, .git
and caches, a few MB) to a scratch directory, and mutates and tests that copy, with PYTHONPATH
pointing at it so that the CLI and agent subprocesses the tests start import the copy too. Others
editing, testing or committing in the checkout meanwhile can neither see a mutant nor commit one.
(`--in-place` mutates the checkout itself; an in-place run once had a mutant swept into a
colleague's `git commit -a` during its two-second window, so use it only on a tree nobody else
touches.) For each mutant the runner re-reads the file, writes the mutated text, runs

    python -m pytest -x -q -p no:cacheprovider -p no:randomly <selection>

under a timeout, and puts the original bytes back in a ``finally`` (Ctrl-C and SIGTERM included).
Every distinct selection is first run once unmutated; a selection that fails then is reported as
"baseline failing" and its mutants are skipped.

In either mode:

* the file is read fresh just before each mutation and restored to exactly those bytes;
* a snippet that is missing (or no longer unique) is reported as "skipped: code moved";
* if the file changed on disk while the mutant was in place (someone saved over it), only the
  mutant's own edit is undone in their text, and a loud warning says so, instead of writing
  back stale bytes over their work;
* pytest runs with PYTHONDONTWRITEBYTECODE=1, and the restore never lands in the same second as
  the mutant with the same size, so no stale mutant ``.pyc`` can outlive the restore.

Usage (from the repository root, in the venv)::

    python bench/mutants.py                 # every mutant, then the table and the survivors
    python bench/mutants.py --list          # the mutants, and whether each snippet is found once
    python bench/mutants.py --only NAME     # one mutant (repeatable)
    python bench/mutants.py --file tui/actions/find.py   # the mutants of one file (repeatable)
    python bench/mutants.py --timeout 120   # seconds per pytest run (default 180)
    python bench/mutants.py --in-place      # mutate the checkout itself (see above)

It is a report: the exit status is 0 whatever survives.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
COPY_IGNORE = shutil.ignore_patterns(
    ".venv",
    ".git",
    "__pycache__",
    "*.pyc",
    ".pytest_cache",
    ".ruff_cache",
    ".import_linter_cache",
    ".hypothesis",
    ".mypy_cache",
    "*.mutants-tmp",
)
PYTEST = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
DEFAULT_TIMEOUT = 180.0


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str  # relative to the repository root
    original: str  # must occur exactly once in the file
    replacement: str
    tests: tuple[str, ...]  # pytest arguments: node ids, files, `-k EXPR`, `-m EXPR`
    what: str  # the behaviour the mutant changes


def m(name: str, file: str, original: str, replacement: str, tests: Sequence[str], what: str) -> Mutant:
    return Mutant(name, file, original, replacement, tuple(tests), what)


# -- test selections --------------------------------------------------------------------------------

RULES = ("tests/test_core_rules.py",)
STATES = ("tests/test_job_states.py", *RULES)
ACTIONS = ("tests/test_actions.py", "tests/test_core_rules.py")
RESTART = ("tests/test_actions.py::test_restart_records_the_specs_argv",)
STOP_RM = (
    "tests/test_actions.py::test_stop_uses_the_jobs_grace_and_rm_needs_an_ended_job",
    "tests/test_actions.py::test_stop_carries_its_reason_and_grace_and_restart_stops_a_live_job_first",
    "tests/test_cli.py::test_rm_refuses_a_live_job",
    "tests/test_cli.py::test_stop_restart_and_rm",
)
OPTIONS = (
    "tests/test_tui_live.py",
    "tests/test_core_rules.py",
    "tests/test_actions.py::test_launch_refuses_bad_options_before_any_io",
    "tests/test_cli.py::test_bad_input_is_one_line_and_a_distinct_exit_code",
    "tests/test_cli.py::test_bad_cost_rules_are_refused",
    "tests/test_cli.py::test_default_names_come_from_the_command",
)
LAUNCH = (
    "tests/test_tui_live.py::test_the_form_and_the_cli_make_the_same_spec",
    "tests/test_core_rules.py",
    "tests/test_cli.py::test_a_local_job_keeps_the_path_it_was_launched_with",
    "tests/test_cli.py::test_budget_and_idle_stop_reach_the_spec",
)
SHARE = (
    "tests/test_cost_cli.py::test_cost_json_matches_hand_calculation",
    "tests/test_cost_rules.py",
    "tests/test_core_rules.py",
)
AUTOSTOP = (
    "tests/test_budget_warning.py",
    "tests/test_agent_autostop.py",
    "tests/test_core_rules.py",
    "-m",
    "not slow",
)
JOURNAL = ("tests/test_agent_journal.py", "tests/test_agent_resume.py", "tests/test_core_rules.py")
METRICS = (
    "tests/test_core_rules.py",
    "tests/test_metrics_traps.py",
    "tests/test_metrics_frameworks.py",
    "tests/test_metrics_logs.py",
)
POINTS = ("tests/test_journal_points.py", "tests/test_journal_burst.py", "tests/test_metrics_text.py")
TAIL = ("tests/test_agent_resume.py", "tests/test_agent_serve.py", "tests/test_agent_tail_edges.py")
JOBSTATE = ("tests/test_job_states.py", "tests/test_agent_stop.py", "tests/test_job_view_ends.py")
SIGKILL = (
    "tests/test_agent_stop.py::test_a_job_ignoring_sigterm_is_killed_after_the_grace_period",
    "tests/test_agent_stop.py::test_children_that_leave_the_group_are_still_killed",
)
NAMES = (
    "tests/test_core_rules.py",
    "tests/test_actions.py::test_launch_refuses_bad_options_before_any_io",
    "tests/test_tui_live.py",
    "tests/test_cli.py::test_bad_input_is_one_line_and_a_distinct_exit_code",
    "tests/test_agent_serve.py::test_bad_launch_specs_name_the_field",
)

# the rooms added for issue 26 (fast tests only: a whole run of these stays practical)
CLOUD_UNITS = ("tests/test_cloud_units.py",)
CLOUD_RULE_TESTS = ("tests/test_cloud_rules.py",)
COST_RULES = ("tests/test_cost_rules.py",)
BILLING = ("tests/test_cost_billing.py",)
POLICY_RULES = ("tests/test_policy_rules.py",)
POLICY_ENGINE = ("tests/test_policy_engine.py",)
FLEET_MODEL = ("tests/test_fleet_model.py",)
FLEET_MODEL_JOBS = ("tests/test_fleet_model.py", "tests/test_fleet_jobs.py")
REDRAW = ("tests/test_tui_redraw.py", "-m", "not slow")
JOBS_SORT = ("tests/test_tui_redraw.py::test_sorting_by_cost_puts_the_dearest_first_and_the_unknown_last",)
GAUGES = ("tests/test_tui_fleet_view.py::test_hot_is_from_the_threshold_up_and_power_over_is_past_the_limit",)
HOSTKEY_CASE = ("tests/test_ssh_hostkeys.py::test_host_names_compare_case_blind_so_an_old_key_reads_changed",)
HOSTKEY_CASE_SSH = ("tests/test_ssh_hostkeys.py::test_mixed_case_lines_match_as_ssh_keygen_finds_them",)
BACKOFF = ("tests/test_tui_live.py::test_backoff_doubles_to_a_cap_and_resets",)
EXACTLY_ONCE = ("tests/test_exactly_once.py",)
STORAGE = ("tests/test_agent_journal.py", "tests/test_journal_points.py")
SERIES_DENSE = ("tests/test_series_dense.py", "-m", "not slow")
STORAGE_LAYOUT = ("tests/test_agent_listing.py", "-m", "not slow")
PLACEMENT = ("tests/test_scale_pool.py", "-m", "not slow")
TEMPLATES = ("tests/test_metrics_batch.py", "tests/test_metrics_templates.py", "-m", "not slow")
TRAINER_CKPT = ("tests/test_trainer_checkpoints.py",)
TRAINER_RESUME = ("tests/test_trainer_resume_exact.py",)

UTIL_PY = "tui/cloud/utilization.py"
CLOUD_RULES_PY = "tui/cloud/rules.py"
COST_RULES_PY = "tui/cost/rules.py"
BILLING_PY = "tui/cost/billing.py"
DURATIONS_PY = "tui/policy/durations.py"
ENGINE_PY = "tui/policy/engine.py"
HOSTS_PY = "tui/fleet/hosts.py"
FLEET_JOBS_PY = "tui/fleet/jobs.py"
JOBS_TABLE_PY = "tui/widgets/jobs_table.py"
GAUGES_PY = "tui/widgets/gauges.py"
KNOWN_HOSTS_PY = "tui/remote/known_hosts_file.py"
HOSTKEYS_PY = "tui/remote/hostkeys.py"
BACKOFF_PY = "tui/remote/backoff.py"
EXACTLY_ONCE_PY = "tui/exactly_once.py"
RECONNECT_PY = "tui/remote/reconnect.py"
JSONIO_PY = "remote_agent/storage/jsonio.py"
POINTCOLUMNS_PY = "remote_agent/storage/pointcolumns.py"
LAYOUT_PY = "remote_agent/storage/layout.py"
PLACEMENT_PY = "tui/actions/placement.py"
TEMPLATES_PY = "remote_agent/metrics/templates.py"
CHECKPOINT_PY = "trainer/checkpoint.py"

FIND = "tui/actions/find.py"
CONTROL = "tui/actions/control.py"
OPTS = "tui/actions/options.py"
LAUNCH_PY = "tui/actions/node_spec.py"  # a node's spec on its host (launch.py calls it)
STATES_PY = "tui/fleet/states.py"
AUTOSTOP_PY = "remote_agent/supervision/autostop.py"
JOURNAL_PY = "remote_agent/storage/journal.py"
RULES_PY = "remote_agent/metrics/rules.py"
KV_PY = "remote_agent/metrics/kv.py"
TAILHUB_PY = "remote_agent/serving/tailhub.py"
RECORDS_PY = "remote_agent/storage/records.py"
METRICLINES_PY = "remote_agent/storage/metriclines.py"
SERVE_PY = "remote_agent/serving/serve.py"
JOBSTATE_PY = "remote_agent/jobstate.py"
PROCTREE_PY = "remote_agent/supervision/proctree.py"
SUPERVISOR_PY = "remote_agent/supervision/supervisor.py"
NAMES_PY = "remote_agent/names.py"

MUTANTS: tuple[Mutant, ...] = (
    # -- tui/actions/find.py: pick() ------------------------------------------------------------
    m(
        "find.prefix_len_5",
        FIND,
        "len(ref) >= 4 and j.id.startswith(ref)",
        "len(ref) >= 5 and j.id.startswith(ref)",
        STATES,
        "an id prefix needs 5 characters instead of 4",
    ),
    m(
        "find.prefix_len_any",
        FIND,
        "len(ref) >= 4 and j.id.startswith(ref)",
        "len(ref) >= 1 and j.id.startswith(ref)",
        STATES,
        "any 1-3 character ref is taken as an id prefix (before names)",
    ),
    m(
        "find.ambiguous_needs_3",
        FIND,
        "if len(by_prefix) > 1:",
        "if len(by_prefix) > 2:",
        STATES,
        "two jobs sharing a prefix are no longer ambiguous",
    ),
    m(
        "find.name_oldest",
        FIND,
        "key=lambda j: j.id, reverse=True)  # ids sort by time",
        "key=lambda j: j.id, reverse=False)  # ids sort by time",
        STATES,
        "a name resolves to its oldest job",
    ),
    m(
        "find.live_filter_flipped",
        FIND,
        "live = [j for j in named if not j.ended]",
        "live = [j for j in named if j.ended]",
        STATES,
        "the live filter keeps ended jobs",
    ),
    m(
        "find.live_filter_dropped",
        FIND,
        "live = [j for j in named if not j.ended]",
        "live = []",
        STATES,
        "a name never prefers its live job",
    ),
    m(
        "find.ps_oldest_first",
        FIND,
        "return sorted(jobs.values(), key=lambda j: j.id, reverse=True)",
        "return sorted(jobs.values(), key=lambda j: j.id, reverse=False)",
        ("tests/test_cli.py", *ACTIONS),
        "list_jobs (ps) lists oldest first",
    ),
    # -- tui/actions/control.py -------------------------------------------------------------------
    m(
        "control.stop_margin_30",
        CONTROL,
        "STOP_MARGIN = 60.0",
        "STOP_MARGIN = 30.0",
        STATES,
        "a stop waits grace + 30 s",
    ),
    m(
        "control.stop_wait_min_grace",
        CONTROL,
        "grace = max(\n            (n.grace",
        "grace = min(\n            (n.grace",
        STATES,
        "a multi-node stop waits the shortest node grace",
    ),
    m(
        "control.stop_wait_unknown_grace_0",
        CONTROL,
        "n.grace if n.grace is not None else DEFAULT_GRACE",
        "n.grace if n.grace is not None else 0.0",
        STATES,
        "a node of unknown grace counts as grace 0",
    ),
    m(
        "control.stop_wait_ignores_grace",
        CONTROL,
        'wait = stop_wait(job, grace if action == "stop" else 0.0)',
        "wait = stop_wait(job, 0.0)",
        ACTIONS,
        "end() waits only the margin, not the grace",
    ),
    m(
        "control.restart_drops_argv",
        CONTROL,
        "argv=[str(a) for a in argv],\n                restart_of=job.id,",
        "argv=[],\n                restart_of=job.id,",
        RESTART,
        "restart records no argv",
    ),
    m(
        "control.restart_drops_restart_of",
        CONTROL,
        "argv=[str(a) for a in argv],\n                restart_of=job.id,",
        "argv=[str(a) for a in argv],\n                restart_of=None,",
        RESTART,
        "restart records no restart_of",
    ),
    m(
        "control.restart_no_stop_first",
        CONTROL,
        '    if not job.ended:\n        end(agents, job, "stop")',
        '    if False:\n        end(agents, job, "stop")',
        STOP_RM,
        "restart does not stop a live job first",
    ),
    m(
        "control.remove_live_job",
        CONTROL,
        '    if not job.ended:\n        raise GpudeckError(f"job {job.id} is',
        '    if False:\n        raise GpudeckError(f"job {job.id} is',
        STOP_RM,
        "rm no longer refuses a live job",
    ),
    m(
        "control.end_drops_reason",
        CONTROL,
        '(("grace", grace), ("reason", reason))',
        '(("grace", grace), ("reason", None))',
        (*ACTIONS, "tests/test_tui_cost.py::test_daily_budget_stops_running_job"),
        "stop never passes its reason",
    ),
    m(
        "control.end_drops_grace",
        CONTROL,
        '(("grace", grace), ("reason", reason))',
        '(("grace", None), ("reason", reason))',
        (*ACTIONS, "tests/test_cli.py::test_stop_restart_and_rm"),
        "stop --grace never reaches the agent",
    ),
    # -- tui/actions/options.py -------------------------------------------------------------------
    m(
        "options.name_check_dropped",
        OPTS,
        "if name is not None and not is_job_name(name):",
        "if False:",
        OPTIONS,
        "any --name is accepted",
    ),
    m(
        "options.grace_negative_ok",
        OPTS,
        "not 0 <= grace <= MAX_GRACE",
        "not -1 <= grace <= MAX_GRACE",
        OPTIONS,
        "--grace -1 is accepted",
    ),
    m(
        "options.grace_zero_refused",
        OPTS,
        "not 0 <= grace <= MAX_GRACE",
        "not 0 < grace <= MAX_GRACE",
        OPTIONS,
        "--grace 0 is refused",
    ),
    m(
        "options.budget_zero_ok",
        OPTS,
        "not 0 < opts.budget <= MAX_BUDGET",
        "not 0 <= opts.budget <= MAX_BUDGET",
        OPTIONS,
        "--budget 0 is accepted",
    ),
    m(
        "options.budget_negative_ok",
        OPTS,
        "not 0 < opts.budget <= MAX_BUDGET",
        "not -1 < opts.budget <= MAX_BUDGET",
        OPTIONS,
        "--budget -1 is accepted",
    ),
    m(
        "options.form_budget_zero_ok",
        OPTS,
        "if not math.isfinite(value) or value <= 0:",
        "if not math.isfinite(value) or value < 0:",
        OPTIONS,
        "the form's budget 0 is accepted",
    ),
    m(
        "options.env_leading_digit",
        OPTS,
        '_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")',
        '_ENV_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_]*")',
        OPTIONS,
        "env names may start with a digit",
    ),
    m(
        "options.env_prefix_match",
        OPTS,
        "_ENV_NAME.fullmatch(key)",
        "_ENV_NAME.match(key)",
        OPTIONS,
        "an env name only has to start like one (A-B=1 accepted)",
    ),
    m(
        "options.default_name_suffix_5",
        OPTS,
        'return f"{stem}-{job_id[-4:]}"',
        'return f"{stem}-{job_id[-5:]}"',
        OPTIONS,
        "default names end in 5 id characters",
    ),
    m(
        "options.default_name_module",
        OPTS,
        'prog = rest[rest.index("-m") + 1]',
        'prog = rest[rest.index("-m")]',
        OPTIONS,
        "python -m X is named after -m",
    ),
    m(
        "options.default_name_launchers",
        OPTS,
        'if prog in ("torchrun", "accelerate", "deepspeed") or prog.startswith("python"):',
        'if prog.startswith("python"):',
        OPTIONS,
        "torchrun/accelerate/deepspeed jobs are named after the launcher",
    ),
    # -- tui/actions/launch.py --------------------------------------------------------------------
    m(
        "launch.local_workdir_home",
        LAUNCH_PY,
        '(os.getcwd() if host == LOCAL else "~")',
        '("~" if host == LOCAL else "~")',
        LAUNCH,
        "a local job starts in ~ instead of the current dir",
    ),
    m(
        "launch.path_not_local",
        LAUNCH_PY,
        'path=os.environ.get("PATH", "") if host == LOCAL else None,',
        'path=os.environ.get("PATH", "") if host != LOCAL else None,',
        LAUNCH,
        "the launching PATH goes to SSH jobs, not local ones",
    ),
    m(
        "launch.share_counts_ended",
        LAUNCH_PY,
        'if j["state"] in ("starting", "running"))',
        'if j["state"] in ("starting", "running", "exited"))',
        SHARE,
        "ended jobs shrink a new job's share",
    ),
    m(
        "launch.share_ignores_job_env",
        LAUNCH_PY,
        'env.get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"))',
        'os.environ.get("CUDA_VISIBLE_DEVICES")',
        SHARE,
        "--env CUDA_VISIBLE_DEVICES is ignored by the share",
    ),
    # -- tui/fleet/states.py ----------------------------------------------------------------------
    m(
        "states.failed_before_lost",
        STATES_PY,
        '"lost", "failed", "killed"',
        '"failed", "lost", "killed"',
        STATES,
        "[lost, failed] shows failed",
    ),
    m(
        "states.starting_before_running",
        STATES_PY,
        'STATE_ORDER = ("running", "starting",',
        'STATE_ORDER = ("starting", "running",',
        STATES,
        "[starting, running] shows starting",
    ),
    m(
        "states.killed_before_failed",
        STATES_PY,
        '"failed", "killed", "stopped"',
        '"killed", "failed", "stopped"',
        STATES,
        "[failed, killed] shows killed",
    ),
    m(
        "states.why_shows_user",
        STATES_PY,
        'return reason if reason and reason != "user" else ""',
        'return reason if reason else ""',
        STATES,
        'why() says "user" for a user stop',
    ),
    m(
        "states.why_lost_no_cause",
        STATES_PY,
        'return cause or "its supervisor is gone"',
        'return "its supervisor is gone"',
        STATES,
        "why() drops a lost job's cause",
    ),
    m(
        "states.why_exit_code_0",
        STATES_PY,
        "if exit_code is not None:",
        "if exit_code:",
        STATES,
        "a failed job with exit code 0 says 'failed'",
    ),
    # -- remote_agent/supervision/autostop.py ---------------------------------------------------
    m(
        "autostop.warn_fraction_0.9",
        AUTOSTOP_PY,
        "WARN_FRACTION = 0.8",
        "WARN_FRACTION = 0.9",
        AUTOSTOP,
        "the budget warning comes at 90 %",
    ),
    m(
        "autostop.warn_strict",
        AUTOSTOP_PY,
        "accrued >= WARN_FRACTION * self.budget",
        "accrued > WARN_FRACTION * self.budget",
        AUTOSTOP,
        "no warning at exactly 80 %",
    ),
    m(
        "autostop.warn_every_check",
        AUTOSTOP_PY,
        "not self.warned and accrued >= WARN_FRACTION",
        "accrued >= WARN_FRACTION",
        AUTOSTOP,
        "the budget warning repeats on every check",
    ),
    m(
        "autostop.budget_stop_dropped",
        AUTOSTOP_PY,
        "        if accrued + during_stop >= self.budget:",
        "        if False:",
        AUTOSTOP,
        "the budget never stops the job",
    ),
    m(
        "autostop.budget_stop_strict",
        AUTOSTOP_PY,
        "        if accrued + during_stop >= self.budget:",
        "        if accrued + during_stop > self.budget:",
        AUTOSTOP,
        "no stop at exactly the budget",
    ),
    m(
        "autostop.idle_grace_strict",
        AUTOSTOP_PY,
        'now - self.started >= self.idle["grace_minutes"] * 60',
        'now - self.started > self.idle["grace_minutes"] * 60',
        AUTOSTOP,
        "the idle grace ends one tick late",
    ),
    m(
        "autostop.idle_threshold_strict",
        AUTOSTOP_PY,
        'u >= self.idle["below_pct"]',
        'u > self.idle["below_pct"]',
        AUTOSTOP,
        "a GPU at exactly the threshold counts as idle",
    ),
    m(
        "autostop.pause_ignored",
        AUTOSTOP_PY,
        "if self.idle and not self.paused and self.idle_since is not None:",
        "if self.idle and self.idle_since is not None:",
        AUTOSTOP,
        "a paused idle stop still fires",
    ),
    # -- remote_agent/storage/journal.py --------------------------------------------------------
    m(
        "journal.seq_plus_one_per_batch",
        JOURNAL_PY,
        "self._seq += len(batch)",
        "self._seq += 1",
        JOURNAL,
        "append_many advances seq by 1, not by its record count",
    ),
    m(
        "journal.seq_starts_at_offset_0",
        JOURNAL_PY,
        "enumerate(batch, start=1)",
        "enumerate(batch, start=0)",
        JOURNAL,
        "a batch's first record repeats the last seq",
    ),
    m(
        "journal.recover_keeps_torn_line",
        JOURNAL_PY,
        "if end < len(data):",
        "if end > len(data):",
        JOURNAL,
        "a reopened writer appends after a torn last line",
    ),
    m(
        "journal.reader_returns_torn_line",
        JOURNAL_PY,
        "lines = data[:end].splitlines()",
        "lines = data.splitlines()",
        JOURNAL,
        "read_new_raw returns a torn last line (and takes its seq)",
    ),
    m(
        "journal.reader_skips_torn_line",
        JOURNAL_PY,
        "self.offset += end",
        "self.offset += len(data)",
        JOURNAL,
        "the reader's offset passes a torn line: the record is never read once completed",
    ),
    # -- remote_agent/metrics -------------------------------------------------------------------
    m(
        "rules.no_num_updates_step",
        RULES_PY,
        '("global_step", "num_updates", "iteration", "iter")',
        '("global_step", "iteration", "iter")',
        METRICS,
        "fairseq's num_updates is not the step",
    ),
    m(
        "rules.synonym_overrides_step",
        RULES_PY,
        'if "step" not in values:\n        for name in _STEP_SYNONYMS:',
        "if True:\n        for name in _STEP_SYNONYMS:",
        METRICS,
        "a step synonym overrides a printed step",
    ),
    m(
        "rules.total_loses_to_parts",
        RULES_PY,
        'if "loss" not in values:\n        _derive_loss(values)',
        "if True:\n        _derive_loss(values)",
        METRICS,
        "a printed loss is replaced by a derived one",
    ),
    m(
        "rules.one_part_is_loss",
        RULES_PY,
        "if len(parts) >= 2 and",
        "if len(parts) >= 1 and",
        METRICS,
        "a single component loss becomes the loss",
    ),
    m(
        "rules.no_loss_epoch",
        RULES_PY,
        'for smoothed in ("loss_avg", "loss_epoch"):',
        'for smoothed in ("loss_avg",):',
        METRICS,
        "loss_epoch alone is not the loss",
    ),
    m(
        "rules.gan_prefix_summed",
        RULES_PY,
        "return name[5:] not in _GAN_PARTS",
        "return True",
        METRICS,
        "loss_d + loss_g are summed into a loss",
    ),
    m(
        "rules.gan_suffix_summed",
        RULES_PY,
        "return name[:-5] not in _GAN_PARTS",
        "return True",
        METRICS,
        "d_loss + g_loss are summed into a loss",
    ),
    m(
        "rules.no_val_prefix",
        RULES_PY,
        'return "val_" + name',
        "return name",
        METRICS,
        "an evaluation line's values are not labelled val_",
    ),
    m(
        "kv.lookahead_dates",
        KV_PY,
        r'r"(?![\w.]|[:/\-]\S)"',
        r'r"(?![\w.])"',
        METRICS,
        "numbers followed by :, / or - (dates, times, paths) count",
    ),
    m(
        "kv.fraction_counts",
        KV_PY,
        'if m.group("frac") and name not in PLAIN_INDEXES:',
        "if False:",
        METRICS,
        '"Downloading 3/10" gives a value',
    ),
    m(
        "kv.key_two_words",
        KV_PY,
        r'r"(?: " + _WORD + r"){0,3}?)"',
        r'r"(?: " + _WORD + r"){0,1}?)"',
        METRICS,
        "keys of 3-4 words are cut",
    ),
    # -- remote_agent/serving --------------------------------------------------------------------
    m(
        "records.since_seq_inclusive",
        RECORDS_PY,
        "if found is None or found[1] <= seq:",
        "if found is None or found[1] < seq:",
        POINTS,
        "a resumed tail repeats the since_seq record",
    ),
    m(
        "records.straddling_points_dropped",
        RECORDS_PY,
        "out.append(line if found[0] > seq else _points_after(line, seq))",
        "out.append(line if found[0] > seq else b'')",
        POINTS,
        "a resume inside a points line loses its later points",
    ),
    m(
        "records.points_seq_off_by_one",
        RECORDS_PY,
        '"seq": seq + offset,',
        '"seq": seq + offset + 1,',
        POINTS,
        "a points line's records are numbered from seq + 1",
    ),
    m(
        "metriclines.runs_join_other_names",
        METRICLINES_PY,
        "if here is not None and here == names",
        "if here is not None",
        POINTS,
        "points with other names join a run",
    ),
    m(
        "tailhub.pushes_foreign_lines",
        TAILHUB_PY,
        "return [line for line in lines if line.startswith(b'{\"seq\":')] if lines else lines",
        "return lines",
        TAIL,
        "lines without a seq are pushed",
    ),
    m(
        "serve.negative_since_seq",
        SERVE_PY,
        "or since < 0:",
        "or since < -1:",
        TAIL,
        "since_seq -1 is accepted",
    ),
    # -- remote_agent/jobstate.py ---------------------------------------------------------------
    m(
        "jobstate.stopped_not_terminal",
        JOBSTATE_PY,
        'frozenset(["exited", "failed", "stopped", "killed"])',
        'frozenset(["exited", "failed", "killed"])',
        JOBSTATE,
        "stopped is not a terminal state",
    ),
    m(
        "jobstate.killed_not_terminal",
        JOBSTATE_PY,
        'frozenset(["exited", "failed", "stopped", "killed"])',
        'frozenset(["exited", "failed", "stopped"])',
        JOBSTATE,
        "killed is not a terminal state",
    ),
    m(
        "jobstate.never_lost",
        JOBSTATE_PY,
        'return state if supervisor_alive(self.files.lock) else "lost"',
        "return state",
        JOBSTATE,
        "a job whose supervisor died is not lost",
    ),
    # -- stopping: SIGKILL after the grace ------------------------------------------------------
    m(
        "proctree.kill_sends_sigterm",
        PROCTREE_PY,
        "signal_pids(pids, signal.SIGKILL)",
        "signal_pids(pids, signal.SIGTERM)",
        SIGKILL,
        "the kill loop sends SIGTERM",
    ),
    m(
        "supervisor.no_kill_after_grace",
        SUPERVISOR_PY,
        "if self.deadline is not None and time.monotonic() >= self.deadline:",
        "if False:",
        SIGKILL,
        "nothing is SIGKILLed when the grace runs out",
    ),
    m(
        "supervisor.second_stop_lengthens",
        SUPERVISOR_PY,
        "elif deadline < self.deadline:",
        "elif deadline > self.deadline:",
        ("tests/test_agent_stop.py",),
        "a second stop may lengthen the grace",
    ),
    # -- remote_agent/names.py ------------------------------------------------------------------
    m(
        "names.leading_punctuation",
        NAMES_PY,
        'JOB_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")',
        'JOB_NAME_RE = re.compile(r"^[A-Za-z0-9._-][A-Za-z0-9._-]{0,63}$")',
        NAMES,
        "names may start with - or .",
    ),
    m(
        "names.max_len_65",
        NAMES_PY,
        'JOB_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")',
        'JOB_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,64}$")',
        NAMES,
        "names may be 65 characters",
    ),
    m(
        "names.slash_allowed",
        NAMES_PY,
        'JOB_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")',
        'JOB_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,63}$")',
        NAMES,
        "names may hold / (a/../../x: a path escape)",
    ),
    # -- cloud: tui/cloud/utilization.py, rules.py ---------------------------------------------
    m(
        "utilization.mid_window_at_threshold_idle",
        UTIL_PY,
        "if v0 >= below or t1 - t0 > STALE:",
        "if v0 > below or t1 - t0 > STALE:",
        CLOUD_UNITS,
        "a point exactly at the threshold mid window counts as idle",
    ),
    m(
        "utilization.last_point_at_threshold_idle",
        UTIL_PY,
        "if fresh and points[-1][1] < below:",
        "if fresh and points[-1][1] <= below:",
        CLOUD_UNITS,
        "the latest point at exactly the threshold counts as idle",
    ),
    m(
        "utilization.hole_keeps_the_run",
        UTIL_PY,
        "if v0 >= below or t1 - t0 > STALE:",
        "if v0 >= below:",
        CLOUD_UNITS,
        "a hole in the data no longer ends an idle run",
    ),
    m(
        "utilization.window_one_period_short",
        UTIL_PY,
        "idle_since <= now - window + PERIOD",
        "idle_since <= now - window",
        CLOUD_UNITS,
        "idle needs one point more than the window holds",
    ),
    m(
        "utilization.window_includes_its_start",
        UTIL_PY,
        "if t > now - window]",
        "if t >= now - window]",
        CLOUD_UNITS,
        "the window's average takes the point at now - window",
    ),
    m(
        "utilization.stale_is_now",
        UTIL_PY,
        "fresh = bool(points) and points[-1][0] >= now - STALE",
        "fresh = bool(points)",
        CLOUD_UNITS,
        "a stopped monitoring agent's last point is shown as now",
    ),
    m(
        "cloud_rules.not_opted_in_stopped",
        CLOUD_RULES_PY,
        "    if not i.opted_in:\n",
        "    if False:\n",
        CLOUD_RULE_TESTS,
        "an instance without the opt-in tag is stopped by a rule",
    ),
    m(
        "cloud_rules.idle_keeps",
        CLOUD_RULES_PY,
        "    if view.util.idle:\n",
        "    if False:\n",
        CLOUD_RULE_TESTS,
        "an idle opted-in instance is kept",
    ),
    # -- cost: tui/cost/rules.py, billing.py ----------------------------------------------------
    m(
        "cost_rules.over_strict",
        COST_RULES_PY,
        'if accrued >= budget:\n        return "over"',
        'if accrued > budget:\n        return "over"',
        COST_RULES,
        "a job at exactly its budget is not 'over'",
    ),
    m(
        "cost_rules.warning_strict",
        COST_RULES_PY,
        'return "warning" if accrued >= warn_at * budget else "ok"',
        'return "warning" if accrued > warn_at * budget else "ok"',
        COST_RULES,
        "no warning colour at exactly 80 %",
    ),
    m(
        "cost_rules.share_whole_host",
        COST_RULES_PY,
        "return max(1, min(len(entries), host_gpus)) / host_gpus",
        "return 1.0",
        COST_RULES,
        "a job on 2 of 8 GPUs pays the whole host",
    ),
    m(
        "cost_rules.budget_zero_ok",
        COST_RULES_PY,
        "        if budget <= 0:\n",
        "        if budget < 0:\n",
        COST_RULES,
        "--budget 0 reaches the spec",
    ),
    m(
        "cost_rules.fleet_day_strict",
        COST_RULES_PY,
        "return total >= daily_budget",
        "return total > daily_budget",
        COST_RULES,
        "the fleet's day budget holds at exactly the budget",
    ),
    m(
        "billing.minimum_ignored",
        BILLING_PY,
        "    if end - start < minimum:\n",
        "    if False:\n",
        BILLING,
        "an AWS instance that ran 20 s is billed 20 s, not 60",
    ),
    m(
        "billing.minimum_any_os",
        BILLING_PY,
        'if not provider or os_name.lower() != "linux":',
        "if not provider:",
        BILLING,
        "the Linux-only minimum applies to Windows too",
    ),
    m(
        "billing.period_end_ignored",
        BILLING_PY,
        "hi = end if p.end is None else min(end, p.end)",
        "hi = end",
        BILLING,
        "a price period is billed past its end (a price change bills twice)",
    ),
    m(
        "billing.missing_rate_zero",
        BILLING_PY,
        "        elif amount:\n            return None",
        "        elif False:\n            return None",
        BILLING,
        "an amount in a currency without a rate counts as 0",
    ),
    # -- policy: tui/policy/durations.py, engine.py ---------------------------------------------
    m(
        "durations.minutes_are_seconds",
        DURATIONS_PY,
        '_UNIT = {"s": 1, "m": 60,',
        '_UNIT = {"s": 1, "m": 1,',
        POLICY_RULES,
        '"5m" is 5 seconds',
    ),
    m(
        "durations.days_no_wrap",
        DURATIONS_PY,
        "if a <= b else [*range(a, 7), *range(0, b + 1)]",
        "if a <= b else []",
        POLICY_RULES,
        '"fri-mon" is no day',
    ),
    m(
        "durations.days_range_short",
        DURATIONS_PY,
        "range(a, b + 1) if a <= b",
        "range(a, b) if a <= b",
        POLICY_RULES,
        '"mon-fri" leaves out friday',
    ),
    m(
        "durations.window_empty_ok",
        DURATIONS_PY,
        "    if end <= start:\n",
        "    if end < start:\n",
        POLICY_RULES,
        '"09:00-09:00" is accepted',
    ),
    m(
        "engine.cooldown_dropped",
        ENGINE_PY,
        "if memory is not None and rule.cooldown and inputs.now - memory.t < rule.cooldown:",
        "if False:",
        POLICY_ENGINE,
        "a rule acts again during its cooldown",
    ),
    m(
        "engine.above_inclusive",
        ENGINE_PY,
        "test = (lambda v: v > limit) if above",
        "test = (lambda v: v >= limit) if above",
        POLICY_ENGINE,
        "a metric at exactly `above` triggers",
    ),
    m(
        "engine.below_inclusive",
        ENGINE_PY,
        "else (lambda v: v < limit)",
        "else (lambda v: v <= limit)",
        POLICY_ENGINE,
        "a metric at exactly `below` triggers",
    ),
    m(
        "engine.first_schedule_wins",
        ENGINE_PY,
        "        return active[-1]",
        "        return active[0]",
        POLICY_ENGINE,
        "the first listed schedule wins where windows overlap",
    ),
    m(
        "engine.min_bound_dropped",
        ENGINE_PY,
        "target = max(rule.min, target if rule.max is None else min(rule.max, target))",
        "target = target if rule.max is None else min(rule.max, target)",
        POLICY_ENGINE,
        "a scale down goes below min",
    ),
    m(
        "engine.auto_false_scales",
        ENGINE_PY,
        '"scale" if rule.auto else "propose"',
        '"scale"',
        POLICY_ENGINE,
        "auto = false still scales",
    ),
    m(
        "engine.spent_budget_strict",
        ENGINE_PY,
        "inputs.fleet_budget_left is not None and inputs.fleet_budget_left <= 0\n",
        "inputs.fleet_budget_left is not None and inputs.fleet_budget_left < 0\n",
        POLICY_ENGINE,
        "a day budget spent to the cent still allows a scale up",
    ),
    m(
        "engine.horizon_half_hour",
        ENGINE_PY,
        "HORIZON_H = 1.0",
        "HORIZON_H = 0.5",
        POLICY_ENGINE,
        "a scale up needs only half an hour of budget",
    ),
    # -- fleet: tui/fleet/hosts.py, jobs.py -----------------------------------------------------
    m(
        "hosts.idle_inclusive",
        HOSTS_PY,
        "pct < IDLE_BELOW:",
        "pct <= IDLE_BELOW:",
        FLEET_MODEL,
        "a GPU at exactly the idle threshold shows idle",
    ),
    m(
        "hosts.busy_inclusive",
        HOSTS_PY,
        '"moderate" if pct <= BUSY_ABOVE else "busy"',
        '"moderate" if pct < BUSY_ABOVE else "busy"',
        FLEET_MODEL,
        "a GPU at exactly the busy threshold shows busy",
    ),
    m(
        "fleet_jobs.same_seq_snapshot_taken",
        FLEET_JOBS_PY,
        "stale = seq <= n.last_seq",
        "stale = seq < n.last_seq",
        FLEET_MODEL_JOBS,
        "a node's snapshot at the seq already read rolls the job's last values back (another node's newer)",
    ),
    m(
        "fleet_jobs.ended_becomes_lost",
        FLEET_JOBS_PY,
        'if state == "lost" and n.state in TERMINAL:',
        "if False:",
        FLEET_MODEL_JOBS,
        "a job whose journal wrote its end shows lost",
    ),
    m(
        "fleet_jobs.snapshot_rolls_state_back",
        FLEET_JOBS_PY,
        '(seq is None or seq >= n.last_seq or state == "lost")',
        "(True)",
        FLEET_MODEL_JOBS,
        "an older snapshot rolls a node's state back",
    ),
    # -- widgets: tui/widgets/jobs_table.py, gauges.py ------------------------------------------
    m(
        "jobs_table.row_cache_kept_stale",
        JOBS_TABLE_PY,
        "            self._rows[job.id] = row\n",
        "",
        REDRAW,
        "the row cache keeps the first value: a cell changed and changed back shows the middle value",
    ),
    m(
        "jobs_table.same_ignores_colour",
        JOBS_TABLE_PY,
        "return a.plain == b.plain and a.spans == b.spans",
        "return a.plain == b.plain",
        REDRAW,
        "a cell whose colour changes with the same text is not redrawn",
    ),
    m(
        "jobs_table.live_rows_cached",
        JOBS_TABLE_PY,
        "    if job.active:\n        return None",
        "    if False:\n        return None",
        REDRAW,
        "a live job's row is cached like an ended one (its runtime freezes)",
    ),
    m(
        "jobs_table.cost_sorts_cheapest_first",
        JOBS_TABLE_PY,
        '("cost", lambda j, f: c.accrued if (c := f.costs.jobs.get(j.id)) else None, True),',
        '("cost", lambda j, f: c.accrued if (c := f.costs.jobs.get(j.id)) else None, False),',
        JOBS_SORT,
        "sorting by cost puts the cheapest first",
    ),
    m(
        "gauges.hot_strict",
        GAUGES_PY,
        "c is not None and c >= HOT_C",
        "c is not None and c > HOT_C",
        GAUGES,
        "a GPU at exactly the hot temperature is not shown hot",
    ),
    m(
        "gauges.power_over_inclusive",
        GAUGES_PY,
        "limit is not None and watts > limit",
        "limit is not None and watts >= limit",
        GAUGES,
        "a GPU at exactly its power limit shows over",
    ),
    # -- remote: known_hosts_file.py, hostkeys.py, backoff.py, exactly_once.py, reconnect.py ------
    m(
        "known_hosts.pattern_case",
        KNOWN_HOSTS_PY,
        "for c in pattern.lower())",
        "for c in pattern)",
        HOSTKEY_CASE,
        "an old key under Host.Example.COM reads UNKNOWN for host.example.com",
    ),
    m(
        "known_hosts.hashed_case",
        KNOWN_HOSTS_PY,
        "name.lower().encode()",
        "name.encode()",
        HOSTKEY_CASE_SSH,
        "a hashed line misses a mixed-case name (ssh hashes it lower-cased)",
    ),
    m(
        "known_hosts.negation_ignored",
        KNOWN_HOSTS_PY,
        "            if negated:\n                return False",
        "            if False:\n                return False",
        HOSTKEY_CASE,
        "a !pattern no longer vetoes its line",
    ),
    m(
        "hostkeys.changed_reads_unknown",
        HOSTKEYS_PY,
        "        if plain:\n            # Prefer",
        "        if False:\n            # Prefer",
        HOSTKEY_CASE,
        "a changed key reads UNKNOWN (the user may trust it)",
    ),
    m(
        "backoff.no_cap",
        BACKOFF_PY,
        "return min(self.cap, self.first * 2.0 ** min(self.failures - 1, 1023))",
        "return self.first * 2.0 ** min(self.failures - 1, 1023)",
        BACKOFF,
        "retries back off without a cap",
    ),
    m(
        "backoff.no_reset",
        BACKOFF_PY,
        "        self.failures = 0\n        return self.period",
        "        return self.period",
        BACKOFF,
        "a host that answers again keeps its long retry delay",
    ),
    m(
        "exactly_once.skip_to_repeats",
        EXACTLY_ONCE_PY,
        "return (data, skip_to) if offset <= owed < skip_to else None",
        "return (data, skip_to)",
        EXACTLY_ONCE,
        "a repeated skip_to push gives its line again",
    ),
    m(
        "exactly_once.skip_to_stale_taken",
        EXACTLY_ONCE_PY,
        "return (data, skip_to) if offset <= owed < skip_to else None",
        "return (data, skip_to) if owed < skip_to else None",
        EXACTLY_ONCE,
        "a skip_to push from before bytes still owed jumps over them",
    ),
    m(
        "exactly_once.gap_taken",
        EXACTLY_ONCE_PY,
        "return first <= last + 1",
        "return first <= last + 2",
        EXACTLY_ONCE,
        "a batch one seq past the next is taken (a gap)",
    ),
    m(
        "exactly_once.overlap_not_cut",
        EXACTLY_ONCE_PY,
        "data = data[owed - offset :]",
        "data = data[0:]",
        EXACTLY_ONCE,
        "an overlapping output chunk repeats its first bytes",
    ),
    m(
        "reconnect.stale_end_taken",
        RECONNECT_PY,
        "                    if offset != owed:\n                        return",
        "                    if False:\n                        return",
        EXACTLY_ONCE,
        "an old subscription's end ends a follow with bytes owed",
    ),
    # -- storage: remote_agent/storage ----------------------------------------------------------
    m(
        "jsonio.nan_written_inf",
        JSONIO_PY,
        'return "nan" if math.isnan(value) else',
        'return "inf" if math.isnan(value) else',
        STORAGE,
        'NaN is journaled as "inf"',
    ),
    m(
        "jsonio.non_object_line",
        JSONIO_PY,
        "return obj if isinstance(obj, dict) else None",
        "return obj",
        STORAGE,
        "a journal line that is a JSON list or number reads as a record",
    ),
    m(
        "pointcolumns.first_name_wins",
        POINTCOLUMNS_PY,
        "index = {name: i for i, name in enumerate(names)}",
        "index = {name: i for i, name in reversed(list(enumerate(names)))}",
        SERIES_DENSE,
        "a repeated column name keeps its first column, not its last",
    ),
    # EQUIVALENT (survives by design): `t` is matched by _LINE as a JSON number (digits, dot, exponent), which
    # float() never reads as NaN; `t != t` is defence in depth (1e999 -> inf is caught by the clause after it).
    m(
        "pointcolumns.nan_time_ok",
        POINTCOLUMNS_PY,
        "if len(flat) != count * width or t != t or t in",
        "if len(flat) != count * width or t in",
        SERIES_DENSE,
        "a points line with t = NaN is read by the fast path",
    ),
    m(
        "layout.any_dir_is_a_node",
        LAYOUT_PY,
        "if is_node(node_entry.name) and node_entry.is_dir():",
        "if node_entry.is_dir():",
        STORAGE_LAYOUT,
        "any directory under a job is listed as a node",
    ),
    # -- actions: tui/actions/placement.py -------------------------------------------------------
    m(
        "placement.no_gpu_decrement",
        PLACEMENT_PY,
        "left[best] = max(0, left[best] - per_node)",
        "left[best] = max(0, left[best])",
        PLACEMENT,
        "a new node does not take its GPUs: the next one doubles up",
    ),
    m(
        "placement.negative_free",
        PLACEMENT_PY,
        "left[best] = max(0, left[best] - per_node)",
        "left[best] = left[best] - per_node",
        PLACEMENT,
        "free GPUs go below zero: the more short host ranks lower",
    ),
    m(
        "placement.free_ignored",
        PLACEMENT_PY,
        "key=lambda h: (counts[h], -left[h], candidates.index(h))",
        "key=lambda h: (counts[h], candidates.index(h))",
        PLACEMENT,
        "free GPUs no longer choose between hosts",
    ),
    m(
        "placement.counts_ignored",
        PLACEMENT_PY,
        "key=lambda h: (counts[h], -left[h], candidates.index(h))",
        "key=lambda h: (-left[h], candidates.index(h))",
        PLACEMENT,
        "a new node doubles up on a host with more free GPUs",
    ),
    m(
        "placement.busy_gpus_free",
        PLACEMENT_PY,
        'if isinstance(g, dict) and not g.get("processes"))',
        "if isinstance(g, dict))",
        PLACEMENT,
        "GPUs running a process count as free",
    ),
    m(
        "placement.onto_count_unchecked",
        PLACEMENT_PY,
        "        if len(onto) != add:\n",
        "        if False:\n",
        PLACEMENT,
        "--host with the wrong number of hosts is accepted",
    ),
    # -- metrics: remote_agent/metrics/templates.py ------------------------------------------------
    m(
        "templates.probe_skipped",
        TEMPLATES_PY,
        "if not self._holds(recipe, parts[0::3], numbers, kinds):",
        "if False:",
        TEMPLATES,
        "a recipe is confirmed by two lines alone (a loss summed while one part stays 0 reads wrong)",
    ),
    m(
        "templates.clear_keeps_regexes",
        TEMPLATES_PY,
        "            self._recent = []\n",
        "",
        TEMPLATES,
        "the regexes survive the cache's clear: a stale one is never dropped",
    ),
    m(
        "templates.clear_keeps_fast",
        TEMPLATES_PY,
        "            self._fast.clear()\n",
        "",
        TEMPLATES,
        "the whole-line readers survive the cache's clear (unbounded)",
    ),
    m(
        "templates.forget_keeps_regex",
        TEMPLATES_PY,
        "        self._recent = [f for f in self._recent if f is not fast]\n",
        "",
        TEMPLATES,
        "a forgotten template is still read by its regex",
    ),
    m(
        "templates.failed_check_keeps_point",
        TEMPLATES_PY,
        "                        out.append(full)",
        "                        out.append(point)",
        TEMPLATES,
        "the line whose check failed keeps the recipe's reading",
    ),
    m(
        "templates.failed_check_not_forgotten",
        TEMPLATES_PY,
        "                        self._forget(fast.key)\n",
        "",
        TEMPLATES,
        "read_run never forgets a template whose check failed",
    ),
    m(
        "templates.zero_speed_same_kind",
        TEMPLATES_PY,
        'if after[k][:1] in "its" and not n.lstrip("+-").strip("0.")',
        "if False",
        TEMPLATES,
        "a zero speed (0.0it/s) shares its template with a real one",
    ),
    # -- trainer: trainer/checkpoint.py --------------------------------------------------------------
    m(
        "checkpoint.oldest_first",
        CHECKPOINT_PY,
        "for n in names if (m := NAME.match(n))), reverse=True)",
        "for n in names if (m := NAME.match(n))), reverse=False)",
        TRAINER_CKPT,
        "a resume takes the oldest checkpoint",
    ),
    m(
        "checkpoint.step_not_checked",
        CHECKPOINT_PY,
        '            and state["step"] == step\n',
        "",
        TRAINER_CKPT,
        "a checkpoint whose content is another step's is taken for its name",
    ),
    m(
        "checkpoint.keys_not_checked",
        CHECKPOINT_PY,
        'and {"model", "optimizer", "step"} <= state.keys()',
        'and "step" in state',
        TRAINER_CKPT,
        "a checkpoint without optimizer state is resumed from",
    ),
    m(
        "checkpoint.other_runs_taken",
        CHECKPOINT_PY,
        "        if run_id is not None and run_id_of(path_for(directory, step)) != run_id:\n",
        "        if False:\n",
        TRAINER_CKPT,
        "a resume takes another run's checkpoint",
    ),
    m(
        "checkpoint.prune_keeps_one_more",
        CHECKPOINT_PY,
        "for step in steps[keep:]:",
        "for step in steps[keep + 1:]:",
        TRAINER_CKPT,
        "prune keeps one checkpoint too many",
    ),
    m(
        "checkpoint.prune_other_runs",
        CHECKPOINT_PY,
        "    if run_id is not None:\n        steps = [s for s in steps if run_id_of(path_for(directory, s)) == run_id]",
        "    pass",
        TRAINER_CKPT,
        "prune deletes another run's checkpoints",
    ),
    m(
        "checkpoint.python_rng_not_restored",
        CHECKPOINT_PY,
        "    random.setstate((py[0], tuple(py[1]), py[2]))\n",
        "",
        TRAINER_RESUME,
        "a resume leaves Python's RNG where it was",
    ),
    m(
        "checkpoint.torch_rng_not_restored",
        CHECKPOINT_PY,
        '    torch.set_rng_state(state["torch"])\n',
        "",
        TRAINER_RESUME,
        "a resume leaves torch's RNG where it was",
    ),
)


# -- applying and restoring ---------------------------------------------------------------------------


class CodeMoved(Exception):
    pass


class _Terminated(BaseException):
    """SIGTERM, raised like KeyboardInterrupt so every `finally` restores its file."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Terminated()


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    """Readers (others' test runs, editors) see the old or the new file, never half of one."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".mutants-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, path)
    except BaseException:
        with _suppress_oserror():
            os.unlink(tmp)
        raise


@contextmanager
def _suppress_oserror() -> Iterator[None]:
    try:
        yield
    except OSError:
        pass


def occurrences(mutant: Mutant, root: Path) -> int:
    try:
        return (root / mutant.file).read_text(encoding="utf-8").count(mutant.original)
    except OSError:
        return 0


def _restore(
    mutant: Mutant, path: Path, original: bytes, mutated: bytes, mode: int, mutated_at: float
) -> None:
    """Ctrl-C and SIGTERM wait until the file is back (they are delivered right after)."""
    blocked = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    try:
        _restore_now(mutant, path, original, mutated, mode, mutated_at)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)


def _restore_now(
    mutant: Mutant, path: Path, original: bytes, mutated: bytes, mode: int, mutated_at: float
) -> None:
    # A .pyc is validated by the source's mtime in whole seconds and its size: the restored file must
    # differ from the mutant in one of them, or an import could keep running the mutant's bytecode.
    if len(original) == len(mutated):
        while int(time.time()) <= int(mutated_at):
            time.sleep(0.05)
    try:
        current = path.read_bytes()
    except FileNotFoundError:
        current = mutated  # someone replaced it mid-rename; put the original back
    if current == mutated:
        _write_atomic(path, original, mode)
        return
    # Someone saved the file while the mutant was in place: undo only our edit, in their text.
    text = current.decode("utf-8", "replace")
    if text.count(mutant.replacement) == 1 and mutant.original not in text:
        _write_atomic(path, text.replace(mutant.replacement, mutant.original, 1).encode("utf-8"), mode)
        print(
            f"\n!!! {mutant.file} changed on disk while mutant {mutant.name} was applied; "
            "reverted only the mutant's edit in the new text. Please check this file.",
            file=sys.stderr,
        )
    elif mutant.replacement not in text:
        print(
            f"\n!!! {mutant.file} changed on disk while mutant {mutant.name} was applied and no longer "
            "holds the mutant; left as it is.",
            file=sys.stderr,
        )
    else:
        print(
            f"\n!!! {mutant.file} changed on disk while mutant {mutant.name} was applied and the mutant "
            f"cannot be undone safely: replace {mutant.replacement!r} with {mutant.original!r} by hand.",
            file=sys.stderr,
        )


@contextmanager
def applied(mutant: Mutant, root: Path) -> Iterator[None]:
    """The mutant in place for the body; the exact original bytes back afterwards, whatever happens."""
    path = root / mutant.file
    try:
        original = path.read_bytes()
        mode = path.stat().st_mode
    except OSError as exc:
        raise CodeMoved(f"cannot read {mutant.file}: {exc}") from None
    text = original.decode("utf-8")
    count = text.count(mutant.original)
    if count != 1:
        raise CodeMoved(f"snippet found {count} times in {mutant.file} (must be exactly once)")
    mutated = text.replace(mutant.original, mutant.replacement, 1).encode("utf-8")
    if mutated == original:
        raise CodeMoved("the replacement equals the snippet")
    compile(mutated, str(path), "exec")  # a mutant is a behaviour change, never a syntax error
    mutated_at = time.time()
    try:
        _write_atomic(path, mutated, mode)
        mutated_at = max(mutated_at, path.stat().st_mtime)
        yield
    finally:
        _restore(mutant, path, original, mutated, mode, mutated_at)


# -- running pytest -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    rc: int | None  # None: timed out
    seconds: float
    tail: str


def run_pytest(tests: Sequence[str], timeout: float, root: Path) -> Run:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", GPUDECK_TEST_PYCACHE="0")  # tests/conftest.py
    if (
        root != ROOT
    ):  # subprocesses (`python -m tui`, `python -m remote_agent`) must import the copy, not the checkout
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    start = time.monotonic()
    proc = subprocess.Popen(
        [*PYTEST, *tests],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        out, rc = _stop(proc), None
    except BaseException:
        _stop(proc)
        raise
    text = out.decode("utf-8", "replace").strip().splitlines()
    return Run(rc, time.monotonic() - start, "\n".join(text[-15:]))


def _stop(proc: subprocess.Popen[bytes]) -> bytes:
    """SIGINT to the pytest we started (its fixtures then kill their jobs), SIGKILL if it lingers."""
    for sig, wait in ((signal.SIGINT, 15.0), (signal.SIGKILL, 10.0)):
        with _suppress_oserror():
            os.killpg(proc.pid, sig)
        try:
            out, _ = proc.communicate(timeout=wait)
            return out or b""
        except subprocess.TimeoutExpired:
            continue
    return b""


# -- the report -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    mutant: Mutant
    outcome: str  # killed, survived, timeout, skipped: ..., baseline failing, error
    seconds: float
    detail: str = ""


def outcome_of(run: Run) -> tuple[str, str]:
    if run.rc is None:
        return "timeout", "killed by the timeout"
    if run.rc == 0:
        return "survived", ""
    if run.rc in (1, 2):  # 1: a test failed; 2: collection errors (the mutant broke an import)
        return "killed", ""
    return "error", f"pytest exit {run.rc}: {run.tail.splitlines()[-1] if run.tail else ''}"


def check_baselines(mutants: Sequence[Mutant], timeout: float, root: Path) -> dict[tuple[str, ...], Run]:
    baselines: dict[tuple[str, ...], Run] = {}
    selections = list(dict.fromkeys(mut.tests for mut in mutants if occurrences(mut, root) == 1))
    for i, tests in enumerate(selections, 1):
        print(f"baseline {i}/{len(selections)}: {' '.join(tests)}", flush=True)
        run = run_pytest(tests, timeout, root)
        baselines[tests] = run
        if run.rc != 0:
            print(
                f"  BASELINE FAILING ({'timeout' if run.rc is None else f'exit {run.rc}'}):\n{run.tail}",
                flush=True,
            )
        else:
            print(f"  ok in {run.seconds:.1f} s", flush=True)
    return baselines


def run_mutant(mutant: Mutant, baseline: Run | None, timeout: float, root: Path) -> Result:
    if baseline is not None and baseline.rc != 0:
        return Result(mutant, "baseline failing", 0.0)
    try:
        with applied(mutant, root):
            run = run_pytest(mutant.tests, timeout, root)
    except CodeMoved as exc:
        return Result(mutant, "skipped: code moved", 0.0, str(exc))
    except SyntaxError as exc:
        return Result(mutant, "error", 0.0, f"the mutant does not compile: {exc}")
    outcome, detail = outcome_of(run)
    return Result(mutant, outcome, run.seconds, detail)


def report(results: Sequence[Result], elapsed: float) -> None:
    width = max(len(r.mutant.name) for r in results)
    fwidth = max(len(r.mutant.file) for r in results)
    print()
    print(f"{'mutant':<{width}}  {'file':<{fwidth}}  {'result':<20}  seconds")
    print(f"{'-' * width}  {'-' * fwidth}  {'-' * 20}  -------")
    for r in results:
        print(f"{r.mutant.name:<{width}}  {r.mutant.file:<{fwidth}}  {r.outcome:<20}  {r.seconds:7.1f}")
    print()
    print("per file (killed / survived / timeout / other):")
    for file in dict.fromkeys(r.mutant.file for r in results):
        mine = [r for r in results if r.mutant.file == file]
        counts = [sum(r.outcome == o for r in mine) for o in ("killed", "survived", "timeout")]
        other = len(mine) - sum(counts)
        print(f"  {file:<{fwidth}}  {counts[0]:3d} / {counts[1]:3d} / {counts[2]:3d} / {other:3d}")
    totals = {o: sum(r.outcome == o for r in results) for o in ("killed", "survived", "timeout")}
    other = len(results) - sum(totals.values())
    print(
        f"\ntotal: {len(results)} mutants: {totals['killed']} killed, {totals['survived']} survived, "
        f"{totals['timeout']} timed out (counted as killed), {other} not run; {elapsed / 60:.1f} min"
    )
    survivors = [r for r in results if r.outcome == "survived"]
    if survivors:
        print(f"\nSURVIVORS ({len(survivors)}): the tests did not notice these changes")
        for r in survivors:
            print(f"  {r.mutant.name} ({r.mutant.file}): {r.mutant.what}")
            print(f"      {r.mutant.original!r} -> {r.mutant.replacement!r}")
            print(f"      tests run: {' '.join(r.mutant.tests)}")
    odd = [r for r in results if r.outcome not in ("killed", "survived")]
    if odd:
        print("\nNOT KILLED BY A FAILING TEST:")
        for r in odd:
            print(f"  {r.mutant.name}: {r.outcome}{': ' + r.detail if r.detail else ''}")


def list_mutants(mutants: Sequence[Mutant]) -> None:
    for mut in mutants:
        count = occurrences(mut, ROOT)
        state = "ok" if count == 1 else f"CODE MOVED (found {count} times)"
        print(
            f"{mut.name}  [{mut.file}]  {state}\n    {mut.what}\n    {mut.original!r} -> {mut.replacement!r}\n"
            f"    tests: {' '.join(mut.tests)}"
        )
    print(f"\n{len(mutants)} mutants")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--list", action="store_true", help="print the mutants and whether each snippet is found once"
    )
    parser.add_argument(
        "--only", action="append", default=[], metavar="NAME", help="run this mutant (repeatable)"
    )
    parser.add_argument(
        "--file", action="append", default=[], metavar="PATH", help="run this file's mutants (repeatable)"
    )
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per pytest run (default 180)"
    )
    parser.add_argument(
        "--in-place",
        action="store_true",
        help="mutate the checkout itself instead of a scratch copy (only on a tree nobody else uses)",
    )
    args = parser.parse_args(argv)

    names = {mut.name for mut in MUTANTS}
    assert len(names) == len(MUTANTS), "mutant names must be unique"
    unknown = [n for n in args.only if n not in names]
    if unknown:
        print(f"unknown mutant(s): {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 0
    mutants = [
        mut
        for mut in MUTANTS
        if (not args.only or mut.name in args.only) and (not args.file or mut.file in args.file)
    ]
    if args.list:
        list_mutants(mutants)
        return 0
    if not mutants:
        print("no mutant selected (see --list)")
        return 0

    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    signal.signal(signal.SIGTERM, _on_sigterm)
    start = time.monotonic()
    results: list[Result] = []
    scratch: Path | None = None
    try:
        if args.in_place:
            root = ROOT
            print(f"mutating the checkout itself: {ROOT}", flush=True)
        else:
            scratch = Path(tempfile.mkdtemp(prefix="gpudeck-mutants-"))
            root = scratch / "tree"
            shutil.copytree(ROOT, root, ignore=COPY_IGNORE, symlinks=True)
            print(f"scratch copy of {ROOT} taken {time.strftime('%H:%M:%S')}: {root}", flush=True)
        baselines = check_baselines(mutants, args.timeout, root)
        for i, mut in enumerate(mutants, 1):
            print(f"[{i}/{len(mutants)}] {mut.name} ... ", end="", flush=True)
            result = run_mutant(mut, baselines.get(mut.tests), args.timeout, root)
            results.append(result)
            print(
                f"{result.outcome} ({result.seconds:.1f} s){' ' + result.detail if result.detail else ''}",
                flush=True,
            )
    except (KeyboardInterrupt, _Terminated):
        print("\ninterrupted: every mutated file was restored; partial report follows", flush=True)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    if results:
        report(results, time.monotonic() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
