"""Lightning with its Rich bar (argv[2] == "rich") or the TQDM bar; CSVLogger is the record."""

import csv
import sys
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import RichProgressBar, TQDMProgressBar
from lightning.pytorch.loggers import CSVLogger
from record import save

BATCHES = 20


class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True, on_step=True, on_epoch=False)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


torch.manual_seed(0)
x = torch.randn(BATCHES * 8, 8)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)
bar = RichProgressBar() if sys.argv[2] == "rich" else TQDMProgressBar()
logger = CSVLogger(sys.argv[1], name="csv")
trainer = L.Trainer(
    max_epochs=3,
    callbacks=[bar],
    logger=logger,
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
