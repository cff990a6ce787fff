"""What does SpeedLabCallback cost a user's training loop? Callback fit vs bare fit.

In one process: PAIRS interleaved pairs (callback first in even pairs, bare first in odd ones,
so a drift in load favours neither) of the same small Keras model on the bundled digits, each side
a fresh model with the same seed. Both sides are clocked alike, epoch end to epoch end, by a
callback with epoch hooks only: seconds from the end of epoch 1 to the end of epoch EPOCHS, so the
first epoch (tracing) is left out of both. Prints each pair's ratio (callback / bare, seconds: 1.0
= no cost) and the geometric mean with its 95% interval (engine.report.stats.log_ratio_interval).
The callback's own batch-hook seconds (summary instrumentation.batch_hooks_sec) are printed too:
its direct cost, free of the machine's noise.

    .venv/bin/python benchmarks/callback_overhead.py --pairs 4 --epochs 4
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=4)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args()
    os.environ["SPEEDLAB_HOME"] = tempfile.mkdtemp(prefix="speedlab-cb-overhead-")
    import keras
    import numpy as np
    from sklearn.datasets import load_digits

    from engine.report.stats import log_ratio_interval
    from engine.store import Store
    from speedlab import SpeedLabCallback

    d = load_digits()
    x = (d.images.astype(np.float32) / 16.0)[..., None]
    y = keras.utils.to_categorical(d.target, 10)

    class EpochClock(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.ends: list[float] = []

        def on_epoch_end(self, epoch, logs=None):
            self.ends.append(time.perf_counter())

    def side(with_callback: bool) -> tuple[float, float | None]:
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(16, 3, activation="relu"),
                                  keras.layers.Flatten(), keras.layers.Dense(10, activation="softmax")])
        model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
        clock = EpochClock()
        cbs = [clock] + ([SpeedLabCallback(name="overhead")] if with_callback else [])
        model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs, validation_split=0.2, verbose=0,
                  callbacks=cbs)
        hooks = None
        if with_callback:
            with Store() as store:
                hooks = store.get_run(cbs[1].run_id)["summary"]["instrumentation"]["batch_hooks_sec"]
        return clock.ends[-1] - clock.ends[0], hooks

    ratios = []
    for i in range(args.pairs):
        order = (True, False) if i % 2 == 0 else (False, True)
        got = {w: side(w) for w in order}
        (cb_s, hooks), (bare_s, _) = got[True], got[False]
        ratios.append(cb_s / bare_s)
        print(f"pair {i + 1} ({'callback first' if order[0] else 'bare first'}): callback {cb_s:.3f} s, "
              f"bare {bare_s:.3f} s, ratio {cb_s / bare_s:.3f}; callback's batch hooks {hooks:.4f} s in the whole fit")
    gm = float(np.exp(np.mean(np.log(ratios))))
    ci = log_ratio_interval(ratios)
    print(f"callback / bare (s, epochs 2..{args.epochs}): {gm:.3f}"
          + (f"  95% interval [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "") + f"  over {len(ratios)} pairs")


if __name__ == "__main__":
    main()
