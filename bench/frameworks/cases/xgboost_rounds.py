"""XGBoost with train and eval sets printed each round; evals_result is the record."""

import numpy as np
import xgboost as xgb
from record import save

rng = np.random.default_rng(0)
x = rng.normal(size=(600, 6))
y = (x[:, 0] + rng.normal(scale=0.5, size=600) > 0).astype(int)
train, valid = xgb.DMatrix(x[:400], y[:400]), xgb.DMatrix(x[400:], y[400:])
result: dict = {}
xgb.train(
    {"objective": "binary:logistic", "eval_metric": ["error", "logloss"], "max_depth": 3},
    train,
    30,
    evals=[(train, "train"), (valid, "eval")],
    evals_result=result,
    verbose_eval=True,
)
# the last eval_metric is the one the round is judged by; the printed [N] is 0-based
save("step", list(enumerate(result["train"]["logloss"])))
