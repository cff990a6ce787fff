"""A model saved with --save-model loads with plain Keras in a fresh interpreter
after the one documented line (import engine.training.saved)."""
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
model = keras.models.load_model(sys.argv[1])
x = np.load(sys.argv[2])
print(type(model.optimizer).__name__, float(np.abs(model.predict(x, verbose=0) - np.load(sys.argv[3])).max()))
"""


def load_elsewhere(tmp_path, model, x) -> tuple[str, float]:
    """Save `model` as the worker does, load it in a fresh interpreter; (optimizer
    class, largest prediction difference on `x`)."""
    path = tmp_path / "model.keras"
    model.save(path)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "p.npy", model.predict(x, verbose=0))
    res = subprocess.run([sys.executable, "-c", LOAD, str(path), str(tmp_path / "x.npy"), str(tmp_path / "p.npy")],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    name, diff = res.stdout.strip().splitlines()[-1].split()
    return name, float(diff)


def test_a_trained_one_cycle_cnn_loads_elsewhere(tmp_path):
    from engine.data import datasets
    from engine.training.train import train

    cfg = RunConfig(model="cnn", schedule="one_cycle", max_lr=0.01, epochs=1, batch_size=128, device_type="cpu")
    out = train(cfg, lambda table, row: None, threading.Event())
    assert out.status == "completed", out.error
    name, diff = load_elsewhere(tmp_path, out.model, datasets.load(cfg).x_val[:16])
    assert name == "ScheduledMomentumAdam" and diff < 1e-5  # the same model: the same predictions


def test_a_backbone_model_loads_elsewhere(tmp_path):
    import keras

    from engine.training import models, schedules
    from engine.training.build import loss

    # Built and compiled exactly as a run does (training it adds nothing to what is serialised).
    cfg = RunConfig(model="mobilenetv2", image_size=32, schedule="one_cycle", max_lr=0.01, epochs=1,
                    batch_size=128, device_type="cpu")
    model = models.build(cfg.model, (8, 8, 1), 10, image_size=cfg.input_size)
    model.compile(optimizer=schedules.build_optimizer(cfg, 12), loss=loss(cfg),
                  metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")])
    x = np.random.default_rng(0).random((4, 8, 8, 1), dtype=np.float32)
    name, diff = load_elsewhere(tmp_path, model, x)
    assert name == "ScheduledMomentumAdam" and diff < 1e-5
