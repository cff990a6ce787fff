"""SpeedLabCallback (engine/training/script_run.py, public as `speedlab`): a user's fit() as a run.

Digits (1,797 samples) with validation_split=0.2: Keras trains on floor(1797 * 0.8) = 1437
samples, so batch 64 gives ceil(1437 / 64) = 23 steps per epoch.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STEPS_PER_EPOCH = 23  # ceil(1437 / 64), module docstring


def _digits():
    import keras
    import numpy as np
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images.astype(np.float32) / 16.0)[..., None], keras.utils.to_categorical(d.target, 10)


def _model(spe: int = 1):
    import keras

    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dense(10, activation="softmax")])
    m.compile(optimizer=keras.optimizers.Adam(1e-2), loss="categorical_crossentropy", metrics=["accuracy"],
              steps_per_execution=spe)
    return m


@pytest.mark.tf
def test_fit_leaves_a_completed_run_with_a_worker_summary(store_home):
    from engine.store import Store
    from engine.training.script_run import SpeedLabCallback
    from engine.training.summary import RunSummary

    x, y = _digits()
    cb = SpeedLabCallback(name="t", target_accuracy=0.5)
    _model(spe=4).fit(x, y, batch_size=64, epochs=2, validation_split=0.2, verbose=0, callbacks=[cb])
    with Store() as store:
        run = store.get_run(cb.run_id)
        execs = store.metrics("executions", cb.run_id)
        epochs = store.metrics("epochs", cb.run_id)
    assert run["status"] == "completed", run["error"]
    s = run["summary"]
    assert not [f for f in RunSummary.__dataclass_fields__ if f not in s]  # every worker-run key
    # 23 steps per epoch in executions of 4: ceil(23 / 4) = 6 per epoch, 12 in 2 epochs.
    assert s["executions"] == 12 and len(execs) == 12
    assert s["steps"] == 46 and s["epochs_run"] == 2 and len(epochs) == 2
    assert s["global_batch_size"] == 64 and s["steps_per_execution"] == 4 and s["replicas"] == 1
    assert s["samples_per_sec"] > 0
    assert s["flops_per_sample"] > 0 and s["mfu"] > 0
    parts = s["setup_sec"] + s["warmup_sec"] + s["train_sec"] + s["validation_sec"] + s["other_sec"]
    assert parts == pytest.approx(s["wall_sec"], rel=1e-6)
    assert s["setup_sec"] > 0  # process start to fit: the imports at least
    # Time to target: the clock of the first epoch whose validation accuracy reached 0.5.
    first = next(e for e in epochs if e["val_accuracy"] >= 0.5)
    assert s["time_to_target_sec"] == pytest.approx(first["t"])
    assert run["plan"]["source"] == "callback" and run["plan"]["name"] == "t"
    from engine.config import RunConfig

    cfg = RunConfig.from_dict(run["config"])  # every reader parses it
    assert cfg.batch_size == 64 and cfg.epochs == 2 and cfg.target_accuracy == 0.5


@pytest.mark.tf
def test_unwritable_home_warns_once_and_training_completes(tmp_path, monkeypatch):
    from engine.training.script_run import SpeedLabCallback

    home = tmp_path / "file-not-folder"
    home.write_text("x")  # a file where the folder should be: nothing can be created under it
    monkeypatch.setenv("SPEEDLAB_HOME", str(home))
    x, y = _digits()
    cb = SpeedLabCallback(name="t")
    with pytest.warns(RuntimeWarning, match="SpeedLab: not recording") as caught:
        hist = _model().fit(x[:256], y[:256], batch_size=64, epochs=2, verbose=0, callbacks=[cb])
    assert len([w for w in caught if "SpeedLab" in str(w.message)]) == 1
    assert len(hist.history["loss"]) == 2 and cb.run_id is None


@pytest.mark.tf
def test_env_contract_group_role_and_run_file(store_home, monkeypatch):
    from engine.store import Store
    from engine.training.script_run import SpeedLabCallback

    run_file = store_home / "side.json"
    monkeypatch.setenv("SPEEDLAB_GROUP", "pairs-7")
    monkeypatch.setenv("SPEEDLAB_ROLE", "baseline")
    monkeypatch.setenv("SPEEDLAB_RUN_FILE", str(run_file))
    monkeypatch.setenv("SPEEDLAB_SEED", "3")
    x, y = _digits()
    cb = SpeedLabCallback()
    _model().fit(x[:256], y[:256], batch_size=64, epochs=1, verbose=0, callbacks=[cb])
    assert json.loads(run_file.read_text()) == {"run_id": cb.run_id,
                                                "store": os.path.realpath(store_home / "runs.sqlite")}
    with Store() as store:
        run = store.get_run(cb.run_id)
    assert (run["group_id"], run["role"], run["config"]["seed"]) == ("pairs-7", "baseline", 3)


def _script_env(home: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPEEDLAB_")}
    return {**env, "SPEEDLAB_HOME": str(home), **extra}


@pytest.mark.tf
def test_example_script_leaves_a_run_that_show_reports(store_home, monkeypatch):
    import runpy

    # In this process, as `python examples/train_with_callback.py --epochs 2` (its environment: no
    # SPEEDLAB_ variable but the home): the script and its callback are the point, and
    # test_command_pairs.py runs the same script as processes.
    for k in [k for k in os.environ if k.startswith("SPEEDLAB_") and k != "SPEEDLAB_HOME"]:
        monkeypatch.delenv(k)
    monkeypatch.setattr(sys, "argv", ["examples/train_with_callback.py", "--epochs", "2"])
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "path", [*sys.path])  # the script puts ROOT first: undone after the test
    runpy.run_path(str(ROOT / "examples/train_with_callback.py"), run_name="__main__")
    from tests.helpers import cli

    shown = cli.engine("runs")  # reads the store: in this process
    assert shown.returncode == 0, shown.stderr
    runs = shown.stdout
    assert "a script run" in runs or "digits-example" in runs, runs
    from engine.store import Store

    with Store() as store:
        (run,) = store.list_runs()
    shown = cli.engine("show", str(run["id"]), "--json")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    s = json.loads(out.strip().splitlines()[-1])["summary"]
    assert s["samples_per_sec"] > 0 and s["mfu"] > 0 and "time_to_target_sec" in s
    for part in ("setup_sec", "warmup_sec", "train_sec", "validation_sec", "other_sec"):
        assert s[part] >= 0
    assert run["plan"]["script"] == "train_with_callback.py"


@pytest.mark.worker
def test_jax_backend_imports_no_tensorflow(store_home):
    pytest.importorskip("jax")
    code = ("import sys; sys.path.insert(0, '.'); import keras, numpy as np\n"
            "from speedlab import SpeedLabCallback\n"
            "m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation='softmax')])\n"
            "m.compile('adam', 'categorical_crossentropy', metrics=['accuracy'])\n"
            "x = np.random.rand(64, 4).astype('float32'); y = keras.utils.to_categorical(np.arange(64) % 3, 3)\n"
            "cb = SpeedLabCallback(name='jax'); m.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[cb])\n"
            "print(cb.run_id, 'tensorflow' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_script_env(store_home, KERAS_BACKEND="jax"),
                         check=True, capture_output=True, text=True, timeout=300).stdout
    run_id, tf_loaded = out.split()[-2:]
    assert tf_loaded == "False"
    from engine.store import Store

    with Store() as store:
        run = store.get_run(int(run_id))
    assert run["status"] == "completed" and run["summary"]["backend"] == "jax"
    assert run["summary"]["executions"] == 4  # 64 samples / batch 16, one epoch



def _callback_row() -> dict:
    from engine.config import RunConfig

    return {"id": 5, "status": "completed", "role": "run", "created": 0.0, "group_id": None, "origin": None,
            "config": RunConfig(dataset="synthetic", precision="mixed_bfloat16").to_dict(),
            "plan": {"source": "callback", "script": "train.py", "name": "my-exp"}, "summary": {}}


def test_runs_table_and_legend_label_a_callback_run():
    from engine.charts.style import run_label
    from engine.report.table import runs_frame

    row = runs_frame(None, runs=[_callback_row()]).iloc[0]
    assert (row["dataset"], row["model"]) == ("(script run)", "my-exp")
    assert row["origin"] == "a script run (train.py)"
    assert run_label(_callback_row()).endswith("script run")
    # The Runs table's configuration names the script, not the placeholder data set and model.
    from engine.charts.style import config_summary

    r = _callback_row()
    assert config_summary(r["config"], r["summary"], r["plan"]) == (
        "script run train.py · my-exp · mixed bf16 · 1 device · batch 128 · 10 epochs")


@pytest.mark.worker
def test_a_script_that_dies_of_its_generators_error_keeps_that_error_as_the_reason(store_home):
    """The script does not catch it: it exits before the watch thread looks, and its run read
    "the script ended before fit finished" (or, from `engine pairs`, TensorFlow's last line
    "[[IteratorGetNext]]"). Under JAX the generator raises outside the train step."""
    pytest.importorskip("jax")
    code = ("import sys; sys.path.insert(0, '.'); import keras, numpy as np\n"
            "from speedlab import SpeedLabCallback\n"
            "m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation='softmax')])\n"
            "m.compile('adam', 'categorical_crossentropy')\n"
            "def batches():\n"
            "    for i in range(10):\n"
            "        if i == 3: raise ValueError('corrupt record in shard 7')\n"
            "        yield np.ones((16, 4), 'float32'), np.eye(3, dtype='float32')[np.arange(16) % 3]\n"
            "cb = SpeedLabCallback(name='dies'); print(flush=True)\n"
            "m.fit(batches(), epochs=1, verbose=0, callbacks=[cb])\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_script_env(store_home, KERAS_BACKEND="jax"),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and "corrupt record in shard 7" in out.stderr
    from engine.store import Store

    with Store() as store:
        (run,) = store.list_runs()
    assert run["status"] == "failed" and run["error"] == "fit() raised: ValueError: corrupt record in shard 7"
