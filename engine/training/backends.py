"""Choosing the Keras backend of a worker process (no Keras, TensorFlow or JAX imported here).

Keras reads ``KERAS_BACKEND`` once, when it is first imported, and XLA reads
``XLA_FLAGS`` (the simulated CPU device count) once, when JAX starts: so every worker
entry point calls `use` with the run's settings before anything imports Keras.
"""
from __future__ import annotations

import os
import sys

_HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"


def use(backend: str, device_type: str = "auto", devices: int = 1) -> None:
    """Set the environment so that Keras runs on `backend` ('tensorflow' | 'jax').

    For JAX: `devices` > 1 on a CPU are simulated with XLA's host device count (they
    share its cores: labelled simulated); device_type 'cpu' hides any GPU from JAX.
    Raises RuntimeError when Keras was already imported with another backend (a
    programming error: the caller imported Keras too early).
    """
    if "keras" in sys.modules:
        import keras

        if keras.backend.backend() != backend:
            raise RuntimeError(f"Keras was imported with backend {keras.backend.backend()!r} before "
                               f"backend {backend!r} could be chosen")
        return
    os.environ["KERAS_BACKEND"] = backend
    if backend != "jax":
        return
    if device_type == "cpu":
        os.environ["JAX_PLATFORMS"] = "cpu"
    if devices > 1:
        flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(_HOST_DEVICES_FLAG)]
        os.environ["XLA_FLAGS"] = " ".join([*flags, f"{_HOST_DEVICES_FLAG}={devices}"])
    # Like TF's memory growth: allocate GPU memory as needed, not 75% up front.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
