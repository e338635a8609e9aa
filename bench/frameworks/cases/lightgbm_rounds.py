"""LightGBM with its training and validation sets logged each round; record_evaluation is the record."""

import lightgbm as lgb
import numpy as np
from record import save

rng = np.random.default_rng(0)
x = rng.normal(size=(600, 6))
y = (x[:, 0] + rng.normal(scale=0.5, size=600) > 0).astype(int)
train = lgb.Dataset(x[:400], y[:400])
valid = lgb.Dataset(x[400:], y[400:], reference=train)
result: dict = {}
lgb.train(
    {"objective": "binary", "metric": "binary_logloss", "verbose": -1, "num_leaves": 7},
    train,
    30,
    valid_sets=[train, valid],
    callbacks=[lgb.log_evaluation(1), lgb.record_evaluation(result)],
)
save("step", list(enumerate(result["training"]["binary_logloss"], start=1)))  # printed [1] first
