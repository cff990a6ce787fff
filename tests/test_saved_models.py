"""A model saved with --save-model loads with plain Keras in a fresh interpreter
after the one documented line (import engine.training.saved).

The two models are saved by one module-scoped fixture and loaded by one fresh interpreter
(starting one costs a TensorFlow import); each test reads its own model's line."""
import pytest
import subprocess
import sys
import threading

import numpy as np

from engine.config import RunConfig

pytestmark = pytest.mark.tf  # lane: docs/testing.md

LOAD = """
import sys
import numpy as np
import engine.training.saved  # the documented line: registers SpeedLab's custom objects
import keras
for folder in sys.argv[1:]:
    model = keras.models.load_model(folder + "/model.keras")
    x = np.load(folder + "/x.npy")
    print(type(model.optimizer).__name__, float(np.abs(model.predict(x, verbose=0) - np.load(folder + "/p.npy")).max()))
"""


def save(folder, model, x) -> None:
    """Save `model` as the worker does, with inputs `x` and its predictions on them, in `folder`."""
    folder.mkdir()
    model.save(folder / "model.keras")
    np.save(folder / "x.npy", x)
    np.save(folder / "p.npy", model.predict(x, verbose=0))


def load_elsewhere(folders) -> list[tuple[str, float]]:
    """Load each folder's model in one fresh interpreter: (optimizer class, largest prediction
    difference on its `x`) per folder."""
    res = subprocess.run([sys.executable, "-c", LOAD, *map(str, folders)], capture_output=True, text=True,
                         timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.strip().splitlines()[-len(folders):]
    return [(name, float(diff)) for name, diff in (line.split() for line in lines)]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """{'cnn': (status, error, optimizer class, difference), 'backbone': (optimizer class, difference)}."""
    import keras

    from engine.data import datasets
    from engine.training import models, schedules
    from engine.training.build import loss
    from engine.training.train import train

    tmp = tmp_path_factory.mktemp("saved")
    cfg = RunConfig(model="cnn", schedule="one_cycle", max_lr=0.01, epochs=1, batch_size=128, device_type="cpu")
    out = train(cfg, lambda table, row: None, threading.Event())
    folders = {"backbone": tmp / "backbone"}
    if out.status == "completed":
        folders["cnn"] = tmp / "cnn"
        save(folders["cnn"], out.model, datasets.load(cfg).x_val[:16])
    # Built and compiled exactly as a run does (training it adds nothing to what is serialised).
    cfg = RunConfig(model="mobilenetv2", image_size=32, schedule="one_cycle", max_lr=0.01, epochs=1,
                    batch_size=128, device_type="cpu")
    model = models.build(cfg.model, (8, 8, 1), 10, image_size=cfg.input_size)
    model.compile(optimizer=schedules.build_optimizer(cfg, 12), loss=loss(cfg),
                  metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")])
    save(tmp / "backbone", model, np.random.default_rng(0).random((4, 8, 8, 1), dtype=np.float32))
    got = dict(zip(folders, load_elsewhere(list(folders.values()))))
    return {"cnn": (out.status, out.error, *got.get("cnn", (None, None))), "backbone": got["backbone"]}


def test_a_trained_one_cycle_cnn_loads_elsewhere(loaded):
    status, error, name, diff = loaded["cnn"]
    assert status == "completed", error
    assert name == "ScheduledMomentumAdam" and diff < 1e-5  # the same model: the same predictions


def test_a_backbone_model_loads_elsewhere(loaded):
    name, diff = loaded["backbone"]
    assert name == "ScheduledMomentumAdam" and diff < 1e-5
