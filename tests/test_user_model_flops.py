"""FLOPs of a user's model as it trains (docs/your-own-model.md, "FLOPs and MFU").

keras-io's MNIST convnet (tests/data/mnist_convnet.py and its saved .keras) is a Sequential:
loaded from a .keras file, or rebuilt under a dtype policy for its float32 head, each layer
keeps the nodes of every intermediate graph Keras built while adding layers, and only the
model's own graph's nodes may be counted. tf: the hand count from its layer shapes; worker:
XLA's cost analysis of the same step (Keras on JAX, a process of its own) within 10%; unit:
the cross-check's rule (more than 10% apart: no FLOPs, so no MFU, and the reason).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.xla_flops import FAST_COMPILE

DATA = Path(__file__).resolve().parent / "data"
BUILD = f"{DATA / 'mnist_convnet.py'}:build"
KERAS = str(DATA / "mnist_convnet.keras")
MNIST = (28, 28, 1)

# 3x3 valid convolutions: 28 -> 26 (1 -> 32 channels), pool 13 -> 11 (32 -> 64), pool 5x5x64 = 1,600 -> 10.
CONV1 = 2 * 26 * 26 * 9 * 1 * 32    # 389,376: the first layer, forward + weight gradient
CONV2 = 2 * 11 * 11 * 9 * 32 * 64   # 4,460,544: forward + both gradients
HEAD = 2 * 1600 * 10                # 32,000
TRAINING = 2 * CONV1 + 3 * (CONV2 + HEAD)

# How tests/data/mnist_convnet.keras was made (float32, seed 0).
MAKE_KERAS = textwrap.dedent(f"""
    import keras, importlib.util as u
    keras.utils.set_random_seed(0)
    s = u.spec_from_file_location("m", {str(DATA / 'mnist_convnet.py')!r}); m = u.module_from_spec(s)
    s.loader.exec_module(m); m.build({MNIST}, 10).save({KERAS!r})
""")


@pytest.mark.tf
def test_keras_file_and_bf16_build_of_a_sequential_count_each_layer_once():
    import keras

    from engine.training import flops, user_model

    assert TRAINING == 14_256_384  # the figure; today's count was 72,455,424 (5.08x)
    counts = {}
    try:
        for policy in ("float32", "mixed_bfloat16", "mixed_float16"):
            keras.mixed_precision.set_dtype_policy(policy)
            for spec in (BUILD, KERAS):
                c = flops.count(user_model.build(spec, MNIST, 10))
                counts[(policy, spec)] = (c["flops_per_sample"], [n for n, _, _ in c["layers"]])
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    for (policy, spec), (total, names) in counts.items():
        assert total == TRAINING, (policy, spec, total)
        assert len(names) == 3, (policy, spec, names)  # two convolutions and the head, once each


XLA_CHECK = textwrap.dedent("""
    import json, sys
    import keras
    from engine.training import flops, user_model
    from engine.training.build import flops_plan
    for policy, spec in json.loads(sys.argv[1]):
        keras.mixed_precision.set_dtype_policy(policy)
        m = user_model.build(spec, (28, 28, 1), 10)
        # The plan's cross-check is XLA's count of the step (flops.xla_count): compiled once, read twice.
        plan = flops_plan(m, input_shape=[28, 28, 1], cross_check=True)
        print(json.dumps({"case": [policy, spec], "ours": flops.count(m)["flops_per_sample"],
                          "xla": plan.get("flops_xla_per_sample"), "plan": plan}), flush=True)
""")


@pytest.mark.worker
def test_mnist_convnet_as_keras_file_and_bf16_build_is_within_10_percent_of_xla():
    pytest.importorskip("jax", reason="JAX is not installed: pip install -r requirements-dev.txt")
    from engine.base.process import worker_env

    cases = [["float32", KERAS], ["mixed_bfloat16", BUILD]]
    p = subprocess.run([sys.executable, "-c", XLA_CHECK, json.dumps(cases)], capture_output=True, text=True,
                       timeout=600, env={**worker_env(), "KERAS_BACKEND": "jax", **FAST_COMPILE})
    assert p.returncode == 0, p.stderr[-3000:]
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    assert [r["case"] for r in rows] == cases
    for r in rows:
        assert r["ours"] == TRAINING
        assert abs(r["ours"] / r["xla"] - 1) <= 0.10, r
        # The run's own plan: checked against XLA, within 10%, so the count stands for MFU.
        assert r["plan"]["flops_per_sample"] == TRAINING
        assert abs(r["plan"]["flops_xla_per_sample"] / TRAINING - 1) <= 0.10
        assert "flops_note" not in r["plan"]


def test_a_count_more_than_10_percent_from_xla_leaves_mfu_missing_with_the_reason():
    from engine.training.build import _held_against_xla

    assert _held_against_xla(72_455_424, 14_000_000.4) == {
        "flops_xla_per_sample": 14_000_000, "flops_per_sample": None, "flops_layers_per_sample": 72_455_424,
        "flops_note": "MFU not shown: the layer count (72,455,424 FLOPs/sample) and XLA's count of the step "
                      "(14,000,000) differ by 418%, over 10%"}
    assert _held_against_xla(14_256_384, 14_000_000) == {"flops_xla_per_sample": 14_000_000}  # 1.8% apart
    assert _held_against_xla(14_256_384, None) == {
        "flops_note": "layer count not cross-checked: XLA's cost analysis needs the JAX backend"}


def test_the_cli_shows_mfu_missing_with_the_reason():
    from engine.cli.printing import mfu_rows

    note = "MFU not shown: the layer count (1 FLOPs/sample) and XLA's count of the step (2) differ by 50%, over 10%"
    assert ("MFU", f"- ({note})") in mfu_rows({"flops_per_sample": None, "flops_note": note, "mfu": None})
    # Within 10%: the count stands, with how far it is from XLA's (the convnet's bf16 build()).
    rows = dict(mfu_rows({"flops_per_sample": TRAINING, "flops_xla_per_sample": 15_242_743}))
    assert rows["FLOPs check"] == "-6.5% from XLA's count of the step (15,242,743)"  # 14,256,384 / 15,242,743
    rows = dict(mfu_rows({"flops_per_sample": TRAINING, "flops_note": "layer count not cross-checked: x"}))
    assert rows["FLOPs check"] == "layer count not cross-checked: x"
