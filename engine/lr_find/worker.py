"""LR range test worker (imports TensorFlow, or JAX for backend jax):
``python -m engine.lr_find.worker``.

Reads a job (JSON) on stdin: {'config': RunConfig dict, 'min_lr', 'max_lr',
'steps'}, and prints one JSON line: {'lr', 'loss', 'smoothed' (lists, one per
step done; None for a non-finite loss), 'stopped' ('end' | 'diverged' | 'nan'),
'beta', 'device_kind', 'replicas', 'sweep_sec'}; or {'error': line} on failure.
See engine.lr_find.range_test (Smith 2017, "Cyclical Learning Rates for Training Neural
Networks", sec. 3.3) for the method and the caller.

How the sweep is done in Keras 3:
  * The config gets schedule 'constant' without warmup, LR scaling or plateau
    reduction, so the optimizer's learning rate is a plain float, which Keras 3
    keeps in a non-trainable variable (``optimizer.learning_rate`` is that
    `keras.Variable`; under mixed_float16 the LossScaleOptimizer forwards to
    its inner optimizer's variable).  The compiled train step reads the
    variable at every step, so ``learning_rate.assign(lr)`` from a callback
    takes effect at the next step (checked with Keras 3.15: assigning 0 leaves
    the weights unchanged, with 1 and 2 replicas).
  * steps_per_execution is forced to 1: Keras calls batch callbacks once per
    execution, and each batch needs its own LR and its own loss.
  * The per-batch loss: Keras' ``logs['loss']`` is the running (sample-
    weighted) mean since the epoch began.  Differencing consecutive means,
    ``(S_k m_k - S_{k-1} m_{k-1}) / n_k``, loses float32 digits as the sum
    grows and turns into inf - inf = NaN once the loss overflows, which is
    exactly where the sweep must see it.  Instead the callback calls the public
    ``model.reset_metrics()`` before every batch, so the loss tracker (a
    `Mean` over replicas) holds that batch alone and ``logs['loss']`` is the
    exact mean training loss of that global batch (unscaled under loss scaling,
    summed correctly over replicas; matches the differenced value to 2e-6).
  * The loss of batch k is computed before batch k's update, so it shows the
    effect of the LRs up to step k-1 (one step of the sweep's factor lower);
    it is paired with lr_k, as Smith and fastai do.
"""
from __future__ import annotations

import json
import math
import sys
import time
import traceback


def make_callback(min_lr: float, max_lr: float, steps: int, beta: float, diverge_factor: float):
    """A Keras callback that sets the LR before each batch, records (lr, loss,
    smoothed) after it and stops training on divergence or a non-finite loss."""
    import keras

    from engine.lr_find.range_test import Smoother, sweep_lr

    class LRSweep(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.lrs: list[float] = []
            self.losses: list = []
            self.smoothed: list = []
            self.smoother = Smoother(beta)
            self.best = math.inf
            self.stopped = "end"
            self._lr = min_lr

        def on_train_batch_begin(self, batch, logs=None):
            self._lr = sweep_lr(len(self.lrs), steps, min_lr, max_lr)
            self.model.optimizer.learning_rate.assign(self._lr)
            self.model.reset_metrics()  # logs['loss'] becomes this batch's loss alone

        def on_train_batch_end(self, batch, logs=None):
            loss = float(logs["loss"]) if logs and "loss" in logs else math.nan
            self.lrs.append(self._lr)
            if not math.isfinite(loss):
                self.losses.append(None)
                self.smoothed.append(None)
                self.stopped = "nan"
                self.model.stop_training = True
                return
            s = self.smoother.update(loss)
            self.losses.append(loss)
            self.smoothed.append(s)
            self.best = min(self.best, s)
            if not math.isfinite(s):
                self.stopped = "nan"
                self.model.stop_training = True
            elif s > diverge_factor * self.best:
                self.stopped = "diverged"
                self.model.stop_training = True

    return LRSweep()


def sweep(job: dict) -> dict:
    """Run the job's sweep in this process; returns the result dict (see module doc)."""
    from engine.config import RunConfig
    from engine.lr_find.range_test import DIVERGE_FACTOR, smoothing_beta

    cfg = RunConfig.from_dict(job["config"])
    min_lr, max_lr, steps = float(job["min_lr"]), float(job["max_lr"]), int(job["steps"])
    setup = configure_devices(cfg)
    from engine.training.build import prepare

    cfg = cfg.replace(schedule="constant", warmup_epochs=0.0, scale_lr=False, reduce_on_plateau=False,
                      steps_per_execution=1, learning_rate=min_lr)
    prep = prepare(cfg, setup)
    beta = float(job.get("beta", smoothing_beta(steps)))
    cb = make_callback(min_lr, max_lr, steps, beta, DIVERGE_FACTOR)
    t0 = time.perf_counter()
    prep.model.fit(prep.train_ds.repeat(), epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False,
                   callbacks=[cb])
    return {"lr": cb.lrs, "loss": cb.losses, "smoothed": cb.smoothed, "stopped": cb.stopped,
            "beta": beta, "device_kind": setup.kind, "replicas": setup.replicas,
            "sweep_sec": time.perf_counter() - t0}


def configure_devices(cfg):
    """The run's devices on its backend, set up before anything else imports Keras:
    engine.training.devices (TensorFlow) or engine.training.jax_devices."""
    from engine.training import backends

    backends.use(cfg.backend, cfg.device_type, cfg.devices)
    if cfg.backend == "jax":
        from engine.training import jax_devices

        return jax_devices.configure(cfg.device_type, cfg.devices)
    from engine.training import devices

    return devices.configure(cfg.device_type, cfg.devices)  # first TF action


def main() -> int:
    try:
        job = json.loads(sys.stdin.read())
        print(json.dumps(sweep(job)), flush=True)
    except Exception as exc:  # noqa: BLE001 - reported as one line to the caller
        traceback.print_exc()
        from engine.base.lines import error_line

        print(json.dumps({"error": error_line(exc)}), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
