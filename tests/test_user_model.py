"""A user's own model (docs/your-own-model.md): `--model file.py:build` and `--model model.keras`.

unit: the spelling of the field and the file checks made before any Keras; tf: the model
checks, the float32 head and the FLOP count of examples/my_model.py by hand; worker: the CLI
refuses a bad model file before anything is queued (exit 2, one line), and real digits runs
of the example, as a function and as a saved .keras file, report FLOPs and MFU.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.base import plain
from engine.config import MAX_MODEL_PY_BYTES, RunConfig
from engine.base.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "my_model.py"

# Bad model files, each with the one line it is refused with (the part after the value).
GOOD_HEAD = textwrap.dedent("""
    import keras
    from keras import layers

    def _body(shape):
        inp = keras.Input(shape)
        return inp, layers.Flatten()(inp)
""")
BAD = {
    "wrong_units": (GOOD_HEAD + textwrap.dedent("""
        def build(input_shape, num_classes):
            inp, x = _body(input_shape)
            return keras.Model(inp, layers.Dense(7, activation="softmax")(x))
    """), "build", "has output (7,) but the data set has 10 classes; end it with Dense(num_classes, "
                   "activation='softmax')"),
    "raises": (GOOD_HEAD + textwrap.dedent("""
        def build(input_shape, num_classes):
            raise ValueError("my layer sizes are wrong")
    """), "build", "raises in build(): ValueError: my layer sizes are wrong (raises.py, line 10); fix the model "
                   "file"),
    # An error inside a layer's call(): Keras wraps it in a header and the call's arguments,
    # whose last line ("• kwargs=<class 'inspect._empty'>") was all that was shown.
    "keras_error": (GOOD_HEAD + textwrap.dedent("""
        class Gray(layers.Layer):
            def call(self, x):
                raise ValueError(f"needs 3 channels, got {x.shape[-1]}")

        def build(input_shape, num_classes):
            inp, x = _body(input_shape)
            return keras.Model(inp, layers.Dense(num_classes, activation="softmax")(Gray()(inp)))
    """), "build", "raises in build(): ValueError: needs 3 channels, got 1 (keras_error.py, line 11); fix the "
                   "model file"),
    "no_function": (GOOD_HEAD, "make", "has no function 'make'; define build(input_shape, num_classes) returning "
                                       "a keras.Model, and name it after ':'"),
    "not_a_model": (GOOD_HEAD + "\ndef build(input_shape, num_classes):\n    return 42\n", "build",
                    "returns int, not a keras.Model; return keras.Model(inputs, outputs) or a keras.Sequential"),
    "wrong_input": (GOOD_HEAD + textwrap.dedent("""
        def build(input_shape, num_classes):
            inp, x = _body((28, 28, 1))
            return keras.Model(inp, layers.Dense(num_classes, activation="softmax")(x))
    """), "build", "takes input (28, 28, 1) but the data set's images are (8, 8, 1); build it on "
                   "keras.Input(input_shape) with the input_shape passed to build"),
    "no_softmax": (GOOD_HEAD + textwrap.dedent("""
        def build(input_shape, num_classes):
            inp, x = _body(input_shape)
            return keras.Model(inp, layers.Dense(num_classes)(x))
    """), "build", "does not end in a softmax (the loss reads class probabilities); end it with "
                   "Dense(num_classes, activation='softmax') or a Softmax layer"),
}


def _write(tmp_path, case: str) -> str:
    text, fn, _ = BAD[case]
    p = tmp_path / f"{case}.py"
    p.write_text(text)
    return f"{p}:{fn}"


# --- unit: the field's spelling and the file checks (no Keras, no process) ------------------

@pytest.mark.parametrize("spec, line", [
    ("examples/nothing.py", "model: 'examples/nothing.py' names no Python function; write it as "
                            "path/to/file.py:build (a function build(input_shape, num_classes))"),
    ("model.h5", "model: 'model.h5' is neither a .py file with a function nor a .keras file; give "
                 "path/to/file.py:build or path/to/model.keras"),
    ("transformer", "model: 'transformer' is not supported; use one of: mlp, cnn, resnet, mobilenetv2, resnet50, "
                    "efficientnetb0, or your own: path/to/file.py:build or path/to/model.keras"),
])
def test_a_model_that_names_no_function_or_file_kind_is_refused(spec, line):
    with pytest.raises(ConfigError) as e:
        RunConfig(model=spec)
    assert str(e.value) == line


def test_a_user_model_path_is_made_absolute_and_fresh_weights_need_a_keras_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert RunConfig(model="m.py:build").model == f"{tmp_path}/m.py:build"
    assert RunConfig(model="sub/m.keras", model_weights="fresh").model == f"{tmp_path}/sub/m.keras"
    with pytest.raises(ConfigError, match="^model_weights: 'fresh' applies only to a saved .keras model"):
        RunConfig(model="m.py:build", model_weights="fresh")
    with pytest.raises(ConfigError, match="^model_weights: 'old' is not supported; use one of: keep, fresh$"):
        RunConfig(model="m.keras", model_weights="old")
    with pytest.raises(ConfigError, match="^init_from: 3 cannot be combined with your own model file; "):
        RunConfig(model="m.py:build", init_from=3)
    with pytest.raises(ConfigError, match="^model: '' is empty; pick a model, or give path/to/file.py:build"):
        RunConfig(model="")


def test_missing_oversized_and_folder_model_files_are_refused_before_any_keras(tmp_path):
    from engine.config.preflight import check_user_model

    missing = tmp_path / "none.py"
    with pytest.raises(ConfigError) as e:
        check_user_model(RunConfig(model=f"{missing}:build"))
    assert str(e.value) == (f"model: '{missing}:build' names a file that does not exist; give the path of a .py "
                            "or .keras file on this machine")
    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (MAX_MODEL_PY_BYTES + 1))
    with pytest.raises(ConfigError) as e:
        check_user_model(RunConfig(model=f"{big}:build"))
    assert str(e.value) == (f"model: '{big}:build' is {MAX_MODEL_PY_BYTES + 1:,} bytes, over the "
                            f"{MAX_MODEL_PY_BYTES:,} byte limit; give a smaller file")
    (tmp_path / "dir.keras").mkdir()
    with pytest.raises(ConfigError, match=r"dir.keras' is not a file; "):
        check_user_model(RunConfig(model=str(tmp_path / "dir.keras")))
    assert check_user_model(RunConfig(model="cnn")) is None


def test_a_file_that_fails_on_import_is_its_last_line_with_file_and_line(tmp_path):
    from engine.training.user_model import load_function  # imports no framework itself

    cases = {"syntax.py": ("def build(:\n    pass\n", "raises on import: SyntaxError: invalid syntax (syntax.py, line 1)"),
             "boom.py": ("x = 1\nraise RuntimeError('boom')\n", "raises on import: RuntimeError: boom (boom.py, line 2)"),
             "other.py": ("def make(a, b):\n    pass\n", "has no function 'build' (it has make); define "
                          "build(input_shape, num_classes) returning a keras.Model, and name it after ':'")}
    for name, (text, problem) in cases.items():
        (tmp_path / name).write_text(text)
        spec = f"{tmp_path / name}:build"
        with pytest.raises(ConfigError) as e:
            load_function(spec)
        assert str(e.value).startswith(f"model: {spec!r} {problem}")


# --- tf: the model checks, the float32 head, the FLOP count --------------------------------

@pytest.mark.tf
@pytest.mark.parametrize("case", sorted(BAD))
def test_each_bad_model_is_one_line(tmp_path, case):
    from engine.training import user_model

    spec = _write(tmp_path, case)
    with pytest.raises(ConfigError) as e:
        user_model.build(spec, (8, 8, 1), 10)
    assert str(e.value) == f"model: {spec!r} {BAD[case][2]}"


@pytest.mark.tf
def test_example_flops_by_hand_and_a_keras_file_rebuilt_under_bf16_keeps_its_weights(tmp_path):
    import keras
    import numpy as np

    from engine.training import flops, user_model

    keras.mixed_precision.set_dtype_policy("float32")
    try:
        m = user_model.build(f"{EXAMPLE}:build", (8, 8, 1), 10)
        # Conv 3x3 'same' 1->16 on 8x8: 22 of 24 taps per axis touch real input (flops module
        # docstring), 22*22 taps x 16 filters x 2 FLOPs, forward + weight gradient (first layer);
        # Dense 256->64 and 64->10 (4x4x16 after the pool): forward + both gradients.
        conv = 2 * 22 * 22 * 1 * 16
        dense = 2 * 256 * 64 + 2 * 64 * 10
        c = flops.count(m)
        assert c["forward_flops_per_sample"] == conv + dense == 49536
        assert c["flops_per_sample"] == 2 * conv + 3 * dense == 133120
        assert c["uncounted"] == []
        path = tmp_path / "mine.keras"
        m.save(path)
        keras.mixed_precision.set_dtype_policy("mixed_bfloat16")
        kept = user_model.build(str(path), (8, 8, 1), 10, weights="keep")
        fresh = user_model.build(str(path), (8, 8, 1), 10, weights="fresh")
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    assert kept.layers[1].dtype_policy.name == "mixed_bfloat16"
    assert kept.layers[-1].dtype_policy.name == "float32"  # the softmax head, as the built-in models
    for a, b in zip(kept.get_weights(), m.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(fresh.layers[1].get_weights()[0], m.layers[1].get_weights()[0])


# --- worker: the CLI, real runs --------------------------------------------------------------

@pytest.mark.worker
def test_cli_says_what_it_checks_then_refuses_a_bad_model_before_queueing(store_home, tmp_path):
    # The model file waits at import for a file the test writes only once it has read the CLI's
    # first line: a CLI silent until the check ends would show the file's refusal first. Its
    # build() raises: the refusal is then one line after it, exit 2, nothing queued (one check
    # process for both; every bad model's line is checked in-process by
    # test_each_bad_model_is_one_line).
    # build() also writes which of JAX and pandas the check's process holds once Keras is
    # imported: none, as in the run's worker (engine.training.backends.UNUSED_IN_WORKER).
    go, held = tmp_path / "go", tmp_path / "held"
    (tmp_path / "waits.py").write_text(textwrap.dedent(f"""
        import os, sys, time
        for _ in range(600):
            if os.path.exists({str(go)!r}):
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("the test never said go")

        def build(input_shape, num_classes):
            open({str(held)!r}, "w").write(" ".join(m for m in ("jax", "pandas") if m in sys.modules))
            raise ValueError("checked after the first line")
    """))
    from engine.base.process import worker_env

    spec = f"{tmp_path / 'waits.py'}:build"
    p = subprocess.Popen([sys.executable, "-m", "engine", "run", "--dataset", "digits", "--model", spec,
                          "--epochs", "1"], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
                         env={**worker_env(), "SPEEDLAB_HOME": str(store_home)})
    try:
        first = p.stderr.readline().strip()
        go.touch()
        _, rest = p.communicate(timeout=300)
    finally:
        p.kill()
    assert first == (f"checking your model {spec}: building it for digits in a fresh process (starting Keras "
                     "takes 5-30 s) ...")
    assert p.returncode == 2
    assert rest.strip().splitlines() == [f"error: model: {spec!r} raises in build(): ValueError: checked after "
                                         "the first line (waits.py, line 12); fix the model file"]
    assert held.read_text() == ""
    from engine.store import Store

    with Store(store_home / "runs.sqlite") as store:
        assert store.list_runs() == []  # refused before anything was queued


@pytest.mark.worker
def test_example_model_trains_in_bf16_with_flops_and_mfu_and_so_does_its_keras_file(store_home, tmp_path,
                                                                                       monkeypatch):
    from tests.helpers import cli, model_check

    # The model checks in this process too (the check's own process is the first-line test's).
    model_check.in_process(monkeypatch)

    def run(spec):
        # The CLI in this process: the runs train in the workers it queues (bf16 never in here).
        # One epoch (12 executions, 11 of them steady) is enough for samples/s and so MFU.
        p = cli.engine("run", "--dataset", "digits", "--model", spec, "--precision", "mixed_bfloat16",
                       "--epochs", "1", "--json", "--quiet", "--allow-slow")  # whatever this CPU's bf16
        assert p.returncode == 0, p.stderr[-2000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    out = run("examples/my_model.py:build")
    assert out["status"] == "completed"
    assert out["flops_per_sample"] == 133120  # the hand count of the tf test
    assert 0 < out["mfu"] <= 1
    # The same model saved as .keras (its weights kept): counted the same, trained the same way.
    # Built and saved in float32 in this process (no TensorFlow process of its own to start).
    import importlib.util

    import keras

    s = importlib.util.spec_from_file_location("my_model", EXAMPLE)
    m = importlib.util.module_from_spec(s)
    s.loader.exec_module(m)
    keras.mixed_precision.set_dtype_policy("float32")
    m.build((8, 8, 1), 10).save(tmp_path / "mine.keras")
    out2 = run(os.path.join(tmp_path, "mine.keras"))
    assert out2["status"] == "completed" and out2["flops_per_sample"] == 133120 and 0 < out2["mfu"] <= 1


# --- page: the Train page's "your own" model ------------------------------------------------

@pytest.mark.page
def test_train_page_takes_a_model_path_from_the_link_and_shows_the_engines_line(store_home, tmp_path, monkeypatch):
    from tests.helpers.apptest import app_test

    spec = f"{tmp_path / 'none.py'}:build"
    at = app_test()
    at.query_params.update({"model": "own", "model_file": spec})
    at.run()
    assert not at.exception
    assert at.selectbox(key="model").value == "own"
    assert at.text_input(key="model_file").value == spec
    line = f"model: {spec!r} names a file that does not exist; give the path of a .py or .keras file on this machine"
    assert plain.md(line) in [e.value for e in at.error]  # untrusted text (a typed path) as plain text
    assert not any("Checking the model file" in c.value for c in at.caption)  # said while checking only
    assert at.button(key="launch").disabled
    uploaders = lambda: [u for u in at.get("file_uploader") if "model_upload" in str(getattr(u, "key", ""))]  # noqa: E731
    assert len(uploaders()) == 1  # .streamlit/config.toml: localhost only, so a .keras upload is offered
    import streamlit as st

    real = st.get_option  # server.address cannot be set in a running process: read it as 0.0.0.0
    monkeypatch.setattr(st, "get_option", lambda k: "0.0.0.0" if k == "server.address" else real(k))
    monkeypatch.delenv("SPEEDLAB_SECRET", raising=False)  # served to a network without the secret gate
    at.run()
    assert any("Uploading a .keras model is offered when" in c.value for c in at.caption)
    assert not uploaders()


def test_an_own_model_is_named_by_its_file_never_its_server_path():
    # Issue 57: an own-model run read "baseline fp32" and its caption showed the absolute path.
    from engine.charts import style as chart_style

    run = {"id": 7, "role": "baseline", "config": {"model": "/srv/speedlab/users/ann/my_net.py:build",
                                                   "precision": "float32", "dataset": "digits", "batch_size": 64}}
    assert chart_style.run_label(run) == "#7 baseline fp32 · my_net.py:build"
    assert chart_style.config_summary(run["config"]).startswith("digits · my_net.py:build · fp32")
    assert chart_style.model_name("/tmp/a b/*x*<i>.keras") == "-x--i-.keras"  # inert in markdown and HTML
    assert chart_style.model_name("cnn") == "cnn"
