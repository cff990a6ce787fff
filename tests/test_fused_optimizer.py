"""Fused optimizer updates (engine.training.fused_optimizer): the same numbers as
Keras's own update, with one kernel per variable in the traced step."""
import numpy as np
import pytest

from tests.helpers.lazy import lazy


keras = lazy("keras")
tf = lazy("tensorflow")

fused_optimizer = lazy("engine.training.fused_optimizer")
schedules = lazy("engine.training.schedules")

RNG = np.random.RandomState(0)
W0 = [RNG.randn(40).astype("float32"), RNG.randn(4, 5).astype("float32")]
# Gradients over nine orders of magnitude, so Adam's epsilon matters for some elements.
GRADS = [[(RNG.randn(*w.shape) * 10 ** RNG.uniform(-9, 0, w.shape)).astype("float32") for w in W0]
         for _ in range(6)]


def _momentum_schedule():
    # one-cycle momentum over 6 steps: 0.95 -> 0.85 -> 0.95 (engine.config.lr_math)
    return schedules.Schedule("one_cycle_momentum", {"total_steps": 6.0, "pct_start": 0.5,
                                                     "max_momentum": 0.95, "min_momentum": 0.85})


OPTIMIZERS = {
    "adam": lambda: keras.optimizers.Adam(3e-3, beta_1=0.9),
    "sgd": lambda: keras.optimizers.SGD(0.1),
    "sgd_momentum": lambda: keras.optimizers.SGD(0.1, momentum=0.9),
    "sgd_nesterov": lambda: keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    "adam_one_cycle_momentum": lambda: schedules.ScheduledMomentumAdam(_momentum_schedule(), learning_rate=3e-3),
    "sgd_one_cycle_momentum": lambda: schedules.ScheduledMomentumSGD(_momentum_schedule(), learning_rate=0.1),
}


def _run(make, fused: bool, strategy=None):
    import tensorflow as tf  # the real module: AutoGraph resolves `step`'s names through it, not a lazy one

    strategy = strategy or tf.distribute.get_strategy()
    with strategy.scope():
        vs = [keras.Variable(w.copy()) for w in W0]
        opt = make()
        if fused:
            assert fused_optimizer.fuse(opt)
        opt.build(vs)

    @tf.function
    def step(gs):
        def replica_fn(gs):
            opt.apply([tf.identity(g) for g in gs], vs)  # per-replica values, as gradients are
        strategy.run(replica_fn, args=(gs,))

    out = []
    for gs in GRADS:
        step([tf.constant(g) for g in gs])
        out.append([v.numpy().copy() for v in vs])
    return out, step, opt, vs


def _op_types(step):
    cf = step.get_concrete_function([tf.TensorSpec(w.shape, tf.float32) for w in W0])
    types = [op.type for op in cf.graph.get_operations()]
    for f in cf.graph.as_graph_def().library.function:
        types += [n.op for n in f.node_def]
    return types


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_fused_update_equals_keras_update(name):
    keras_out, keras_step, _, _ = _run(OPTIMIZERS[name], fused=False)
    keras_types = _op_types(keras_step)
    fused_out, step, opt, _ = _run(OPTIMIZERS[name], fused=True)
    assert fused_optimizer.is_fused(opt)
    for k, f in zip(keras_out, fused_out):
        for a, b in zip(k, f):
            # float32 rounding only: a few ulp of the weights (|w| < 4)
            np.testing.assert_allclose(b, a, rtol=0, atol=2e-6)
    # The weights moved: the comparison is not between two untouched copies.
    assert max(float(np.abs(a - w).max()) for a, w in zip(keras_out[-1], W0)) > 1e-3
    kernel = ("ResourceApplyAdam" if name.startswith("adam") else
              "ResourceApplyGradientDescent" if name == "sgd" else "ResourceApplyKerasMomentum")
    types = _op_types(step)
    assert types.count(kernel) == len(W0)  # one kernel per variable
    assert kernel not in keras_types


@pytest.mark.tf
def test_fused_adam_traces_fewer_ops_and_shares_the_step_scalars():
    k = _op_types(_run(OPTIMIZERS["adam"], fused=False)[1])
    f = _op_types(_run(OPTIMIZERS["adam"], fused=True)[1])
    # Keras: beta_1 ** t and beta_2 ** t, and assign-adds to m and v, for every variable.
    assert k.count("Pow") == 2 * len(W0) and k.count("AssignAddVariableOp") >= 2 * len(W0)
    # Fused: the two powers once for all variables, no separate assignments to the slots.
    assert f.count("Pow") == 2 and f.count("AssignAddVariableOp") == k.count("AssignAddVariableOp") - 2 * len(W0)
    assert len(f) < len(k) / 2


@pytest.mark.tf
@pytest.mark.parametrize("fused", [False, True])
def test_one_cycle_momentum_is_traced_once_per_step(fused):
    """engine.training.schedules evaluates the momentum schedule once per update,
    not once per variable (its ~20 ops each): the update's graph holds the
    schedule's sines exactly once, with or without fusing."""
    schedule_only = tf.function(lambda s: _momentum_schedule()(s)).get_concrete_function(
        tf.TensorSpec([], tf.int64))
    sines = [op.type for op in schedule_only.graph.get_operations()].count("Sin")
    assert sines >= 1
    types = _op_types(_run(OPTIMIZERS["adam_one_cycle_momentum"], fused=fused)[1])
    assert types.count("Sin") == sines


@pytest.mark.worker
def test_fused_under_mirrored_strategy_updates_every_replica(tmp_path):
    """In a fresh process with 2 logical CPUs (as SpeedLab simulates devices): inside
    Strategy.update each slot's handle is the current replica's copy, so both
    replicas' weights follow Keras's own mirrored update."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    code = r'''
import json, sys
import numpy as np, tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
sys.path.insert(0, TESTS)
import test_fused_optimizer as t
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
out = {}
for name in ("adam", "sgd_one_cycle_momentum"):
    k = t._run(t.OPTIMIZERS[name], fused=False, strategy=strategy)
    f = t._run(t.OPTIMIZERS[name], fused=True, strategy=strategy)
    out[name] = {"diff": max(float(np.abs(a - b).max()) for a, b in zip(k[0][-1], f[0][-1])),
                 "moved": max(float(np.abs(a - w).max()) for a, w in zip(k[0][-1], t.W0)),
                 "replicas_differ": max(float(np.abs(c.numpy() - v.value.values[0].numpy()).max())
                                        for v in f[3] for c in v.value.values)}
print(json.dumps(out))
'''.replace("TESTS", repr(str(Path(__file__).parent)))
    from engine.base.process import worker_env

    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**worker_env(), "SPEEDLAB_HOME": str(tmp_path)}, cwd=str(Path(__file__).parent.parent))
    assert res.returncode == 0, res.stderr[-2000:]
    r = json.loads(res.stdout.strip().splitlines()[-1])
    for name, x in r.items():
        assert x["moved"] > 1e-3, name
        assert x["diff"] <= 2e-6, name
        assert x["replicas_differ"] == 0.0, name


@pytest.mark.tf
def test_not_fused_where_no_kernel():
    assert fused_optimizer.fuse(keras.optimizers.RMSprop(1e-3)) is False
    assert fused_optimizer.fuse(keras.optimizers.Adam(1e-3, amsgrad=True)) is False
    assert not fused_optimizer.is_fused(keras.optimizers.Adam(1e-3))


def _fit(monkeypatch, **kw):
    import threading

    from keras.src.backend.tensorflow.trainer import TensorFlowTrainer

    from engine.config import RunConfig
    from engine.training.eval_trace import tf_function
    from engine.training.train import train

    seen = {"traces": 0}
    keras_step = TensorFlowTrainer.train_step

    def counted(self, data):  # runs once per trace, in Python
        seen["traces"] += 1
        return keras_step(self, data)

    monkeypatch.setattr(TensorFlowTrainer, "train_step", counted)

    class Grab(keras.callbacks.Callback):
        def on_train_end(self, logs=None):
            fn = tf_function(self.model.train_function)
            (cf,) = fn._list_all_concrete_functions()
            seen["ops"] = [n.op for f in cf.graph.as_graph_def().library.function for n in f.node_def]
            seen["variables"] = len(self.model.trainable_variables)

    out = train(RunConfig(model="mlp", epochs=2, **kw), lambda t, r: None, threading.Event(),
                extra_callbacks=[Grab()])
    monkeypatch.undo()
    return out, seen


@pytest.mark.tf
def test_a_digits_run_with_the_fused_update_trains_like_keras_and_traces_once(monkeypatch):
    """A real run each way (digits, mlp, 2 epochs, same seed). Both train functions are
    traced once: the metrics, loss tracker and optimizer slots are built before fit
    (engine.training.keras_patches.symbolic_build.build_once), so no variable is created inside the
    trace (TensorFlow traces a function that creates variables twice)."""
    plain, p = _fit(monkeypatch)
    fused, f = _fit(monkeypatch, fused_optimizer=True)
    assert (plain.status, fused.status) == ("completed", "completed")
    assert plain.summary["fused_optimizer"] is False and fused.summary["fused_optimizer"] is True
    assert p["traces"] == 1 and f["traces"] == 1
    assert f["ops"].count("ResourceApplyAdam") == f["variables"] == 6  # 3 Dense layers: kernel + bias
    assert "ResourceApplyAdam" not in p["ops"] and len(f["ops"]) < len(p["ops"])
    # Same model, same data order, same update up to float rounding: the same accuracy within
    # a few (3) of the 180 validation examples (360 held out: 180 validation, 180 test).
    assert fused.summary["final_val_accuracy"] == pytest.approx(plain.summary["final_val_accuracy"], abs=3 / 180)
