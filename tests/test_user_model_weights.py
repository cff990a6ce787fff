"""A user's model as the user built it (docs/your-own-model.md, "Weights under a dtype policy"):
a `build()` that loads pretrained weights keeps them when SpeedLab rebuilds it for its float32
head under mixed precision, and a .keras file SpeedLab cannot load names `file.py:build` as
the fix.

tf: the weights after the rebuild (built, not trained, under the policy) and the refusals;
worker: real digits runs, float32 (in the test process) and mixed_bfloat16 (in a worker: bf16
training belongs there, docs/testing.md), of a pretrained `build()`, whose first epoch
validates alike.
"""
from __future__ import annotations

import json
import textwrap

import pytest

from engine.base.errors import ConfigError

# A tiny digits MLP; build() loads the weights the test pretrained (WEIGHTS: their path).
PRETRAINED = textwrap.dedent("""
    import keras
    from keras import layers

    WEIGHTS = {weights!r}

    def build(input_shape, num_classes):
        inp = keras.Input(input_shape)
        x = layers.Dense(32, activation="relu")(layers.Flatten()(inp))
        model = keras.Model(inp, layers.Dense(num_classes, activation="softmax")(x))
        model.load_weights(WEIGHTS)
        return model
""")

def _pretrained(tmp_path) -> str:
    """The path:build of a pretrained build() file in `tmp_path`: its MLP pretrained in float32
    in this process on scikit-learn's digits (engine.data.datasets.digits), weights saved."""
    import keras
    from keras import layers

    from engine.data.datasets import digits

    weights = tmp_path / "digits.weights.h5"
    py = tmp_path / "pretrained.py"
    py.write_text(PRETRAINED.format(weights=str(weights)))
    keras.mixed_precision.set_dtype_policy("float32")
    keras.utils.set_random_seed(0)
    inp = keras.Input((8, 8, 1))
    x = layers.Dense(32, activation="relu")(layers.Flatten()(inp))
    m = keras.Model(inp, layers.Dense(10, activation="softmax")(x))
    m.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = digits()
    m.fit(x, y, batch_size=64, epochs=20, verbose=0)  # 0.993 here; 40 epochs cost 2.6 CPU-s more
    assert m.evaluate(x, y, verbose=0)[1] > 0.95  # it learned digits: weights worth keeping
    m.save_weights(weights)
    return f"{py}:build"


@pytest.mark.tf
def test_a_build_rebuilt_for_its_float32_head_keeps_the_weights_build_gave_it(tmp_path):
    import keras
    import numpy as np

    from engine.training import user_model

    keras.utils.set_random_seed(0)
    inp = keras.Input((8, 8, 1))
    x = keras.layers.Dense(32, activation="relu")(keras.layers.Flatten()(inp))
    m = keras.Model(inp, keras.layers.Dense(10, activation="softmax")(x))
    weights = tmp_path / "digits.weights.h5"
    m.save_weights(weights)
    (tmp_path / "pretrained.py").write_text(PRETRAINED.format(weights=str(weights)))
    try:
        keras.mixed_precision.set_dtype_policy("mixed_bfloat16")
        built = user_model.build(f"{tmp_path / 'pretrained.py'}:build", (8, 8, 1), 10)
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    assert built.layers[-1].dtype_policy.name == "float32"  # rebuilt for the head ...
    assert built.layers[2].dtype_policy.name == "mixed_bfloat16"
    for a, b in zip(built.get_weights(), m.get_weights(), strict=True):  # ... with the weights build() loaded
        np.testing.assert_array_equal(a, b)


@pytest.mark.tf
def test_a_keras_file_with_a_layer_class_of_your_own_names_file_py_build(tmp_path):
    import keras
    from keras import layers

    from engine.training import user_model

    class Gain(layers.Layer):
        def build(self, shape):
            self.g = self.add_weight(shape=(shape[-1],), initializer="ones")

        def call(self, x):
            return x * self.g

    inp = keras.Input((8, 8, 1))
    keras.Model(inp, layers.Dense(10, activation="softmax")(layers.Flatten()(Gain()(inp)))).save(tmp_path / "g.keras")
    lam = layers.Lambda(lambda t: t * 2)(inp)
    keras.Model(inp, layers.Dense(10, activation="softmax")(layers.Flatten()(lam))).save(tmp_path / "l.keras")
    fix = "give the Python file that builds it instead: path/to/file.py:build"
    for name, problem in (("g.keras", "it uses layer classes of your own (Gain), whose code a .keras file does not "
                                      "hold"),
                          ("l.keras", "its Lambda layer's Python code is not loaded from a file (safe mode)")):
        spec = str(tmp_path / name)
        with pytest.raises(ConfigError) as e:
            user_model.build(spec, (8, 8, 1), 10)
        assert str(e.value) == f"model: {spec!r} cannot be loaded: {problem}; {fix}"


@pytest.mark.worker
def test_a_pretrained_build_validates_alike_in_float32_and_bf16_in_its_first_epoch(store_home, tmp_path,
                                                                                   monkeypatch):
    import threading

    from engine.config import RunConfig
    from engine.training.train import train
    from tests.helpers import cli, model_check

    spec = _pretrained(tmp_path)
    # One epoch (12 steps of 128) at a small learning rate: the first validation reads the
    # pretrained weights. float32 trains in this process (it holds Keras already); bf16 in the
    # worker the CLI (in this process, its model check too) queues, whatever this CPU's bf16
    # speed (--allow-slow).
    out = train(RunConfig(dataset="digits", model=spec, precision="float32", epochs=1, learning_rate=1e-5),
                lambda table, row: None, threading.Event())
    assert out.status == "completed", out.error
    acc = {"float32": out.summary["final_val_accuracy"]}
    model_check.in_process(monkeypatch)
    p = cli.engine("run", "--dataset", "digits", "--model", spec, "--precision", "mixed_bfloat16", "--epochs", "1",
                   "--learning-rate", "1e-5", "--json", "--quiet", "--allow-slow")
    assert p.returncode == 0, p.stderr[-2000:]
    bf16 = json.loads(p.stdout.strip().splitlines()[-1])
    assert bf16["status"] == "completed"
    acc["mixed_bfloat16"] = bf16["final_val_accuracy"]
    assert acc["float32"] > 0.9, acc  # pretrained: a fresh model is at about 0.1 after 12 small steps
    assert abs(acc["mixed_bfloat16"] - acc["float32"]) <= 0.01, acc
