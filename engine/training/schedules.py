"""Keras learning-rate and momentum schedules built from a RunConfig.

The formulas live in `engine.config.lr_math` (shared with the dashboard preview); here
they run as float32 `keras.ops`, so they trace into the compiled train step of
either backend (a tf.function / XLA graph on TensorFlow, a jax.jit function on JAX).

Why the momentum is scheduled inside the optimizer, not by a callback: in
Keras 3 `SGD.momentum` and `Adam.beta_1` are Python floats that are baked into
the traced train function as constants, so assigning a new value from a
callback changes nothing after the first step (checked with Keras 3.15). Making
them variables works for Adam but not for SGD, whose `update_step` branches in
Python on `self.momentum != 0`. A callback would also only run once per
`steps_per_execution` steps. So `ScheduledMomentumSGD` / `ScheduledMomentumAdam`
read ``momentum_schedule(optimizer.iterations)`` in the graph at every step.
"""
from __future__ import annotations

import keras
from keras import ops

from engine.config import lr_math
from engine.training.keras_patches import backend_update_step
from engine.training.keras_patches import learning_rate_attr

_PKG = "speedlab"


@keras.saving.register_keras_serializable(package=_PKG)
class Schedule(keras.optimizers.schedules.LearningRateSchedule):
    """One `engine.config.lr_math` formula (`kind`) with its numbers (`params`).

    Call with a step (int32/int64/float, scalar or array); returns float32 of
    the same shape: an LR (or a momentum, for kind 'one_cycle_momentum').
    Steps are exact in float32 up to 2**24 (16.7 M steps).
    """

    def __init__(self, kind: str, params: dict):
        if kind not in lr_math.FORMULAS:
            raise ValueError(f"unknown schedule kind {kind!r}; use one of {sorted(lr_math.FORMULAS)}")
        self.kind = kind
        self.params = dict(params)

    def __call__(self, step):
        step = ops.cast(step, "float32")  # the optimizer passes integer iterations
        value = lr_math.FORMULAS[self.kind](ops, step, **self.params)
        return ops.cast(value, "float32")

    def get_config(self):
        return {"kind": self.kind, "params": dict(self.params)}


@keras.saving.register_keras_serializable(package=_PKG)
class Shifted(keras.optimizers.schedules.LearningRateSchedule):
    """`schedule` read `offset` steps later: ``Shifted(s, k)(t) = s(t + k)``.

    A fresh optimizer counts its steps from 0 (Adam's bias correction needs
    that), so a later training phase (transfer learning's unfrozen phase) that
    should continue a schedule where it stands reads it shifted instead.
    """

    def __init__(self, schedule, offset: int):
        self.schedule = _as_schedule(schedule)
        self.offset = int(offset)

    def __call__(self, step):
        return self.schedule(ops.cast(step, "float32") + float(self.offset))

    def get_config(self):
        return {"schedule": keras.optimizers.schedules.serialize(self.schedule), "offset": self.offset}


def shift(optimizer, offset: int):
    """`optimizer` with its LR schedule and (one-cycle) momentum schedule read
    `offset` steps later; a constant LR is left alone. Returns `optimizer`."""
    schedule = learning_rate_attr.schedule_of(optimizer)
    if offset and schedule is not None:
        learning_rate_attr.set_schedule(optimizer, Shifted(schedule, offset))
    if offset and getattr(optimizer, "momentum_schedule", None) is not None:
        optimizer.momentum_schedule = Shifted(optimizer.momentum_schedule, offset)
    return optimizer


def _as_schedule(obj) -> Schedule:
    return keras.optimizers.schedules.deserialize(obj) if isinstance(obj, dict) else obj


class _MomentumOncePerStep:
    """The scheduled momentum, evaluated once per update and shared by every variable
    (engine.training.keras_patches.backend_update_step): the one-cycle formula is ~20 ops, and tracing it for
    every variable made a one-cycle step's first trace ~0.3 s longer on the digits CNN."""

    def _momentum(self, dtype):
        return backend_update_step.once(self, ("momentum", str(dtype)),
                               lambda: ops.cast(self.momentum_schedule(self.iterations), dtype))


@keras.saving.register_keras_serializable(package=_PKG)
class ScheduledMomentumSGD(_MomentumOncePerStep, keras.optimizers.SGD):
    """SGD whose momentum at each step is ``momentum_schedule(iterations)``.

    `self.momentum` stays a nonzero float only so that `build()` allocates the
    momentum slots; the update never reads it.
    """

    def __init__(self, momentum_schedule, learning_rate=0.01, nesterov=False, **kwargs):
        kwargs.pop("momentum", None)  # present in configs from get_config
        super().__init__(learning_rate=learning_rate, momentum=lr_math.MOMENTUM_MAX,
                         nesterov=nesterov, **kwargs)
        self.momentum_schedule = _as_schedule(momentum_schedule)
        backend_update_step.install(self)

    def update_step(self, gradient, variable, learning_rate):
        # Keras 3 SGD.update_step, with the scheduled momentum tensor.
        lr = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        mu = self._momentum(variable.dtype)
        m = self.momentums[self._get_variable_index(variable)]
        self.assign(m, m * mu - gradient * lr)
        if self.nesterov:
            self.assign_add(variable, m * mu - gradient * lr)
        else:
            self.assign_add(variable, m)

    def get_config(self):
        config = super().get_config()
        config.pop("momentum", None)
        config["momentum_schedule"] = keras.optimizers.schedules.serialize(self.momentum_schedule)
        return config


@keras.saving.register_keras_serializable(package=_PKG)
class ScheduledMomentumAdam(_MomentumOncePerStep, keras.optimizers.Adam):
    """Adam whose beta_1 at each step is ``momentum_schedule(iterations)``; the bias
    correction uses the current beta_1 (1 - beta_1**t), as PyTorch's Adam does
    under OneCycleLR(cycle_momentum=True)."""

    def __init__(self, momentum_schedule, learning_rate=0.001, **kwargs):
        kwargs.pop("beta_1", None)
        super().__init__(learning_rate=learning_rate, beta_1=lr_math.MOMENTUM_MAX, **kwargs)
        self.momentum_schedule = _as_schedule(momentum_schedule)
        backend_update_step.install(self)

    def update_step(self, gradient, variable, learning_rate):
        # Keras' Adam only does tensor arithmetic with beta_1, so a tensor can
        # stand in for the float while the step is traced; restored afterwards.
        beta_1 = self.beta_1
        self.beta_1 = self._momentum(variable.dtype)
        try:
            super().update_step(gradient, variable, learning_rate)
        finally:
            self.beta_1 = beta_1

    def get_config(self):
        config = super().get_config()
        config.pop("beta_1", None)
        config["momentum_schedule"] = keras.optimizers.schedules.serialize(self.momentum_schedule)
        return config


def build_schedule(cfg, steps_per_epoch: int):
    """cfg's LR schedule: a `Schedule`, or a plain float for constant without warmup."""
    kind, params = lr_math.lr_params(cfg, steps_per_epoch)
    if kind == "constant" and params["warmup_steps"] <= 0:
        return params["base_lr"]
    return Schedule(kind, params)


def build_momentum_schedule(cfg, steps_per_epoch: int):
    """The one-cycle momentum `Schedule`, or None when momentum stays fixed."""
    mp = lr_math.momentum_params(cfg, steps_per_epoch)
    return None if mp is None else Schedule(*mp)


def build_optimizer(cfg, steps_per_epoch: int) -> keras.optimizers.Optimizer:
    """The optimizer for cfg with its LR schedule and, for one_cycle, cycled momentum.

    `cfg.momentum` is SGD's momentum and Adam's beta_1 (both default 0.9);
    RMSprop keeps Keras' defaults (no momentum) and one-cycle momentum is not
    cycled for it, nor for muon, schedule_free_adamw and lamb
    (engine.training.techniques.new_optimizer). Weight EMA and gradient accumulation
    are passed to every optimizer (techniques.optimizer_kwargs).
    """
    from engine.training import techniques

    lr = build_schedule(cfg, steps_per_epoch)
    mom = build_momentum_schedule(cfg, steps_per_epoch)
    # Weight EMA and gradient accumulation: Keras optimizer arguments (engine.training.techniques).
    kw = techniques.optimizer_kwargs(cfg)
    if cfg.optimizer == "sgd":
        if mom is not None:
            return ScheduledMomentumSGD(mom, learning_rate=lr, **kw)
        return keras.optimizers.SGD(learning_rate=lr, momentum=float(cfg.momentum), **kw)
    if cfg.optimizer == "adam":
        if mom is not None:
            return ScheduledMomentumAdam(mom, learning_rate=lr, **kw)
        return keras.optimizers.Adam(learning_rate=lr, beta_1=float(cfg.momentum), **kw)
    if cfg.optimizer == "rmsprop":
        return keras.optimizers.RMSprop(learning_rate=lr, **kw)
    if cfg.optimizer in techniques.NEW_OPTIMIZERS:  # muon, schedule_free_adamw, lamb: momentum not cycled
        return techniques.new_optimizer(cfg, lr, **kw)
    raise ValueError(f"unknown optimizer {cfg.optimizer!r}")
