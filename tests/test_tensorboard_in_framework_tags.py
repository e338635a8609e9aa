"""TensorBoard in: the tag sets real frameworks write become the names the log parser gives, so a
Keras, HF Trainer or Lightning run charts loss, val_loss and lr whether it printed or only logged."""

from __future__ import annotations

from pathlib import Path

import pytest
from tensorboardX import SummaryWriter

from remote_agent.tbread.logdir import LogdirReader
from remote_agent.tbread.names import point_key

# Keras (keras/src/callbacks/tensorboard.py, TensorBoard._log_epoch_metrics and
# _log_batch_metrics): "epoch_" + name into the `train` and `validation` run folders (val_ stripped
# from the validation logs), "epoch_learning_rate" from _collect_learning_rate, and "batch_" + name
# with update_freq set.
KERAS = [
    ("epoch_loss", "train", "loss"),
    ("epoch_loss", "validation", "val_loss"),
    ("epoch_accuracy", "train", "acc"),
    ("epoch_accuracy", "validation", "val_acc"),
    ("epoch_learning_rate", "train", "lr"),
    ("batch_loss", "train", "loss"),
    ("epoch_steps_per_second", "train", "epoch_steps_per_second"),  # no signal: kept as written
]
# HF Trainer (transformers/integrations/integration_utils.py, TensorBoardCallback.on_log through
# rewrite_logs: eval_X -> eval/X, test_X -> test/X, anything else -> train/X), one run folder.
HF_TRAINER = [
    ("train/loss", "", "loss"),
    ("train/learning_rate", "", "lr"),
    ("train/grad_norm", "", "grad_norm"),
    ("train/epoch", "", "epoch"),
    ("eval/loss", "", "val_loss"),
    ("eval/accuracy", "", "val_acc"),
    ("eval/samples_per_second", "", "val_samples_per_sec"),
    ("test/loss", "", "test_loss"),
]
# Lightning (lightning/pytorch/loggers/tensorboard.py, TensorBoardLogger.log_metrics: add_scalar per
# key as self.log named it; the logger connector adds "epoch"; on_step+on_epoch gives _step/_epoch).
LIGHTNING = [
    ("train_loss", "", "loss"),
    ("val_loss", "", "val_loss"),
    ("epoch", "", "epoch"),
    ("train_loss_step", "", "loss"),
    ("val_acc", "", "val_acc"),
]


@pytest.mark.parametrize(("tag", "run", "key"), KERAS + HF_TRAINER + LIGHTNING)
def test_framework_tags_as_point_keys(tag: str, run: str, key: str) -> None:
    assert point_key(tag, run) == key


def test_a_keras_logdir_reads_as_loss_val_loss_and_lr(tmp_path: Path) -> None:
    # the layout Keras' callback makes: <log_dir>/train and <log_dir>/validation, one step per epoch
    train = SummaryWriter(str(tmp_path / "train"))
    val = SummaryWriter(str(tmp_path / "validation"))
    for epoch in range(2):
        train.add_scalar("epoch_loss", 1.0 / (epoch + 1), epoch)
        train.add_scalar("epoch_learning_rate", 1e-3, epoch)
        val.add_scalar("epoch_loss", 2.0 / (epoch + 1), epoch)
    train.close()
    val.close()
    points = LogdirReader(str(tmp_path)).poll()
    assert {"step": 1, "loss": 0.5, "lr": 1e-3} in points
    assert {"step": 1, "val_loss": 1.0} in points


def test_keras_batch_and_epoch_values_keep_one_step_scale_each(tmp_path: Path) -> None:
    # update_freq=2: batch_loss at the global batch (0, 2, 4, …), epoch_loss at the epoch (0, 1):
    # both were `loss`, so the curve had each epoch's mean among the batches' points at steps 0 and 1
    state, run = str(tmp_path / "tb-state.json"), str(tmp_path / "logs" / "train")
    train = SummaryWriter(run)
    for batch in range(0, 6, 2):
        train.add_scalar("batch_loss", 3.0 - batch / 8, batch)
    train.add_scalar("epoch_loss", 2.75, 0)
    train.close()
    reader = LogdirReader(str(tmp_path / "logs"), state)
    got = reader.poll()
    assert [(p["step"], p["loss"]) for p in got if "loss" in p] == [(0, 3.0), (2, 2.75), (4, 2.5)]
    assert {"step": 0, "loss_epoch": 2.75} in got
    reader.save()
    train = SummaryWriter(run, filename_suffix=".epoch1")  # the run goes on (a second event file)
    for batch in range(6, 12, 2):
        train.add_scalar("batch_loss", 2.0 - batch / 64, batch)
    train.add_scalar("epoch_loss", 1.875, 1)
    train.close()
    adopter = LogdirReader(str(tmp_path / "logs"), state)  # a new supervisor, from the saved state
    later = adopter.poll()
    assert [p["step"] for p in later if "loss" in p] == [6, 8, 10]
    assert {"step": 1, "loss_epoch": 1.875} in later


def test_keras_per_epoch_only_charts_epoch_loss_as_loss(tmp_path: Path) -> None:
    train = SummaryWriter(str(tmp_path / "train"))
    for epoch in range(3):
        train.add_scalar("epoch_loss", 1.0 / 2**epoch, epoch)
    train.close()
    assert [p.get("loss") for p in LogdirReader(str(tmp_path)).poll()] == [1.0, 0.5, 0.25]
