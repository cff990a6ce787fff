"""LR / momentum schedules: hand-computed values, Keras == NumPy, serialisation,
and that a scheduled momentum really reaches the compiled update."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TF is imported


import numpy as np
import pytest

from engine.config import lr_math
from engine.config import RunConfig
from tests.helpers.lazy import lazy

pytestmark = pytest.mark.tf  # lane: docs/testing.md

keras = lazy("keras")
tf = lazy("tensorflow")
sch = lazy("engine.training.schedules")

SPE = 10  # steps per epoch; with epochs=10 -> total_steps = 100


def cfg(**kw):
    base = dict(epochs=10, learning_rate=0.1)
    base.update(kw)
    return RunConfig(**base)


def lr(c, steps):
    return lr_math.lr_at(c, np.asarray(steps), SPE)


def keras_lr(c, steps, dtype="int64"):
    return sch.build_schedule(c, SPE)(tf.constant(steps, dtype)).numpy()


# --- hand-computed values -----------------------------------------------------------
def test_effective_lr_linear_scaling():
    # 0.1 * 512 / 128 = 0.4 (Goyal et al.); unscaled stays 0.1.
    assert lr_math.effective_lr(cfg(batch_size=512, scale_lr=True)) == pytest.approx(0.4)
    assert lr_math.effective_lr(cfg(batch_size=512)) == pytest.approx(0.1)


def test_constant_with_and_without_warmup():
    c = cfg(warmup_epochs=0.5)  # 5 warmup steps: 0.1 * (s + 1) / 5
    np.testing.assert_allclose(lr(c, [0, 2, 4, 5, 99]), [0.02, 0.06, 0.1, 0.1, 0.1], rtol=1e-12)
    assert sch.build_schedule(cfg(), SPE) == pytest.approx(0.1)  # plain float, no schedule object
    np.testing.assert_allclose(lr(cfg(), [0, 50, 99]), [0.1, 0.1, 0.1])


def test_warmup_cosine():
    c = cfg(schedule="warmup_cosine", warmup_epochs=1.0)  # warmup 10 steps, then 90 decay steps
    # step 0: 0.1/10; step 9: end of warmup = 0.1; step 10: t=0 -> 0.1;
    # step 40: t=30 -> 0.1*(1+cos(pi/3))/2 = 0.075; step 55: t=45 -> 0.05;
    # step 99 (last): t=89 -> 0.05*(1 - cos(pi/90)) = 0.05*(1 - 0.99939082701909) = 3.04586490452e-5;
    # step 100 and later: 0.
    np.testing.assert_allclose(lr(c, [0, 9, 10, 40, 55, 99, 100, 150]),
                               [0.01, 0.1, 0.1, 0.075, 0.05, 3.04586490452e-5, 0.0, 0.0],
                               rtol=1e-9, atol=1e-15)


def test_warmup_step():
    c = cfg(schedule="warmup_step", warmup_epochs=0.5, step_decay_epochs=3, step_decay_rate=0.1)
    # warmup 5 steps; x0.1 at steps 30, 60, 90 (counted from step 0).
    np.testing.assert_allclose(lr(c, [0, 4, 29, 30, 59, 60, 99]),
                               [0.02, 0.1, 0.1, 0.01, 0.01, 0.001, 1e-4], rtol=1e-9)


def test_cyclic_triangular_and_default_max():
    c = cfg(schedule="cyclic", max_lr=0.5, half_cycle_epochs=2)  # step_size 20, cycle 40 steps
    # base 0.1 -> 0.3 (half way up) -> peak 0.5 at 20 -> 0.3 -> back to 0.1 at 40 (end of cycle 1).
    np.testing.assert_allclose(lr(c, [0, 10, 20, 30, 40, 60]), [0.1, 0.3, 0.5, 0.3, 0.1, 0.5],
                               rtol=1e-9)
    # max_lr unset: 10 x base = 0.1 at the peak.
    assert lr(cfg(schedule="cyclic", learning_rate=0.01), [20])[0] == pytest.approx(0.1)
    # scale_lr scales both ends: batch 256 / 128 -> base 0.2, peak 1.0.
    scaled = cfg(schedule="cyclic", max_lr=0.5, scale_lr=True, batch_size=256)
    np.testing.assert_allclose(lr(scaled, [0, 20]), [0.2, 1.0], rtol=1e-9)


def test_cyclic_triangular2_and_exp_range():
    c2 = cfg(schedule="cyclic", max_lr=0.5, half_cycle_epochs=2, cyclic_mode="triangular2")
    # peaks: 0.1 + 0.4 (cycle 1), + 0.4/2 (cycle 2, step 60), + 0.4/4 (cycle 3, step 100).
    np.testing.assert_allclose(lr(c2, [20, 40, 60, 100]), [0.5, 0.1, 0.3, 0.2], rtol=1e-9)
    ce = cfg(schedule="cyclic", max_lr=0.5, half_cycle_epochs=2, cyclic_mode="exp_range",
             cyclic_gamma=0.99)
    # 0.1 + 0.4 * 0.99**20 = 0.42716277503889; 0.1 + 0.4 * 0.99**60 = 0.31886265695630.
    np.testing.assert_allclose(lr(ce, [0, 20, 40, 60]),
                               [0.1, 0.42716277503889, 0.1, 0.31886265695630], rtol=1e-9)


def test_one_cycle_lr_and_momentum():
    c = cfg(schedule="one_cycle", optimizer="sgd", max_lr=1.0)  # pct 0.3, div 25, final div 1e4
    # initial 1/25 = 0.04; peak 1.0 at step 0.3*100 - 1 = 29; final 0.04/1e4 = 4e-6 at step 99.
    # step 14.5 is half way up: 1 - 0.96 * sin(pi/4)**2 = 0.52;
    # step 64 is half way down (29 -> 99): 4e-6 + (1 - 4e-6) / 2 = 0.500002; held after the end.
    steps = [0, 14.5, 29, 64, 99, 120]
    np.testing.assert_allclose(lr(c, steps), [0.04, 0.52, 1.0, 0.500002, 4e-6, 4e-6], rtol=1e-9)
    # momentum moves inversely: 0.95 -> 0.85 at the LR peak -> 0.90 half way -> 0.95.
    np.testing.assert_allclose(lr_math.momentum_at(c, steps, SPE),
                               [0.95, 0.90, 0.85, 0.90, 0.95, 0.95], rtol=1e-9)
    # max_lr unset: 10 x 0.01 = 0.1 peak, 0.004 start.
    np.testing.assert_allclose(lr(cfg(schedule="one_cycle", learning_rate=0.01), [0, 29]),
                               [0.004, 0.1], rtol=1e-9)


def test_momentum_only_cycled_for_one_cycle_with_sgd_or_adam():
    assert lr_math.momentum_at(cfg(schedule="cyclic"), [0], SPE) is None
    assert lr_math.momentum_at(cfg(schedule="one_cycle", optimizer="rmsprop"), [0], SPE) is None
    assert lr_math.momentum_at(cfg(schedule="one_cycle", optimizer="adam"), [0], SPE)[0] == 0.95


def test_preview():
    p = lr_math.preview(cfg(schedule="one_cycle", max_lr=1.0), SPE, max_points=11)
    # linspace(0, 99, 11) rounded: 0, 10, 20, 30, 40, 50, 59, 69, 79, 89, 99.
    assert p["step"].tolist() == [0, 10, 20, 30, 40, 50, 59, 69, 79, 89, 99]
    assert p["lr"][0] == pytest.approx(0.04) and p["lr"][-1] == pytest.approx(4e-6)
    assert p["momentum"][0] == pytest.approx(0.95) and p["epoch"][-1] == pytest.approx(9.9)
    full = lr_math.preview(cfg(), SPE)
    assert len(full["step"]) == 100 and full["momentum"] is None


# --- Keras schedules == lr_math ---------------------------------------------------------
ALL_CONFIGS = [
    dict(warmup_epochs=1.5),
    dict(schedule="warmup_cosine", warmup_epochs=1.0),
    dict(schedule="warmup_step", warmup_epochs=0.5),
    dict(schedule="cyclic", max_lr=0.5, cyclic_mode="triangular"),
    dict(schedule="cyclic", cyclic_mode="triangular2", half_cycle_epochs=1.5),
    dict(schedule="cyclic", cyclic_mode="exp_range", cyclic_gamma=0.99),
    dict(schedule="one_cycle", max_lr=1.0),
    dict(schedule="one_cycle", scale_lr=True, batch_size=256, one_cycle_pct_start=0.25),
]


@pytest.mark.parametrize("kw", ALL_CONFIGS, ids=lambda kw: "-".join(map(str, kw.values())))
def test_keras_schedule_matches_numpy(kw):
    c = cfg(**kw)
    steps = np.arange(0, 110)  # past the end too
    got = keras_lr(c, steps)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, lr(c, steps), rtol=1e-5, atol=0)
    # integer and float step tensors give the same values
    np.testing.assert_array_equal(keras_lr(c, steps, tf.int32), got)
    np.testing.assert_array_equal(keras_lr(c, steps.astype(np.float32), tf.float32), got)


def test_keras_momentum_schedule_matches_numpy_and_runs_under_xla():
    c = cfg(schedule="one_cycle", optimizer="adam")
    steps = np.arange(0, 100)
    mom = sch.build_momentum_schedule(c, SPE)
    np.testing.assert_allclose(mom(tf.constant(steps)).numpy(),
                               lr_math.momentum_at(c, steps, SPE), rtol=1e-6, atol=0)
    sched = sch.build_schedule(c, SPE)
    xla = tf.function(lambda s: sched(s), jit_compile=True)
    assert float(xla(tf.constant(29, tf.int64))) == pytest.approx(1.0, rel=1e-6)  # peak 10 x 0.1


# --- serialisation ----------------------------------------------------------------------
def test_serialize_round_trip():
    s = sch.build_schedule(cfg(schedule="cyclic", cyclic_mode="exp_range", max_lr=0.5), SPE)
    d = keras.optimizers.schedules.serialize(s)
    back = keras.optimizers.schedules.deserialize(d)
    assert isinstance(back, sch.Schedule) and back.get_config() == s.get_config()
    assert float(back(20)) == pytest.approx(0.1 + 0.4 * 0.999 ** 20, rel=1e-6)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_saved_model_keeps_schedules(tmp_path, opt):
    c = cfg(schedule="one_cycle", optimizer=opt, max_lr=1.0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(sch.build_optimizer(c, SPE), "categorical_crossentropy")
    model.fit(np.ones((4, 3), "float32"), np.eye(2, dtype="float32")[[0, 1, 0, 1]], verbose=0)
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    o = loaded.optimizer
    assert type(o) is {"sgd": sch.ScheduledMomentumSGD, "adam": sch.ScheduledMomentumAdam}[opt]
    assert int(o.iterations) == 1  # optimizer state came back too
    o.iterations.assign(29)  # LR peak / momentum trough
    assert float(o.learning_rate) == pytest.approx(1.0, rel=1e-6)
    assert float(o.momentum_schedule(o.iterations)) == pytest.approx(0.85, rel=1e-6)


def test_build_optimizer_kinds():
    sgd = sch.build_optimizer(cfg(optimizer="sgd", momentum=0.8), SPE)
    assert type(sgd) is keras.optimizers.SGD and sgd.momentum == 0.8
    adam = sch.build_optimizer(cfg(schedule="warmup_cosine"), SPE)
    assert type(adam) is keras.optimizers.Adam and adam.beta_1 == 0.9
    rms = sch.build_optimizer(cfg(schedule="one_cycle", optimizer="rmsprop"), SPE)
    assert type(rms) is keras.optimizers.RMSprop


# --- the scheduled momentum reaches the compiled update ----------------------------------
def _two_steps(optimizer, jit_compile):
    """w starts at 1; loss = mean(x @ w) with x = 1 gives gradient 1 at every step.
    Both steps run inside one compiled call (steps_per_execution=2), where a
    per-batch callback could not change anything."""
    model = keras.Sequential([keras.Input((1,)),
                              keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")])
    model.compile(optimizer, loss=lambda y, p: keras.ops.mean(p, axis=-1),
                  steps_per_execution=2, jit_compile=jit_compile)
    x = np.ones((8, 1), "float32")
    model.fit(x, x, batch_size=4, epochs=1, verbose=0, shuffle=False)
    return float(model.weights[0].numpy()[0, 0])


# total 4 steps, pct_start 0.5 -> peak step 0.5*4 - 1 = 1: momentum 0.95 at step 0, 0.85 at step 1.
MOM = dict(total_steps=4, pct_start=0.5)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_scheduled_sgd_momentum_changes_update(jit_compile):
    # m1 = -lr*g = -0.1, w1 = 0.9; m2 = 0.85*m1 - 0.1 = -0.185, w2 = 0.715
    # (a fixed momentum of 0.95 would give 0.705).
    opt = sch.ScheduledMomentumSGD(sch.Schedule("one_cycle_momentum", MOM), learning_rate=0.1)
    assert _two_steps(opt, jit_compile) == pytest.approx(0.715, abs=1e-6)


def test_scheduled_adam_beta1_changes_update():
    # Keras Adam, g = 1, lr 0.1, beta_2 0.999, eps 1e-7:
    # t=1, b1=0.95: m=0.05, v=0.001, step = 0.1*sqrt(1-0.999)/(1-0.95) * m/(sqrt(v)+eps)
    #             = 0.1 * sqrt(v)/(sqrt(v)+eps) = 0.0999996838
    # t=2, b1=0.85: m = 0.05 + 0.95*0.15 = 0.1925, v = 0.001999,
    #             step = 0.1*sqrt(1-0.999**2)/(1-0.85**2) * m/(sqrt(v)+eps) ~= 0.1*0.1925/0.2775
    #             = 0.0693692 -> w2 = 1 - 0.0999997 - 0.0693692 = 0.8306311
    # (a fixed beta_1 of 0.95 would give m/(1-0.95**2) = 1 -> w2 = 0.8).
    opt = sch.ScheduledMomentumAdam(sch.Schedule("one_cycle_momentum", MOM), learning_rate=0.1)
    assert _two_steps(opt, False) == pytest.approx(0.8306311, abs=1e-5)
    assert opt.beta_1 == 0.95  # the float attribute is restored after tracing
