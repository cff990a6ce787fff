"""In-process checks of the TF parts: float32 head, NaN detection, devices are per process."""
import threading

import pytest

from tests.helpers.lazy import lazy

pytestmark = pytest.mark.tf  # lane: docs/testing.md

keras = lazy("keras")

models = lazy("engine.training.models")
recorder = lazy("engine.training.recorder")


@pytest.fixture
def policy():
    yield keras.mixed_precision.set_dtype_policy
    keras.mixed_precision.set_dtype_policy("float32")


@pytest.mark.parametrize("precision, compute", [("mixed_float16", "float16"), ("mixed_bfloat16", "bfloat16")])
@pytest.mark.parametrize("name, shape", [("mlp", (8, 8, 1)), ("cnn", (8, 8, 1)), ("resnet", (16, 16, 3))])
def test_head_is_float32_under_mixed_policies(policy, precision, compute, name, shape):
    policy(precision)
    m = models.build(name, shape, 10)
    head = m.get_layer(models.HEAD_NAME)
    assert head.dtype_policy.compute_dtype == "float32"
    assert m.get_layer("probs").dtype_policy.compute_dtype == "float32"
    hidden = [layer for layer in m.layers if layer.weights and layer.name != models.HEAD_NAME]
    assert hidden[0].dtype_policy.compute_dtype == compute
    assert all(w.dtype == "float32" for w in m.weights)  # variables stay float32
    out = m(keras.ops.ones((2, *shape)))
    assert keras.backend.standardize_dtype(out.dtype) == "float32" and tuple(out.shape) == (2, 10)
    assert keras.ops.convert_to_numpy(keras.ops.sum(out, axis=1)) == pytest.approx([1.0, 1.0], abs=1e-5)


class _FakeModel:
    stop_training = False

    class optimizer:  # noqa: N801 - stands in for a Keras optimizer
        learning_rate = 0.01


def test_recorder_stops_on_nan_with_epoch_and_step():
    rows = []
    rec = recorder.Recorder(64, steps_per_epoch=5, sink=lambda t, r: rows.append((t, r)),
                   stop_event=threading.Event())
    rec.set_model(_FakeModel())
    rec.on_train_begin()
    rec.on_epoch_begin(0)
    for step, loss in [(0, 2.0), (1, 1.5), (2, float("nan"))]:
        rec.on_train_batch_begin(step)
        rec.on_train_batch_end(step, {"loss": loss})
    assert rec.nan_at == (1, 3)
    assert rec.model.stop_training is True
    ex = [r for t, r in rows if t == "executions"]
    assert [r[2] for r in ex] == [1, 2, 3]  # global step after each execution
    assert ex[-1][7] is None  # a NaN loss is stored as NULL, not as NaN
    assert [r[9] for r in ex] == [1, 0, 0]  # only the first execution is warm-up


def _one_epoch_spe2(**kw):
    """Drive a recorder.Recorder through one epoch of 5 batches at steps_per_execution 2, as
    Keras reports it: (0,1), (2,3), (4,5) although the last execution has 1 batch."""
    rows = []
    rec = recorder.Recorder(32, steps_per_epoch=5, sink=lambda t, r: rows.append(r), **kw)
    rec.set_model(_FakeModel())
    rec.on_train_begin()
    rec.on_epoch_begin(0)
    for begin in (0, 2, 4):
        rec.on_train_batch_begin(begin)
        rec.on_train_batch_end(begin + 1, {"loss": 1.0})
    return rec, rows


def test_recorder_counts_short_last_execution():
    rec, rows = _one_epoch_spe2()
    assert rec.batches == [2, 2, 1] and rec.step == 5
    assert rows[-1][6] == pytest.approx(32 / rows[-1][5])  # samples/s = 1 batch x 32 / duration


def test_recorder_counts_the_short_last_batch_of_an_epoch():
    # 150 samples in batches of 32: 4 full batches and one of 22 (one replica keeps the remainder).
    rec, rows = _one_epoch_spe2(epoch_samples=150)
    assert rec.samples == [64, 64, 22] and sum(rec.samples) == 150
    assert rows[-1][6] == pytest.approx(22 / rows[-1][5])
