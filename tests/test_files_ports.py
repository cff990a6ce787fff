"""Every external file or port is checked before anything is queued: damaged
pretrained-weights files and taken cluster ports get one line naming them."""
import socket
import subprocess
import sys

import h5py
import numpy as np
import pytest

from engine.base import cluster
from engine.config import ConfigError, RunConfig
from engine.data import keras_data
from engine.config.preflight import check_runnable
from tests.helpers import cli


CPU = {"gpus": 0, "tpu": False, "cpu_bf16": False}
WEIGHTS = "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_96_no_top.h5"


@pytest.fixture
def models_dir(tmp_path, monkeypatch):
    """An empty Keras models cache, and no network."""
    d = tmp_path / "keras" / "models"
    d.mkdir(parents=True)
    monkeypatch.setenv("KERAS_HOME", str(d.parent))
    monkeypatch.setenv("SPEEDLAB_OFFLINE", "1")
    monkeypatch.setattr(keras_data, "cache_dirs", lambda sub="datasets": [d.parent / sub])
    return d


def write_h5(path):
    """A small HDF5 weights file laid out as Keras's legacy format (one layer, two arrays)."""
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = [b"conv"]
        g = f.create_group("conv")
        g.create_dataset("kernel", data=np.arange(60_000, dtype=np.float32))
        g.create_dataset("bias", data=np.ones(8, np.float32))
    return path


@pytest.mark.unit
def test_a_truncated_weights_file_is_refused_at_the_config_check(models_dir):
    cfg = RunConfig(model="mobilenetv2", pretrained=True, image_size=96)
    good = write_h5(models_dir / WEIGHTS)
    assert check_runnable(cfg, CPU) == []  # a whole file passes
    data = good.read_bytes()
    good.write_bytes(data[: len(data) // 2])  # an interrupted download
    with pytest.raises(ConfigError) as e:
        check_runnable(cfg, CPU)
    msg = str(e.value)
    assert msg.startswith(f"pretrained: True needs the ImageNet weights file {good}, which is damaged (")
    assert msg.endswith("); delete it so that it is downloaded again") and "\n" not in msg
    good.write_bytes(b"<html>captive portal</html>")
    with pytest.raises(ConfigError, match="which is damaged"):
        check_runnable(cfg, CPU)


@pytest.mark.worker
def test_the_worker_names_a_weights_file_that_breaks_after_the_check(models_dir, tmp_path):
    bad = write_h5(models_dir / WEIGHTS)
    bad.write_bytes(bad.read_bytes()[:2000])
    code = ("from engine.training import models\n"
            "try:\n"
            "    models.build('mobilenetv2', (8, 8, 1), 10, image_size=96, pretrained=True)\n"
            "except models.WeightsError as e:\n"
            "    print('WeightsError:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    line = out.stdout.strip().splitlines()[-1]
    assert line.startswith(f"WeightsError: the ImageNet weights file {bad} cannot be read (")
    assert line.endswith("; delete it so that it is downloaded again")


def test_a_taken_cluster_port_is_refused_before_tensorflow_starts(store_home):
    # In the unit lane: the lane guard proves the refusal imported no framework.
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    free = cluster.free_ports(1)[0]
    try:
        with pytest.raises(ConfigError) as e:
            cluster.check_port(f"localhost:{port}")
        assert str(e.value) == (f"cluster: 'localhost:{port}' cannot be used: port {port} is already in use "
                                "on this machine; stop the program that holds it or give this worker another port")
        cluster.check_port(f"localhost:{free}")  # a free port passes
        out = cli.engine("worker", "--cluster", f"localhost:{port},localhost:{free}", "--task-index", "0",
                         "--epochs", "1")
    finally:
        taken.close()
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"error: {e.value}"]
    assert "tensorflow" not in out.stderr.lower()
