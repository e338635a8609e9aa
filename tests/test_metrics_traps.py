"""The traps: lines that look like metrics and are not, and metrics that hide in odd places."""

from __future__ import annotations

import json

import pytest

from remote_agent.metrics import parse_line

NOT_METRICS = [
    "Downloading 3/10 files",
    "Python 3.8.18 (default, Aug 25 2023, 13:20:30)",
    "Connecting to 192.168.1.10:29500",
    "Saving model checkpoint to /data/run3/checkpoint-1000",
    "2024-05-01 12:34:56,789 - INFO - Starting training",
    "Using 8 GPUs",
    "Number of parameters: 124.44M",
    "  Total optimization steps = 1,000",
    "  Num examples = 60,000",
    "  Instantaneous batch size per device = 8",
    "Epoch 3/100",
    "torch 2.1.0+cu121 transformers 4.36.2",
    '  File "/home/u/train.py", line 123, in <module>',
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.35 GiB total capacity)",
    "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0",
    "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
    "Namespace(batch_size=64, epochs=14, lr=1.0, gamma=0.7, no_cuda=False, dry_run=False, seed=1, save_model=False)",
    "engine/trainer: agnostic_nms=False, amp=True, box=7.5, cls=0.5, dfl=1.5, iou=0.7, lr0=0.01, lrf=0.01",
    "[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).",
    "NCCL INFO Channel 00/02 : 0 1 2 3",
    "Fetching 7 files: 100%|███| 7/7 [00:00<00:00, 44552.55it/s]",
    "Saved checkpoint at step 5000 (epoch 3)",
    "Ultralytics 8.4.130 🚀 Python-3.13.15 torch-2.11.0+cu128 CUDA:0 (Tesla T4, 14913MiB)",
    "mkdir -p /tmp/run-2024-01-01/ckpt_0005",
    "0xdeadbeef 0x1f 1234",
    "",
    "   ",
]


@pytest.mark.parametrize("line", NOT_METRICS)
def test_numbers_that_are_no_metric_give_none(line: str) -> None:
    assert parse_line(line) is None


def test_test_set_average_loss_is_validation_not_loss() -> None:
    point = parse_line("Test set: Average loss: 0.0334, Accuracy: 9890/10000 (99%)")
    assert point is not None and "loss" not in point
    assert point["val_loss"] == 0.0334


def test_loss_scale_beside_the_loss_stays_apart() -> None:
    point = parse_line("iteration 10/ 100 | lm loss: 2.5E+00 | loss scale: 4096.0 |")
    assert point == {"step": 10, "loss": 2.5, "loss_scale": 4096.0}


def test_current_value_wins_over_running_average() -> None:
    assert parse_line("Loss: 6.912 (6.93)  LR: 1e-4") == {"loss": 6.912, "lr": 0.0001}
    assert parse_line("loss=0.2, avg_loss=0.3") == {"loss": 0.2, "loss_avg": 0.3}
    assert parse_line("avg_loss=0.3, loss=0.2") == {"loss": 0.2, "loss_avg": 0.3}


def test_only_a_smoothed_loss_is_the_loss() -> None:
    assert parse_line("step 5 running_loss: 0.42") == {"step": 5, "loss": 0.42}


def test_component_losses_sum_when_no_total_is_printed() -> None:
    assert parse_line("box_loss=1.5 cls_loss=0.25 dfl_loss=0.125 step=4") == {
        "box_loss": 1.5, "cls_loss": 0.25, "dfl_loss": 0.125, "step": 4, "loss": 1.875,
    }  # fmt: skip


def test_total_wins_over_its_parts() -> None:
    assert parse_line("total_loss: 3.0 loss_cls: 1.0 loss_box: 1.5")["loss"] == 3.0


def test_gan_losses_are_not_summed_into_a_loss() -> None:
    point = parse_line("[0/25][0/1583]\tLoss_D: 1.7734\tLoss_G: 5.0971")
    assert point is not None and "loss" not in point
    assert point["loss_d"] == 1.7734 and point["loss_g"] == 5.0971


def test_a_nan_component_makes_the_sum_nan() -> None:
    point = parse_line("      3/100      3.21G        nan      2.345      1.456         42        640")
    assert point is not None and point["loss"] == "nan" and point["box_loss"] == "nan"


def test_validation_values_never_become_loss() -> None:
    lines = [
        "Epoch 0: 100%|██████████| 938/938 [00:20<00:00, 46.12it/s, v_num=0, val_loss=0.180, val_acc=0.945]",
        "{'eval_loss': 1.9, 'epoch': 1.0}",
        '{"val/loss": 0.6, "step": 3}',
        "Test: [ 10/196]\tLoss 8.1201e-01 (7.5210e-01)",
        "Iter 1: Val loss 2.345, Val took 12.345s",
        "validation loss at iteration 1000 | lm loss value: 3.45E+00 |",
        "test_loss=0.5 test_acc=0.9",
    ]
    for line in lines:
        point = parse_line(line)
        assert point is not None, line
        assert "loss" not in point, line


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("iter 200: loss nan, time 100.00ms, mfu 10.00%", {"step": 200, "loss": "nan", "mfu": 10.0}),
        ("iter 200: loss inf, time 100.00ms", {"step": 200, "loss": "inf"}),
        ("loss: -inf step: 3", {"loss": "-inf", "step": 3}),
        ("loss=NaN", {"loss": "nan"}),
        ('{"step": 5, "loss": NaN, "lr": Infinity, "x": -Infinity}', {"step": 5, "loss": "nan", "lr": "inf", "x": "-inf"}),
        ('{"step": 5, "loss": "nan"}', {"step": 5, "loss": "nan"}),
        ("{'loss': 0.6931, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.01}",
         {"loss": 0.6931, "grad_norm": "nan", "lr": 2e-05, "epoch": 0.01}),
        ("loss: 1e999", {"loss": "inf"}),
    ],
)  # fmt: skip
def test_non_finite_values_show_as_strings(line: str, expected: dict) -> None:
    assert parse_line(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("loss: 0 step: 0", {"loss": 0, "step": 0}),
        ("loss: -0.5 step: 1", {"loss": -0.5, "step": 1}),
        ("lr: 1.0E+01 loss: 2", {"lr": 10.0, "loss": 2}),
        ("lr=1e-5 loss=.5", {"lr": 1e-05, "loss": 0.5}),
        ("loss: '0.25' step: \"7\"", {"loss": 0.25, "step": 7}),
    ],
)
def test_number_spellings(line: str, expected: dict) -> None:
    assert parse_line(line) == expected


def test_printed_tensors_read_as_their_value() -> None:
    line = "Epoch 1 loss: tensor(2.3100, device='cuda:0', grad_fn=<NllLossBackward0>)"
    assert parse_line(line) == {"epoch": 1, "loss": 2.31}


def test_epoch_fraction_banner_with_a_metric() -> None:
    assert parse_line("Epoch 2/10: loss=0.5 acc=0.8") == {"epoch": 2, "loss": 0.5, "acc": 0.8}


def test_types_are_kept_ints_stay_ints() -> None:
    point = parse_line('{"step": 10, "loss": 1.0, "epoch": "2"}')
    assert point == {"step": 10, "loss": 1.0, "epoch": 2}
    assert type(point["step"]) is int and type(point["loss"]) is float and type(point["epoch"]) is int


def test_event_lines_belong_to_the_supervisor() -> None:
    assert parse_line('{"event": "checkpoint_saved", "step": 3, "path": "/ckpt/3.pt"}') is None
    assert parse_line('{"event": "oom_backoff", "loss": 1.0}') is None


def test_json_with_nested_groups_and_learning_rate_lists() -> None:
    line = (
        '{"train": {"loss": 0.5, "acc": 0.9}, "val": {"loss": 0.6}, "step": 3, "lr": [0.1, 0.01], "ok": true}'
    )
    assert parse_line(line) == {"loss": 0.5, "acc": 0.9, "val_loss": 0.6, "step": 3, "lr": 0.1}


def test_json_after_a_prefix_still_reads() -> None:
    line = '2024-01-01 12:00:00 INFO metrics {"step": 7, "loss": 0.25}'
    assert parse_line(line) == {"step": 7, "loss": 0.25}


def test_ansi_colour_codes_are_ignored() -> None:
    line = "\x1b[32m2024-01-01 12:00:00\x1b[0m | \x1b[1mINFO\x1b[0m | loss=\x1b[33m1.25\x1b[0m step=\x1b[33m7\x1b[0m"
    assert parse_line(line) == {"loss": 1.25, "step": 7}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[rank0]:[2024-01-01 12:00:00] step=100 loss=2.5 lr=3e-4", {"step": 100, "loss": 2.5, "lr": 0.0003}),
        (
            "[rank1]: iter 100: loss 2.3456, time 123.45ms, mfu 12.34%",
            {"step": 100, "loss": 2.3456, "mfu": 12.34},
        ),
        ("0: step 3 | loss 1.5", {"step": 3, "loss": 1.5}),
        ("2024-01-01T12:00:00.123Z INFO trainer: step=9 loss=0.75", {"step": 9, "loss": 0.75}),
        ("I0101 12:00:00.123456 140123 train.py:88] step: 12, loss: 0.5", {"step": 12, "loss": 0.5}),
    ],
)
def test_timestamp_rank_and_logger_prefixes(line: str, expected: dict) -> None:
    assert parse_line(line) == expected


def test_glued_bar_keeps_its_own_values_over_the_next_message() -> None:
    line = (
        "Epoch 0: 100%|██████████| 10/10 [00:01<00:00,  9.50it/s, loss=0.5, v_num=1]"
        "Validation DataLoader 0:  50%|█████     | 5/10 [00:00<00:00, 50.00it/s]"
    )
    assert parse_line(line) == {"epoch": 0, "it_per_sec": 9.5, "loss": 0.5}


def test_glued_bar_and_log_message() -> None:
    # A bare bar's speed is no metric; the message printed onto its line is.
    line = " 20%|██        | 2/10 [00:01<00:04,  2.00it/s]step 2: loss 0.9 lr 1e-4"
    assert parse_line(line) == {"step": 2, "loss": 0.9, "lr": 0.0001}


def test_glued_message_is_newer_than_the_bar_before_it() -> None:
    line = "Epoch 1:  20%|██        | 2/10 [00:01<00:04,  2.00it/s, loss=0.95]step 2: loss 0.9"
    assert parse_line(line) == {"epoch": 1, "it_per_sec": 2.0, "step": 2, "loss": 0.9}


def test_binary_junk_and_huge_lines_never_raise() -> None:
    assert parse_line("\x00\xff\ufffd loss \x07\x1b[") is None
    big = "loss: 1.0 " + "x" * 100_000
    assert parse_line(big) == {"loss": 1.0}
    assert parse_line("1" * 100_000) is None
    assert parse_line("{" * 50_000 + "}" * 50_000) is None


def test_a_long_json_line_is_read_whole() -> None:
    obj = {"loss": 0.5, "note": "x" * 100_000, "step": 1}
    assert parse_line(json.dumps(obj)) == {"loss": 0.5, "step": 1}


def test_not_a_string_gives_none() -> None:
    assert parse_line(None) is None  # type: ignore[arg-type]
    assert parse_line(b"loss=1") is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Epoch 1, Loss: 0.5", {"epoch": 1, "loss": 0.5}),
        ("Epoch [1/10], Step [100/600], Loss: 0.2156", {"epoch": 1, "step": 100, "loss": 0.2156}),
        (
            "Epoch: 001, Train Loss: 0.7312, Val Loss: 0.6543, Val Acc: 0.8123",
            {"epoch": 1, "loss": 0.7312, "val_loss": 0.6543, "val_acc": 0.8123},
        ),
        ("train loss: 0.345 | val loss: 0.456 | lr: 1e-4", {"loss": 0.345, "val_loss": 0.456, "lr": 0.0001}),
        ("loss 0.25 acc 0.9 step 100", {"loss": 0.25, "acc": 0.9, "step": 100}),
        # Messages about a metric are not a point of it.
        ("Epoch 5, global step 500: 'val_loss' reached 0.12345 (best 0.12345), saving model to '/ckpt/epoch=5-step=500.ckpt' as top 1", None),
        ("Epoch 00005: reducing learning rate of group 0 to 1.0000e-04.", None),
        ("Validation loss decreased (0.512 --> 0.498).  Saving model ...", None),
        ("Epoch 1: val_loss improved from inf to 0.14003, saving model to best.h5", None),
        ("Trainable params: 1,234,567", None),
    ],
)  # fmt: skip
def test_hand_written_training_loops(line: str, expected: dict) -> None:
    assert parse_line(line) == expected


@pytest.mark.parametrize(
    "line", ["step 3 loss_d=0.5 loss_g=1.2", "step 3 d_loss=0.5 g_loss=1.2", "step 3 loss_D=0.5 loss_G=1.2"]
)
def test_a_gans_two_losses_are_never_summed_into_one(line: str) -> None:
    # the discriminator's and the generator's losses pull against each other: a sum means nothing
    values = parse_line(line)
    assert "loss" not in values and values["step"] == 3
