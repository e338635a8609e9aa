"""The training loop: steps, reporting, validation, checkpoints and the graceful stop."""

from __future__ import annotations

import argparse
import os
import signal
import time
from collections.abc import Iterator
from types import FrameType

import torch
from torch import nn

from . import checkpoint as ckpt
from . import dist as tdist
from . import resume
from .args import default_threads, parse_args
from .build import build_datasets, build_parts, capture, restore
from .data import Batch, Layout, PositionSampler, make_loader, shutdown_workers, start_iter
from .notice import read_notice
from .objstore import S3Store, Uploader
from .report import Reporter
from .startup import Startup
from .step import ValLoader, inject_oom_above, release_after_oom, train_step, validate


class StopFlag:
    """SIGTERM/SIGINT only set a flag: the step in flight finishes, then the loop checkpoints and exits 0."""

    def __init__(self) -> None:
        self.signal: int | None = None

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGINT and self.signal == signal.SIGINT:
            raise KeyboardInterrupt  # a second Ctrl-C means "now"
        self.signal = signum


def run(argv: list[str] | None = None) -> int:
    startup = Startup()
    startup.mark("imported")  # this module's imports (torch) are done
    args = parse_args(argv)
    args.run_id = resume.run_id(args)
    if args.threads or "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(args.threads or default_threads(args.workers))
    stop = StopFlag()
    stop.install()
    d = tdist.init(args.dist_timeout)
    startup.mark("joined")  # init_process_group returned (gloo may not wait there for every rank)
    out = Reporter(d.rank == 0)
    try:
        code = _train(args, d, stop, out, startup)
        code = tdist.exit_code(d, stop.signal is not None, code)  # elastic: a peer left, not the end
    except BaseException:
        d.close()
        raise
    d.exit(code)  # returns only in a single-process run
    return code


def _fetch_newer(store: S3Store, directory: str, out: Reporter) -> None:
    """A fresh (or stale) machine first brings the newest checkpoint from object storage."""
    remote = store.newest()
    local = ckpt.list_steps(directory)
    if remote and (not local or remote[0] > local[0]):
        path = store.download(remote[1], directory)
        out.event("checkpoint_downloaded", step=remote[0], path=os.path.abspath(path), uri=store.uri)


def _start_layout(args: argparse.Namespace, d: tdist.Dist) -> Layout:
    """The requested micro-batch, capped by what an earlier out-of-memory left on record (any rank)."""
    recorded = None if args.no_resume else ckpt.read_oom_record(args.checkpoint_dir)
    cap = d.min_int(recorded or 1 << 30)
    micro = min(args.micro_batch or args.batch_size, cap)
    return Layout.make(args.batch_size, d.world, micro)


def _train(args: argparse.Namespace, d: tdist.Dist, stop: StopFlag, out: Reporter, startup: Startup) -> int:
    train_ds, val_ds, num_classes = build_datasets(args)
    args.num_classes = num_classes
    layout = _start_layout(args, d)
    startup.mark("peers")  # its collective returned: every rank is up
    parts = build_parts(args, num_classes, d.device)
    if args.inject_oom_above is not None:
        inject_oom_above(parts.model, args.inject_oom_above)

    store = (
        S3Store(args.checkpoint_uri, args.s3_endpoint, args.s3_addressing) if args.checkpoint_uri else None
    )
    if store and not args.no_resume:
        if d.local_rank == 0:
            with store.user_errors():
                _fetch_newer(store, args.checkpoint_dir, out)
        d.barrier()
    uploader = Uploader(store, out.event) if store and d.rank == 0 else None

    step, samples = 0, 0
    choice = resume.choose(args)
    local = choice.found
    if choice.ignored_step is not None and d.rank == 0:
        # Said, not silent: the directory holds another run's training, which this run leaves alone.
        out.event(
            "checkpoint_ignored",
            step=choice.ignored_step,
            run_id=choice.ignored_run,
            this_run=args.run_id,
            hint="another run's checkpoint: --resume continues it, this run starts fresh",
        )
    state = tdist.agree_on_checkpoint(d, local) if not args.no_resume else None
    if state is not None:
        restore(parts, state)
        step, samples = int(state["step"]), int(state["samples_seen"])
        startup.mark("restored")
        out.event(
            "resumed",
            step=step,
            samples_seen=samples,
            world_size=d.world,
            micro_batch=layout.micro,
            run_id=args.run_id,
            from_run=state.get("run_id"),
            startup=startup.fields(),  # epoch seconds of each start-up phase (trainer/startup.py)
        )
        if step >= args.steps:
            out.event("nothing_to_train", step=step, total_steps=args.steps)
            raise resume.nothing_to_train(step, args)
        if state.get("world_size", d.world) != d.world:
            out.event(
                "world_size_changed",
                step=step,
                previous=state["world_size"],
                world_size=d.world,
                micro_batch=layout.micro,
                accumulation=layout.accum,
                global_batch=layout.global_batch,
            )
        del state
    last_saved = step

    model: nn.Module = parts.model
    if d.enabled:
        ids = [d.device.index] if d.device.type == "cuda" else None
        model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
    if args.compile:
        # An OptimizedModule (an nn.Module) at run time; torch.compile's stubs say only "a callable".
        model = torch.compile(model)  # type: ignore[assignment]

    def open_batches() -> Iterator[Batch]:
        sampler = PositionSampler(len(train_ds), args.seed, samples, layout, d.rank)
        loader = make_loader(train_ds, sampler, args.workers, args.prefetch, pin=d.device.type == "cuda")
        return start_iter(loader)

    def save(reason: str) -> None:
        nonlocal last_saved
        if d.rank == 0:
            path = ckpt.path_for(args.checkpoint_dir, step)
            try:
                ckpt.save_atomic(capture(parts, step, samples, layout, args), path)
                ckpt.prune(args.checkpoint_dir, args.keep, args.run_id)
            except OSError as e:
                raise SystemExit(
                    f"trainer: could not save the checkpoint of step {step} to {path}: {e}"
                ) from e
            out.event("checkpoint_saved", step=step, path=os.path.abspath(path), reason=reason)
            if uploader:
                uploader.submit(path)  # after the local write, off the training thread
        d.barrier()  # nobody runs ahead (or exits) before the file is complete
        last_saved = step

    opened: list[Iterator[Batch]] = []  # every training iterator: their workers go down on any way out
    batches = open_batches()
    opened.append(batches)
    val = ValLoader(val_ds, d, args.workers, args.prefetch)
    try:
        # Test hook: which (epoch, index) each rank really trained on, per step.
        sample_log = open(f"{args.sample_log}.rank{d.rank}", "a") if args.sample_log else None  # noqa: SIM115
        started = time.perf_counter()
        window_t, window_steps = started, 0
        loss_sum = torch.zeros((), device=d.device)
        last_ckpt_time = time.monotonic()
        stopping = False
        model.train()
        while step < args.steps and not stopping:
            lr = parts.optimizer.param_groups[0]["lr"]
            try:
                step_loss, keys = train_step(model, parts, batches, layout, d)
            except torch.OutOfMemoryError as e:
                release_after_oom(parts)
                if layout.micro == 1:
                    raise SystemExit(f"out of memory even at micro-batch 1 (step {step + 1}): {e}") from None
                smaller = Layout.make(layout.global_batch, d.world, layout.micro // 2)
                out.event("oom_backoff", step=step + 1, micro_batch=smaller.micro, accumulation=smaller.accum)
                # Recorded beside the checkpoints, so a restart starts with the micro-batch that fits.
                ckpt.write_oom_record(args.checkpoint_dir, smaller.micro)
                if d.enabled:
                    # A rank cannot change its micro-batch alone (the others would hang in all-reduce): leave.
                    msg = f"out of memory under DDP: the restart resumes with micro-batch {smaller.micro}"
                    raise SystemExit(msg) from None
                layout = smaller
                shutdown_workers(batches)
                batches = open_batches()  # the same samples again, cut smaller: the step is retried whole
                opened.append(batches)
                continue
            step += 1
            samples += layout.global_batch
            window_steps += 1
            loss_sum += step_loss
            if sample_log:
                sample_log.writelines(f"{step} {e} {i}\n" for e, i in keys)

            minutes_due = (
                args.checkpoint_minutes > 0
                and time.monotonic() - last_ckpt_time >= 60 * args.checkpoint_minutes
            )
            stopping, minutes_due = d.any(stop.signal is not None, minutes_due)
            if step % args.log_every == 0 or step == args.steps or stopping:
                # The only host sync: reading the loss for the report.
                mean_loss = d.sum_(loss_sum).item() / (window_steps * d.world)
                now = time.perf_counter()
                out.line(
                    {
                        "step": step,
                        "total_steps": args.steps,
                        "epoch": (samples - 1) // len(train_ds),
                        "loss": mean_loss,
                        "lr": lr,
                        "samples_per_sec": window_steps * layout.global_batch / (now - window_t),
                        "world_size": d.world,
                    }
                )
                window_t, window_steps = now, 0
                loss_sum.zero_()
            if args.val_every and (step % args.val_every == 0 or step == args.steps):
                val_loss, val_acc = validate(parts.model, val, d, parts, layout.micro)
                out.line({"step": step, "total_steps": args.steps, "val_loss": val_loss, "val_acc": val_acc})
            if stopping:
                sig = signal.Signals(stop.signal).name if stop.signal else "SIGTERM"
                notice = read_notice()  # the agent's preemption notice, when that is why
                if notice:
                    out.event("sigterm", step=step, signal=sig, preempted=notice)
                else:
                    out.event("sigterm", step=step, signal=sig)
                save("preempted" if notice else "signal")
            elif (args.checkpoint_every and step % args.checkpoint_every == 0) or minutes_due:
                save("periodic")
                last_ckpt_time = time.monotonic()
        if not stopping and step > last_saved:
            save("end")
        if sample_log:
            sample_log.close()
        if uploader and not uploader.drain(args.upload_wait):
            out.event("checkpoint_upload_pending", step=step, waited_s=args.upload_wait)
        shutdown_workers(batches)  # before the process group goes
        val.close()
        d.barrier()  # no rank tears the group down while another still uses it (gloo aborts then)
        out.event(
            "done",
            step=step,
            total_steps=args.steps,
            stopped=stopping,
            run_id=args.run_id,
            seconds=round(time.perf_counter() - started, 3),
        )
        return 0
    finally:
        # Normally done already; after an exception this is what lets the process end at all.
        for it in opened:
            shutdown_workers(it)
        val.close()
