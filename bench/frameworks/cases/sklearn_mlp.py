"""scikit-learn MLPClassifier(verbose=True): loss_curve_ is the record (iteration N is step N)."""

import warnings

import numpy as np
from record import save
from sklearn.neural_network import MLPClassifier

warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter: not the point here
rng = np.random.default_rng(0)
x = rng.normal(size=(400, 6))
y = (x[:, 0] > 0).astype(int)
clf = MLPClassifier(hidden_layer_sizes=(16,), max_iter=30, verbose=True, random_state=0).fit(x, y)
save("step", list(enumerate(clf.loss_curve_, start=1)))
