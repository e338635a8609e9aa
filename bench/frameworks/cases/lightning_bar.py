"""Lightning with its Rich bar (argv[2] == "rich") or the TQDM bar; CSVLogger is the record.

argv[3], optional: seconds each training step waits (as a real model's step takes time: the Rich
bar's thread then draws most batches, at most 100 frames a second).
argv[4], optional: the logger Lightning makes by default under the work dir, `tb` (tensorboard is
installed: TensorBoardLogger) or `csv` (it is not: CSVLogger, which is then the record too); gpudeck
finds `lightning_logs/version_N/` there with no flag."""

import csv
import os
import sys
import time
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import RichProgressBar, TQDMProgressBar
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from record import save

BATCHES = 20
STEP_WAIT = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
DEFAULT_LOGGER = sys.argv[4] if len(sys.argv) > 4 else "tb"


class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        time.sleep(STEP_WAIT)
        self.log("train_loss", loss, prog_bar=True, on_step=True, on_epoch=False)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


torch.manual_seed(0)
x = torch.randn(BATCHES * 8, 8)
# Noise keeps the loss near 1 (a noiseless target's loss reaches 0.000 as printed, which any
# other small value matches): each step's value is then its own.
y = x.sum(1, keepdim=True) + torch.randn(BATCHES * 8, 1)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
bar = RichProgressBar() if sys.argv[2] == "rich" else TQDMProgressBar()
# Lightning's default logger, as `logger=True` makes it (save_dir: the work dir), and the record's
if DEFAULT_LOGGER == "csv":
    logger = CSVLogger(os.getcwd())  # lightning_logs/version_N/metrics.csv
    loggers = [logger]
else:
    logger = CSVLogger(sys.argv[1], name="csv")
    loggers = [TensorBoardLogger(os.getcwd()), logger]  # lightning_logs/version_N/events...
trainer = L.Trainer(
    max_epochs=3,
    callbacks=[bar],
    logger=loggers,
    log_every_n_steps=1,
    enable_checkpointing=False,
    enable_model_summary=False,
    accelerator="cpu",
)
trainer.fit(Tiny(), data)
rows = csv.DictReader((Path(logger.log_dir) / "metrics.csv").read_text().splitlines())
# CSVLogger's step is the global step before the optimizer's (0-based); the bar's counter counts
# batches done, so the record's step is step + 1.
save("step", [(int(r["step"]) + 1, float(r["train_loss"])) for r in rows if r.get("train_loss")])
