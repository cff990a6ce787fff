"""A plain Keras script that SpeedLab records: ``python examples/train_with_callback.py``.

Trains a small CNN on the bundled digits (scikit-learn's 1,797 8x8 images) with
SpeedLabCallback; the run then shows in ``python -m engine runs``, on the Runs page and, while it
trains, on the Train page ("a script run").

    python examples/train_with_callback.py --epochs 5 --bf16

Seed: $SPEEDLAB_SEED (default 0), which ``python -m engine pairs`` sets per pair.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # speedlab without pip

import keras  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

from speedlab import SpeedLabCallback  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--bf16", action="store_true", help="mixed_bfloat16 precision policy")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--target", type=float, default=0.9, help="validation accuracy to reach")
    args = p.parse_args()
    keras.utils.set_random_seed(int(os.environ.get("SPEEDLAB_SEED", "0") or 0))
    if args.bf16:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    d = load_digits()
    x = (d.images.astype(np.float32) / 16.0)[..., None]
    y = keras.utils.to_categorical(d.target, 10)
    model = keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10),
        keras.layers.Activation("softmax", dtype="float32"),  # float32 head under mixed precision
    ])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs, validation_split=0.2, verbose=0,
              callbacks=[SpeedLabCallback(name="digits-example", target_accuracy=args.target)])


if __name__ == "__main__":
    main()
