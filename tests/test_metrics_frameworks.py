"""parse_line against each framework's own output format, one table per framework.

Lines follow the format strings in each project's source (and real logs quoted in their issue
trackers); every case states the exact point expected.
"""

from __future__ import annotations

import pytest

from remote_agent.metrics import parse_line

HF_TRAINER = [
    (
        "{'loss': 2.3456, 'grad_norm': 1.234, 'learning_rate': 4.5e-05, 'epoch': 0.12}",
        {"loss": 2.3456, "grad_norm": 1.234, "lr": 4.5e-05, "epoch": 0.12},
    ),
    (  # older versions print no grad_norm
        "{'loss': 0.6931, 'learning_rate': 5e-05, 'epoch': 1.0}",
        {"loss": 0.6931, "lr": 5e-05, "epoch": 1.0},
    ),
    (  # recent versions print the values as formatted strings
        "{'loss': '2.346', 'grad_norm': '1.234', 'learning_rate': '4.5e-05', 'epoch': '0.12'}",
        {"loss": 2.346, "grad_norm": 1.234, "lr": 4.5e-05, "epoch": 0.12},
    ),
    (
        "{'loss': 1.2, 'grad_norm': tensor(0.9500, device='cuda:0'), 'learning_rate': np.float64(3e-05), 'epoch': 0.5}",
        {"loss": 1.2, "grad_norm": 0.95, "lr": 3e-05, "epoch": 0.5},
    ),
    (
        "{'eval_loss': 1.9, 'eval_accuracy': 0.81, 'eval_runtime': 3.2, 'eval_samples_per_second': 100.0, 'eval_steps_per_second': 12.5, 'epoch': 1.0}",
        {"val_loss": 1.9, "val_acc": 0.81, "val_runtime": 3.2, "val_samples_per_sec": 100.0,
         "val_steps_per_sec": 12.5, "epoch": 1.0},
    ),
    (  # the end-of-run summary is a summary: its train_loss is no point on the curve
        "{'train_runtime': 123.4, 'train_samples_per_second': 12.3, 'train_steps_per_second': 1.5, 'total_flos': 1.2e+16, 'train_loss': 2.1, 'epoch': 3.0}",
        {"summary": 1, "train_runtime": 123.4, "train_samples_per_sec": 12.3, "train_steps_per_sec": 1.5,
         "total_flos": 1.2e16, "train_loss": 2.1, "epoch": 3.0},
    ),
    (  # the bar and the log dict on one physical line
        " 10%|█         | 50/500 [00:10<01:30,  5.00it/s]{'loss': 2.1, 'grad_norm': 0.8, 'learning_rate': 5e-05, 'epoch': 0.1}",
        {"loss": 2.1, "grad_norm": 0.8, "lr": 5e-05, "epoch": 0.1},
    ),
    (  # TRL's SFTTrainer adds token counts and accuracy to the same dict
        "{'loss': 1.2034, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'num_tokens': 123456.0, 'mean_token_accuracy': 0.7012, 'epoch': 0.1}",
        {"loss": 1.2034, "grad_norm": 0.5, "lr": 2e-05, "num_tokens": 123456.0, "mean_token_acc": 0.7012, "epoch": 0.1},
    ),
    (  # TRL's DPOTrainer: rewards and log-probs by group
        "{'loss': 0.6931, 'rewards/chosen': 0.0125, 'rewards/rejected': -0.0031, 'rewards/accuracies': 0.625, 'rewards/margins': 0.0156, 'logps/chosen': -312.5, 'epoch': 0.05}",
        {"loss": 0.6931, "rewards_chosen": 0.0125, "rewards_rejected": -0.0031, "rewards_accuracies": 0.625,
         "rewards_margins": 0.0156, "logps_chosen": -312.5, "epoch": 0.05},
    ),
    (" 45%|████▌     | 450/1000 [01:23<01:40,  5.42it/s]", None),  # a bare bar is progress, not a metric
]  # fmt: skip

LIGHTNING = [
    (
        "Epoch 0:  12%|█▏        | 113/938 [00:02<00:17, 47.66it/s, v_num=0, train_loss=0.512]",
        {"epoch": 0, "it_per_sec": 47.66, "loss": 0.512},
    ),
    (
        "Epoch 1: 100%|██████████| 938/938 [00:15<00:00, 60.12it/s, v_num=3, train_loss_step=0.234, val_loss=0.345, train_loss_epoch=0.298]",
        {"epoch": 1, "it_per_sec": 60.12, "loss": 0.234, "val_loss": 0.345, "loss_epoch": 0.298},
    ),
    (  # Lightning 1.x padded its floats
        "Epoch 4:  50%|█████     | 469/938 [00:05<00:05, 85.31it/s, loss=0.10000, v_num=7]",
        {"epoch": 4, "it_per_sec": 85.31, "loss": 0.1},
    ),
    ("Validation DataLoader 0:  50%|█████     | 5/10 [00:00<00:00, 50.00it/s]", None),
    ("Sanity Checking DataLoader 0: 100%|██████████| 2/2 [00:00<00:00, 12.01it/s]", None),
]  # fmt: skip

ACCELERATE_DIFFUSERS_KOHYA = [
    (  # diffusers examples: the bar counts global steps and shows step_loss
        "Steps:  12%|█▏        | 120/1000 [01:00<07:20,  2.00it/s, lr=1e-5, step_loss=0.131]",
        {"step": 120, "it_per_sec": 2.0, "lr": 1e-05, "loss": 0.131},
    ),
    (  # kohya sd-scripts print only the running average: that is the loss
        "steps:  10%|█         | 100/1000 [02:00<18:00,  1.25s/it, avr_loss=0.0812]",
        {"step": 100, "it_per_sec": 0.8, "loss": 0.0812},
    ),
    (  # both: loss is the current value, the average keeps its own name
        "steps:  10%|█         | 100/1000 [02:00<18:00,  1.25s/it, avr_loss=0.0812, loss=0.0731]",
        {"step": 100, "it_per_sec": 0.8, "loss": 0.0731, "loss_avg": 0.0812},
    ),
    (  # no bar glyphs (ncols=0 / notebooks)
        "Training: 40% 400/1000 [00:40<01:00, 10.00it/s, loss=1.5e-01]",
        {"it_per_sec": 10.0, "loss": 0.15},
    ),
    ("Map: 100%|██████████| 1000/1000 [00:01<00:00, 900.12 examples/s]", None),
    ("Downloading shards: 100%|██████████| 2/2 [00:30<00:00, 15.00s/it]", None),
]  # fmt: skip

KERAS = [
    (
        "1875/1875 [==============================] - 5s 3ms/step - loss: 0.2938 - accuracy: 0.9145 - val_loss: 0.1400 - val_accuracy: 0.9584",
        {"loss": 0.2938, "acc": 0.9145, "val_loss": 0.14, "val_acc": 0.9584},
    ),
    (
        " 320/1875 [====>.........................] - ETA: 4s - loss: 0.4412 - accuracy: 0.8724",
        {"loss": 0.4412, "acc": 0.8724},
    ),
    (
        "1875/1875 ━━━━━━━━━━━━━━━━━━━━ 3s 1ms/step - accuracy: 0.8785 - loss: 0.4291 - val_accuracy: 0.9599 - val_loss: 0.1350",
        {"acc": 0.8785, "loss": 0.4291, "val_acc": 0.9599, "val_loss": 0.135},
    ),
    (
        "\x1b[1m  86/1875\x1b[0m \x1b[32m━\x1b[0m\x1b[37m━━━━━━━━━━━━━━━━━━━\x1b[0m \x1b[1m2s\x1b[0m 1ms/step - accuracy: 0.6184 - loss: 1.2530",
        {"acc": 0.6184, "loss": 1.253},
    ),
    (  # the old bar rewinds with backspaces: only the text after them is on screen
        " 32/60000 [..............................] - ETA: 3:02 - loss: 2.3\b\b\b\b 64/60000 [..............................] - ETA: 2:10 - loss: 2.2",
        {"loss": 2.2},
    ),
    ("Epoch 1/5", None),
]  # fmt: skip

TIMM = [
    (
        "Train: 0 [ 100/1251 (  8%)]  Loss: 6.912 (6.93)  Time: 0.412s,  621.12/s  (0.425s,  602.35/s)  LR: 1.000e-04  Data: 0.012 (0.015)",
        {"epoch": 0, "loss": 6.912, "time": 0.412, "samples_per_sec": 621.12, "lr": 0.0001, "data": 0.012},
    ),
    (
        "Test: [  48/48]  Time: 0.112 (0.430)  Loss:  0.8623 (0.8623)  Acc@1: 81.2500 (78.1300)  Acc@5: 95.3125 (94.0100)",
        {"val_time": 0.112, "val_loss": 0.8623, "val_acc1": 81.25, "val_acc5": 95.3125},
    ),
]  # fmt: skip

TORCHVISION = [
    (  # MetricLogger prints the window median, then the global average
        "Epoch: [0]  [  10/5005]  eta: 1:23:45  lr: 0.1  img/s: 250.3  loss: 6.9100 (6.9321)  acc1: 0.0000 (0.1420)  acc5: 0.7812 (0.5682)  time: 0.9876  data: 0.3412  max mem: 8921",
        {"epoch": 0, "lr": 0.1, "samples_per_sec": 250.3, "loss": 6.91, "acc1": 0.0, "acc5": 0.7812,
         "time": 0.9876, "data": 0.3412, "max_mem": 8921},
    ),
    (
        "Test:  [ 0/98]  eta: 0:05:32  loss: 0.7452 (0.7452)  acc1: 82.8125 (82.8125)  acc5: 95.3125 (95.3125)  time: 3.3924  data: 3.1200  max mem: 8921",
        {"val_loss": 0.7452, "val_acc1": 82.8125, "val_acc5": 95.3125, "val_time": 3.3924, "val_data": 3.12,
         "val_max_mem": 8921},
    ),
    (  # detection references: a total and its parts
        "Epoch: [3]  [ 120/7329]  eta: 5:41:23  lr: 0.020000  loss: 0.5201 (0.6201)  loss_classifier: 0.2231 (0.2231)  loss_box_reg: 0.1521 (0.1521)  loss_objectness: 0.0932 (0.0932)  loss_rpn_box_reg: 0.0517 (0.0512)  time: 0.7941  data: 0.0311  max mem: 3210",
        {"epoch": 3, "lr": 0.02, "loss": 0.5201, "loss_classifier": 0.2231, "loss_box_reg": 0.1521,
         "loss_objectness": 0.0932, "loss_rpn_box_reg": 0.0517, "time": 0.7941, "data": 0.0311, "max_mem": 3210},
    ),
]  # fmt: skip

PYTORCH_EXAMPLES = [
    ("Train Epoch: 1 [640/60000 (1%)]\tLoss: 0.830457", {"epoch": 1, "loss": 0.830457}),
    ("Test set: Average loss: 0.0334, Accuracy: 9890/10000 (99%)", {"val_loss": 0.0334, "val_acc": 98.9}),
    (  # the ImageNet example's ProgressMeter: current value, then average
        "Epoch: [0][  10/5005]\tTime  0.512 ( 0.730)\tData  0.001 ( 0.210)\tLoss 6.9102e+00 (6.9254e+00)\tAcc@1   0.00 (  0.14)\tAcc@5   0.78 (  0.57)",
        {"epoch": 0, "loss": 6.9102, "acc1": 0.0, "acc5": 0.78},
    ),
    (
        "Test: [ 10/196]\tTime  0.112 ( 0.430)\tLoss 8.1201e-01 (7.5210e-01)\tAcc@1  78.12 ( 80.11)\tAcc@5  93.75 ( 94.89)",
        {"val_loss": 0.81201, "val_acc1": 78.12, "val_acc5": 93.75},
    ),
    (" * Acc@1 76.130 Acc@5 92.862", {"val_acc1": 76.13, "val_acc5": 92.862}),
]  # fmt: skip

MMENGINE_MMCV = [
    (
        "2023/05/10 12:34:56 - mmengine - INFO - Epoch(train)  [1][ 50/196]  base_lr: 1.0000e-01 lr: 1.0000e-01  eta: 0:28:12  time: 0.0432  data_time: 0.0121  memory: 1234  loss: 2.1034",
        {"epoch": 1, "base_lr": 0.1, "lr": 0.1, "time": 0.0432, "data_time": 0.0121, "memory": 1234, "loss": 2.1034},
    ),
    (
        "2023/05/10 12:40:00 - mmengine - INFO - Epoch(val) [1][196/196]    accuracy/top1: 45.2300  accuracy/top5: 90.1200  data_time: 0.0051  time: 0.0123",
        {"epoch": 1, "val_acc_top1": 45.23, "val_acc_top5": 90.12, "val_data_time": 0.0051, "val_time": 0.0123},
    ),
    (
        "2023/05/10 12:34:56 - mmengine - INFO - Iter(train) [  50/80000]  lr: 1.0000e-02  eta: 8:32:12  time: 0.4000  data_time: 0.0100  memory: 5000  loss: 1.2000  decode.loss_ce: 0.9000  decode.acc_seg: 60.1000  aux.loss_ce: 0.3000",
        {"step": 50, "lr": 0.01, "time": 0.4, "data_time": 0.01, "memory": 5000, "loss": 1.2,
         "decode_loss_ce": 0.9, "decode_acc_seg": 60.1, "aux_loss_ce": 0.3},
    ),
    (  # mmcv 1.x / mmdet 2.x: a day in the eta must not become a number
        "2021-01-01 12:00:00,000 - mmdet - INFO - Epoch [1][50/7330]\tlr: 1.996e-03, eta: 1 day, 2:03:45, time: 0.432, data_time: 0.050, memory: 3500, loss_rpn_cls: 0.6, loss_rpn_bbox: 0.1, loss_cls: 1.2, acc: 88.0, loss_bbox: 0.3, loss: 2.2, grad_norm: 10.2",
        {"epoch": 1, "lr": 0.001996, "time": 0.432, "data_time": 0.05, "memory": 3500, "loss_rpn_cls": 0.6,
         "loss_rpn_bbox": 0.1, "loss_cls": 1.2, "acc": 88.0, "loss_bbox": 0.3, "loss": 2.2, "grad_norm": 10.2},
    ),
    (
        "2021-01-01 12:30:00,000 - mmdet - INFO - Epoch(val) [1][500]\tbbox_mAP: 0.3740, bbox_mAP_50: 0.5810, bbox_mAP_75: 0.4030",
        {"epoch": 1, "val_bbox_map": 0.374, "val_bbox_map_50": 0.581, "val_bbox_map_75": 0.403},
    ),
]  # fmt: skip

MEGATRON = [
    (
        " [2023-06-01 12:00:00] iteration      100/  500000 | consumed samples:        12800 | elapsed time per iteration (ms): 1234.5 | learning rate: 1.500E-05 | global batch size:   128 | lm loss: 7.123456E+00 | loss scale: 65536.0 | grad norm: 2.345 | number of skipped iterations:   0 | number of nan iterations:   0 |",
        {"step": 100, "consumed_samples": 12800, "elapsed_time_per_iteration_ms": 1234.5, "lr": 1.5e-05,
         "global_batch_size": 128, "loss": 7.123456, "loss_scale": 65536.0, "grad_norm": 2.345,
         "number_of_skipped_iterations": 0, "nan_iterations": 0},
    ),
    (
        " validation loss at iteration 1000 | lm loss value: 3.450000E+00 | lm loss PPL: 3.150000E+01 | ",
        {"step": 1000, "val_loss": 3.45, "val_ppl": 31.5},
    ),
]  # fmt: skip

DEEPSPEED = [
    (
        "[2023-06-01 12:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] step=100, skipped=0, lr=[1.9e-05, 1.9e-05], mom=[(0.9, 0.999), (0.9, 0.999)]",
        {"step": 100, "skipped": 0, "lr": 1.9e-05},
    ),
    (
        "[2023-06-01 12:00:00,123] [INFO] [timer.py:260:stop] epoch=0/micro_step=100/global_step=100, RunningAvgSamplesPerSec=12.3, CurrSamplesPerSec=13.4, MemAllocated=1.2GB, MaxMemAllocated=3.4GB",
        {"epoch": 0, "micro_step": 100, "step": 100, "samples_per_sec_avg": 12.3, "samples_per_sec": 13.4,
         "mem_allocated": 1.2, "max_mem_allocated": 3.4},
    ),
    (
        "steps: 100 loss: 2.3456 iter time (s): 0.512 samples/sec: 62.500",
        {"step": 100, "loss": 2.3456, "iter_time": 0.512, "samples_per_sec": 62.5},
    ),
    (
        "[2023-06-01 12:00:00,123] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
        None,
    ),
]  # fmt: skip

NANOGPT = [
    ("iter 10: loss 3.2202, time 893.76ms, mfu 16.68%", {"step": 10, "loss": 3.2202, "mfu": 16.68}),
    ("iter 0: loss 4.2648, time 9371.81ms, mfu -100.00%", {"step": 0, "loss": 4.2648, "mfu": -100.0}),
    ("step 250: train loss 1.5440, val loss 1.7220", {"step": 250, "loss": 1.544, "val_loss": 1.722}),
    ("saving checkpoint to out-shakespeare-char", None),
]  # fmt: skip

FAIRSEQ = [
    (
        "2020-07-17 07:11:02 | INFO | train_inner | epoch 001:   2800 / 160368 loss=9.255, ppl=611.12, wps=57.3, ups=0.04, wpb=1613, bsz=80, num_updates=2800, lr=2.8e-05, gnorm=3.23, train_wall=13, wall=1236",
        {"epoch": 1, "loss": 9.255, "ppl": 611.12, "wps": 57.3, "ups": 0.04, "wpb": 1613, "bsz": 80, "step": 2800,
         "lr": 2.8e-05, "grad_norm": 3.23, "train_wall": 13, "wall": 1236},
    ),
    (  # old fairseq: current loss, then the running average in parentheses
        "| epoch 010  2000 / 8223 loss=1.27 (1.50), wps=962, wpb=908, bsz=32, lr=0.001, clip=100%, gnorm=2.1427",
        {"epoch": 10, "loss": 1.27, "wps": 962, "wpb": 908, "bsz": 32, "lr": 0.001, "clip": 100, "grad_norm": 2.1427},
    ),
    (
        "| epoch 001 | valid on 'valid' subset | valid_loss 8.11425 | valid_nll_loss 6.8834 | valid_ppl 118.06 | num_updates 600",
        {"epoch": 1, "val_loss": 8.11425, "val_nll_loss": 6.8834, "val_ppl": 118.06, "step": 600},
    ),
    (
        "2023-01-01 10:00:00 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 11.2 | nll_loss 11 | ppl 2000.5 | wps 12345 | num_updates 100",
        {"epoch": 1, "val_loss": 11.2, "val_nll_loss": 11, "val_ppl": 2000.5, "val_wps": 12345, "step": 100},
    ),
    (  # --log-format json: every value a string
        '{"epoch": 1, "update": 1.005, "loss": "12.5", "nll_loss": "12.3", "ppl": "5100", "wps": "1234", "num_updates": "100", "lr": "1.25e-05", "gnorm": "2.1"}',
        {"epoch": 1, "update": 1.005, "loss": 12.5, "nll_loss": 12.3, "ppl": 5100, "wps": 1234, "step": 100,
         "lr": 1.25e-05, "grad_norm": 2.1},
    ),
    (
        '{"epoch": 1, "valid_loss": "11.2", "valid_nll_loss": "11.0", "valid_ppl": "2000.5", "valid_num_updates": "100"}',
        {"epoch": 1, "val_loss": 11.2, "val_nll_loss": 11.0, "val_ppl": 2000.5, "step": 100},
    ),
]  # fmt: skip

DETECTRON2 = [
    (  # total_loss is the loss; its parts keep their names
        "[04/05 01:30:24 d2.utils.events]:  eta: 0:03:35  iter: 19  total_loss: 1.36  loss_cls: 0.6522  loss_box_reg: 0.5817  loss_rpn_cls: 0.07138  loss_rpn_loc: 0.003773  time: 0.3636  data_time: 0.1102  lr: 3.8077e-06  max_mem: 433M",
        {"step": 19, "loss": 1.36, "loss_cls": 0.6522, "loss_box_reg": 0.5817, "loss_rpn_cls": 0.07138,
         "loss_rpn_loc": 0.003773, "time": 0.3636, "data_time": 0.1102, "lr": 3.8077e-06, "max_mem": 433},
    ),
    (
        'json_stats: {"accuracy_cls": 1.000000, "eta": "0:21:51", "iter": 55080, "loss": 0.024404, "loss_bbox": 0.000645, "lr": 0.000025, "mem": 3084, "time": 0.266505}',
        {"acc_cls": 1.0, "step": 55080, "loss": 0.024404, "loss_bbox": 0.000645, "lr": 2.5e-05, "mem": 3084,
         "time": 0.266505},
    ),
]  # fmt: skip

TORCHTUNE = [
    (
        "Step 1 | loss:2.085338592529297 lr:2e-05 tokens_per_second_per_gpu:57.828881833956174",
        {"step": 1, "loss": 2.085338592529297, "lr": 2e-05, "tokens_per_sec_per_gpu": 57.828881833956174},
    ),
    (  # the recipe's bar: "{epoch}|{step}|Loss: {loss}" as the description
        "1|100|Loss: 1.2345678: 10%|█         | 100/1000 [01:00<09:00,  1.67it/s]",
        {"epoch": 1, "step": 100, "loss": 1.2345678, "it_per_sec": 1.67},
    ),
]  # fmt: skip

LITGPT = [
    (
        "Epoch 1 | iter 100 step 50 | loss train: 2.345, val: n/a | iter time: 123.45 ms (step) remaining time: 0:12:34",
        {"epoch": 1, "iter": 100, "step": 50, "loss": 2.345, "iter_time": 123.45},
    ),
    (
        "Epoch 2 | iter 800 step 400 | loss train: 1.901, val: 2.013 | iter time: 120.00 ms",
        {"epoch": 2, "iter": 800, "step": 400, "loss": 1.901, "val_loss": 2.013, "iter_time": 120.0},
    ),
]  # fmt: skip

MLX_LM = [
    (
        "Iter 10: Train loss 2.345, Learning Rate 1.000e-05, It/sec 2.345, Tokens/sec 1234.567, Trained Tokens 12345, Peak mem 12.345 GB",
        {"step": 10, "loss": 2.345, "lr": 1e-05, "it_per_sec": 2.345, "tokens_per_sec": 1234.567},
    ),
    ("Iter 1: Val loss 2.345, Val took 12.345s", {"step": 1, "val_loss": 2.345}),
]  # fmt: skip

ULTRALYTICS = [
    (  # only component losses: loss is their sum
        "     70/1000      6.73G      1.081     0.4706      1.084         10        640: 100%|██████████| 16/16 [00:05<00:00,  2.78it/s]",
        {"epoch": 70, "gpu_mem_gb": 6.73, "box_loss": 1.081, "cls_loss": 0.4706, "dfl_loss": 1.084, "loss": 2.6356,
         "instances": 10, "it_per_sec": 2.78},
    ),
    (
        "    151/200      10.4G     0.4635     0.2344      0.805       1578        640: 100%|██████████| 99/99 [01:52<00:00,  1.25s/it]",
        {"epoch": 151, "gpu_mem_gb": 10.4, "box_loss": 0.4635, "cls_loss": 0.2344, "dfl_loss": 0.805, "loss": 1.5029,
         "instances": 1578, "it_per_sec": 0.8},
    ),
    (  # segmentation: four loss columns
        "      1/100      3.21G       1.25      2.5      3.75        1.5         42        640: 100%|██████████| 8/8 [00:02<00:00,  3.21it/s]",
        {"epoch": 1, "gpu_mem_gb": 3.21, "box_loss": 1.25, "seg_loss": 2.5, "cls_loss": 3.75, "dfl_loss": 1.5,
         "loss": 9.0, "instances": 42, "it_per_sec": 3.21},
    ),
    (
        "                   all        722       1444      0.989       0.99      0.993      0.681",
        {"val_precision": 0.989, "val_recall": 0.99, "val_map50": 0.993, "val_map50_95": 0.681},
    ),
    ("      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size", None),
    (
        "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|██████████| 8/8 [00:03<00:00,  2.17it/s]",
        None,
    ),
]  # fmt: skip

TABLES = {
    "hf_trainer": HF_TRAINER,
    "lightning": LIGHTNING,
    "accelerate_diffusers_kohya": ACCELERATE_DIFFUSERS_KOHYA,
    "keras": KERAS,
    "timm": TIMM,
    "torchvision": TORCHVISION,
    "pytorch_examples": PYTORCH_EXAMPLES,
    "mmengine_mmcv": MMENGINE_MMCV,
    "megatron": MEGATRON,
    "deepspeed": DEEPSPEED,
    "nanogpt": NANOGPT,
    "fairseq": FAIRSEQ,
    "detectron2": DETECTRON2,
    "torchtune": TORCHTUNE,
    "litgpt": LITGPT,
    "mlx_lm": MLX_LM,
    "ultralytics": ULTRALYTICS,
}
CASES = [
    pytest.param(line, expected, id=f"{name}-{i}")
    for name, table in TABLES.items()
    for i, (line, expected) in enumerate(table)
]


@pytest.mark.parametrize(("line", "expected"), CASES)
def test_framework_line(line: str, expected: dict) -> None:
    assert parse_line(line) == expected


@pytest.mark.parametrize(("line", "expected"), CASES)
def test_same_line_with_trailing_padding_and_carriage_return_split(line: str, expected: dict) -> None:
    # tqdm pads to the terminal width; the supervisor has split on "\r" but spaces remain.
    assert parse_line(line + "     ") == expected
