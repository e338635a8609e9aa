"""Keras 3 (torch backend) fit with verbose=argv[2]; History (per-epoch mean loss) is the record."""

import os
import sys

os.environ["KERAS_BACKEND"] = "torch"
import keras  # noqa: E402
import numpy as np  # noqa: E402
from record import save  # noqa: E402

keras.utils.set_random_seed(0)
x = np.random.randn(640, 8).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
)
model.compile(optimizer="sgd", loss="mse")
history = model.fit(x, y, epochs=5, batch_size=32, verbose=int(sys.argv[2]))
save("epoch", list(enumerate(history.history["loss"], start=1)))
