"""FLOPs per training sample (engine.training.flops): hand-computed for the digits
mlp and cnn from the layer shapes in engine/training/models.py, and held against
XLA's own count (jax ... compile().cost_analysis()) within 15%."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.lazy import lazy

# Bound on first use: importing engine.training loads Keras (tests/lazy.py).
flops = lazy("engine.training.flops")
models = lazy("engine.training.models")

DIGITS = (8, 8, 1)


@pytest.mark.tf
def test_mlp_counts_its_three_dense_layers_at_two_flops_per_multiply_add():
    c = flops.count(models.build("mlp", DIGITS, 10))
    dense1 = 2 * (8 * 8 * 1) * 256  # Flatten(8x8x1) = 64 inputs -> 256 units
    dense2 = 2 * 256 * 128
    head = 2 * 128 * 10
    assert [f for _, f in c["layers"]] == [dense1, dense2, head]
    assert c["forward_flops_per_sample"] == dense1 + dense2 + head == 100_864
    assert c["flops_per_sample"] == 3 * 100_864 == 302_592  # forward + backward (2x)
    assert c["uncounted"] == []


@pytest.mark.tf
def test_cnn_counts_convolutions_per_output_position_and_skips_pooling():
    c = flops.count(models.build("cnn", DIGITS, 10))
    conv1 = 2 * (8 * 8) * (3 * 3 * 1) * 32   # 'same' padding: 8x8 outputs, 3x3x1 kernel, 32 filters
    conv2 = 2 * (8 * 8) * (3 * 3 * 32) * 64
    dense = 2 * (4 * 4 * 64) * 128           # after 2x2 max-pooling: 4x4x64 = 1,024 inputs
    head = 2 * 128 * 10
    assert [f for _, f in c["layers"]] == [conv1, conv2, dense, head]
    assert c["forward_flops_per_sample"] == 2_660_864
    assert c["flops_per_sample"] == 3 * 2_660_864


@pytest.mark.tf
def test_strided_depthwise_and_separable_convolutions():
    import keras
    from keras import layers

    inp = keras.Input((16, 16, 8))
    x = layers.Conv2D(4, 3, strides=2, padding="same")(inp)          # 8x8x4 out
    x = layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same")(x)  # 8x8x8 out
    x = layers.SeparableConv2D(6, 3, strides=2, padding="valid")(x)   # 3x3x6 out
    x = layers.BatchNormalization()(x)
    m = keras.Model(inp, layers.GlobalAveragePooling2D()(x))
    c = flops.count(m)
    assert [f for _, f in c["layers"]] == [
        2 * (8 * 8) * (3 * 3 * 8) * 4,
        2 * (8 * 8) * (3 * 3 * 4 * 2),
        2 * (3 * 3) * (3 * 3 * 8 * 1 + 1 * 1 * 8 * 6),
    ]


@pytest.mark.tf
def test_nested_backbone_is_walked_and_unknown_weighted_layers_are_named():
    import keras
    from keras import layers

    inner_in = keras.Input((4,))
    inner = keras.Model(inner_in, layers.Dense(3, name="inner_dense")(inner_in), name="inner")
    inp = keras.Input((5,), dtype="int32")
    x = layers.Embedding(10, 4, name="emb")(inp)            # weights, no matmul: not counted
    x = layers.GlobalAveragePooling1D()(x)
    m = keras.Model(inp, layers.Dense(2, name="out")(inner(x)))
    c = flops.count(m)
    assert c["layers"] == [["inner_dense", 2 * 4 * 3], ["out", 2 * 3 * 2]]
    assert c["uncounted"] == ["emb"]


# Keras on JAX needs a process of its own (the backend is fixed at import).
XLA_COUNT = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp
    from engine.training import flops, models
    B = 32
    out = {}
    for name in ("mlp", "cnn"):
        m = models.build(name, (8, 8, 1), 10)
        tv = [v.value for v in m.trainable_variables]
        ntv = [v.value for v in m.non_trainable_variables]
        x = jnp.zeros((B, 8, 8, 1), jnp.float32)
        y = jax.nn.one_hot(jnp.zeros((B,), jnp.int32), 10)

        def forward(tv, ntv, x):
            return m.stateless_call(tv, ntv, x, training=False)[0]

        def loss(tv, ntv, x, y):
            p = forward(tv, ntv, x)
            return -jnp.mean(jnp.sum(y * jnp.log(p + 1e-7), -1))

        def xla_flops(f, *args):
            cost = jax.jit(f).lower(*args).compile().cost_analysis()
            cost = cost[0] if isinstance(cost, (list, tuple)) else cost  # a list of dicts before JAX 0.4.30
            return float(cost["flops"]) / B

        c = flops.count(m)
        out[name] = {"forward": c["forward_flops_per_sample"], "training": c["flops_per_sample"],
                     "xla_forward": xla_flops(forward, tv, ntv, x),
                     "xla_training": xla_flops(jax.grad(loss), tv, ntv, x, y)}
    print(json.dumps(out))
""")


@pytest.mark.worker
def test_analytic_count_is_within_15_percent_of_xla_cost_analysis():
    pytest.importorskip("jax", reason="JAX is not installed: pip install -r requirements-dev.txt")
    from engine.process import worker_env

    proc = subprocess.run([sys.executable, "-c", XLA_COUNT], capture_output=True, text=True, timeout=300,
                          env={**worker_env(), "KERAS_BACKEND": "jax"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, r in got.items():
        # XLA counts a 'same' convolution's taps on real inputs only (the padding's are skipped:
        # (22/24)^2 of them on 8x8) and the elementwise ops we leave out; the training step
        # needs no gradient for the input. Both stay within 15% of the convention.
        assert abs(r["xla_forward"] / r["forward"] - 1) < 0.15, (name, r)
        assert abs(r["xla_training"] / r["training"] - 1) < 0.15, (name, r)
