"""A user's own training script, as a new user writes it (tests/test_command_pairs_scripts.py):
digits, `metrics=["acc"]`, validation_split, SpeedLabCallback with held-out test data, seeded
by SPEEDLAB_SEED. It writes what it measured itself to OUT/<role>-<seed>.json, so that a test
can hold the stored figures against the script's own.

    python tests/user_scripts/train_digits.py --out DIR [--batch-size N] [--epochs N] [--sleep S] [--hold FILE]
"""
import argparse
import json
import os
import time

import keras
import numpy as np
from sklearn.datasets import load_digits

from speedlab import SpeedLabCallback

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--batch-size", type=int, default=64)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--sleep", type=float, default=0.0, help="seconds to sleep at each epoch's end (a slow input)")
p.add_argument("--hold", help="at the first epoch's end, wait until this file exists (at most 600 s): an input "
                              "that another process holds up")
args = p.parse_args()
seed = int(os.environ.get("SPEEDLAB_SEED", "0"))
keras.utils.set_random_seed(seed)
d = load_digits()
x, y = (d.images.astype(np.float32) / 16.0)[..., None], d.target
(x_train, y_train), test = (x[:1500], y[:1500]), (x[1500:], y[1500:])
model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dense(10, activation="softmax")])
model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy", metrics=["acc"])
held_until = time.time() + 600


def slow_input(epoch, logs):
    while args.hold and epoch == 0 and not os.path.exists(args.hold) and time.time() < held_until:
        time.sleep(0.05)
    time.sleep(args.sleep)


slow = keras.callbacks.LambdaCallback(on_epoch_end=slow_input)
hist = model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs, validation_split=0.2, verbose=0,
                 callbacks=[SpeedLabCallback(name="digits-script", target_accuracy=0.7, test_data=test), slow])
own = {"seed": seed, "n_train": int(len(x_train) * 0.8), "val_acc": [float(v) for v in hist.history["val_acc"]],
       "test_accuracy": float(model.evaluate(*test, verbose=0, return_dict=True)["acc"])}
with open(os.path.join(args.out, f"{os.environ.get('SPEEDLAB_ROLE', 'run')}-{seed}.json"), "w") as f:
    json.dump(own, f)
