"""Fused optimizer updates on TensorFlow: one training kernel per variable.

Keras 3 writes Adam's and SGD's update in `keras.ops`: on the digits CNN (8
variables) Adam is 217 of the train step's 554 graph ops, ~27 per variable, each
traced in Python and run by the executor at every step. TensorFlow has had the same
updates as single kernels since TF 1 (tf.keras 2 used them): `ResourceApplyAdam`,
`ResourceApplyKerasMomentum`, `ResourceApplyGradientDescent`
(https://www.tensorflow.org/api_docs/python/tf/raw_ops/ResourceApplyAdam). Their
formulas are Keras 3's, term for term (Kingma & Ba 2015, arXiv:1412.6980, with
Keras's epsilon outside the square root), so a fused run trains the same model up
to float rounding; what changes is the graph: one op per variable plus the step's
scalars, computed once per step instead of once per variable. The idea is the one
behind PyTorch's ``Adam(fused=True)`` and NVIDIA Apex's FusedAdam.

`fuse` swaps the update on one optimizer instance, so its class and config stay
Keras's (a saved model loads anywhere with the unfused update). It works under
tf.distribute (in `Strategy.update` a mirrored slot's `handle` is the current
replica's), under XLA (the kernels have XLA lowerings) and inside Keras's
LossScaleOptimizer (which calls the inner optimizer's update). The Keras internals it
swaps and reads are in engine.training.keras_patches.fused_update_step.
"""
from __future__ import annotations

from engine.training.keras_patches import backend_update_step
from engine.training.keras_patches import fused_update_step

# engine.config.FUSED_OPTIMIZERS names the RunConfig optimizers this fuses (adam, sgd).


def fuse(optimizer) -> bool:
    """Make `optimizer` apply each variable's update with one TensorFlow kernel.

    Takes a Keras Adam (not AMSGrad) or SGD, including SpeedLab's scheduled-momentum
    variants (engine.training.schedules: the step's momentum is passed to the kernel
    as a tensor). The step's scalars are made once per update (engine.training.keras_patches.backend_update_step).
    Sparse gradients (tf.IndexedSlices) keep Keras's update.
    Returns True when fused; False, with `optimizer` unchanged, on another backend
    or optimizer.
    """
    import keras

    if keras.backend.backend() != "tensorflow":
        return False
    if isinstance(optimizer, keras.optimizers.Adam) and not optimizer.amsgrad:
        kernel = _adam
    elif isinstance(optimizer, keras.optimizers.SGD):
        kernel = _sgd
    else:
        return False
    import tensorflow as tf

    keras_update_step = optimizer.update_step
    backend_update_step.install(optimizer)

    def update_step(gradient, variable, learning_rate):
        if isinstance(gradient, tf.IndexedSlices):
            return keras_update_step(gradient, variable, learning_rate)
        return kernel(tf, optimizer, gradient, variable, learning_rate)

    fused_update_step.install(optimizer, update_step)
    return True


def is_fused(optimizer) -> bool:
    """Whether `fuse` was applied to `optimizer` (or to the one a LossScaleOptimizer wraps)."""
    return fused_update_step.installed(optimizer)


def _momentum(tf, opt, value: float, dtype):
    """The step's momentum (SGD) or beta_1 (Adam): scheduled (one-cycle) or constant."""
    if getattr(opt, "momentum_schedule", None) is not None:
        return opt._momentum(dtype)  # once per update (engine.training.schedules)
    return backend_update_step.once(opt, ("constant momentum", dtype.name), lambda: tf.cast(value, dtype))


def _handle(v):
    import keras

    return (v.value if isinstance(v, keras.Variable) else v).handle  # a Keras variable wraps a tf.Variable


def _adam(tf, opt, gradient, variable, learning_rate):
    dt = variable.dtype

    def make():
        t = tf.cast(opt.iterations + 1, dt)
        b1, b2 = _momentum(tf, opt, opt.beta_1, dt), tf.cast(opt.beta_2, dt)
        return tf.cast(learning_rate, dt), b1, b2, tf.pow(b1, t), tf.pow(b2, t), tf.cast(opt.epsilon, dt)

    lr, b1, b2, b1_power, b2_power, eps = backend_update_step.once(opt, ("adam", dt.name), make)
    m, v = fused_update_step.adam_slots(opt, variable)
    tf.raw_ops.ResourceApplyAdam(
        var=_handle(variable), m=_handle(m), v=_handle(v),
        beta1_power=b1_power, beta2_power=b2_power, lr=lr, beta1=b1, beta2=b2, epsilon=eps,
        grad=tf.cast(gradient, dt))


def _sgd(tf, opt, gradient, variable, learning_rate):
    dt = variable.dtype
    lr = backend_update_step.once(opt, ("lr", dt.name), lambda: tf.cast(learning_rate, dt))
    grad = tf.cast(gradient, dt)
    if getattr(opt, "momentum_schedule", None) is None and opt.momentum == 0:
        tf.raw_ops.ResourceApplyGradientDescent(var=_handle(variable), alpha=lr, delta=grad)
        return
    accum = fused_update_step.sgd_momentum_slot(opt, variable)
    tf.raw_ops.ResourceApplyKerasMomentum(var=_handle(variable), accum=_handle(accum), lr=lr, grad=grad,
                                          momentum=_momentum(tf, opt, opt.momentum, dt),
                                          use_nesterov=bool(opt.nesterov))
