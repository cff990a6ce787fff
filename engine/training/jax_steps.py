"""What a JAX run adds to the Keras train step and to the measuring (imports Keras only).

- `mix_in_step`: mixup inside the compiled train step (engine.data.device_mixup), seeded
  by the run's seed and the optimizer's step counter, so the input pipeline only shuffles
  and batches (mixing on the host starves a fast device).
- `set_random_seed`: Keras's own also seeds (and so imports) TensorFlow when it is installed.
- `ShapeWarmup`: JAX compiles the train step again for every new batch shape. With one
  replica an epoch may end in a short batch; the first execution that runs one is
  compile time, not steady state, and is flagged warm-up like the very first execution.
"""
from __future__ import annotations

import keras


def set_random_seed(seed: int) -> None:
    """`keras.utils.set_random_seed` without its TensorFlow part: Python's and NumPy's
    generators. Keras draws every unseeded layer's seed (initializers, dropout) from
    Python's `random` (keras.random.seed_generator.make_default_seed), so weights and
    dropout masks are reproducible from `seed` alone."""
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)


def mix_in_step(model, alpha: float, seed: int) -> None:
    """Make `model.fit` mix every training batch on the device (JAX backend).

    Wraps the instance's `train_step(state, data)` (Keras's JAX trainer: `state` =
    (trainable, non-trainable, optimizer, metrics variables)): the batch is mixed with
    the optimizer's current step as the random stream's counter, then trained as usual.
    Validation (`test_step`) is never mixed. Survives `compile` (a transfer phase's
    new optimizer restarts the counter, so its mixing repeats the first phase's draws).
    """
    from engine.data.device_mixup import mix

    generator = keras.random.SeedGenerator(seed)
    base = model.train_step

    def train_step(state, data):
        opt = model.optimizer
        # The raw batch counter: with gradient accumulation `iterations` counts updates (no variable).
        counter = getattr(opt, "inner_optimizer", opt)._iterations
        index = next(i for i, v in enumerate(opt.variables) if v is counter)
        x, y = mix(data[0], data[1], alpha, seed, state[2][index], generator)
        return base(state, (x, y, *data[2:]))

    model.train_step = train_step


class ShapeWarmup(keras.callbacks.Callback):
    """Flags the first execution that contains an epoch's short last batch as warm-up
    (`recorder.expect_warmup()`): JAX compiles the step again for the new shape.

    Args: recorder (engine.training.recorder.Recorder), steps_per_epoch, steps per
    execution, and whether epochs end in a short batch (one replica and a remainder).
    """

    def __init__(self, recorder, steps_per_epoch: int, steps_per_execution: int, short_last_batch: bool):
        super().__init__()
        self.recorder = recorder
        self.steps_per_epoch = steps_per_epoch
        self.spe = steps_per_execution
        self.pending = short_last_batch

    def on_train_batch_begin(self, batch, logs=None):
        if self.pending and min(batch + self.spe, self.steps_per_epoch) == self.steps_per_epoch:
            self.pending = False
            self.recorder.expect_warmup()
