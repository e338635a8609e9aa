"""stable-baselines3 PPO on CartPole, its logger table on stdout; progress.csv is the record."""

import csv
import sys
from pathlib import Path

from record import save
from stable_baselines3 import PPO
from stable_baselines3.common.logger import configure

model = PPO("MlpPolicy", "CartPole-v1", n_steps=256, batch_size=64, n_epochs=2, seed=0, verbose=1)
model.set_logger(configure(sys.argv[1], ["stdout", "csv"]))
model.learn(total_timesteps=2048)
rows = csv.DictReader((Path(sys.argv[1]) / "progress.csv").read_text().splitlines())
save("step", [(int(r["time/total_timesteps"]), float(r["train/loss"])) for r in rows if r.get("train/loss")])
