"""Choosing the Keras backend of a worker process and importing it.

Keras reads ``KERAS_BACKEND`` once, when it is first imported, and XLA reads
``XLA_FLAGS`` (the simulated CPU device count) once, when JAX starts: so every worker
entry point calls `use` with the run's settings before anything else imports Keras,
and `use` imports it then (no TensorFlow runtime or JAX backend is started by that).
"""
from __future__ import annotations

import gc
import os
import sys

_HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"
# Packages TensorFlow or Keras import only because they are installed, which a worker never
# uses: JAX on a TensorFlow worker (tf.lite's util imports it for its jit), pandas on any
# worker (Keras's array adapters accept DataFrames; a worker feeds NumPy and tf.data). Both
# importers catch ImportError. Kept out, a TensorFlow worker starts ~0.8 s sooner (importing
# TensorFlow, Keras and the training code: 4.9 s instead of 5.7 s, medians of 5, 2-core VM).
UNUSED_IN_WORKER = {"tensorflow": ("jax", "pandas"), "jax": ("pandas",)}


def use(backend: str, device_type: str = "auto", devices: int = 1) -> None:
    """Set the environment so that Keras runs on `backend` ('tensorflow' | 'jax').

    For JAX: `devices` > 1 on a CPU are simulated with XLA's host device count (they
    share its cores: labelled simulated); device_type 'cpu' hides any GPU from JAX.
    Keeps UNUSED_IN_WORKER[backend] out of the process (`keep_out`), then imports Keras
    (`import_keras`): call it in worker processes only.
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
    keep_out(UNUSED_IN_WORKER.get(backend, ()))
    if backend == "jax":
        if device_type == "cpu":
            os.environ["JAX_PLATFORMS"] = "cpu"
        if devices > 1:
            flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(_HOST_DEVICES_FLAG)]
            os.environ["XLA_FLAGS"] = " ".join([*flags, f"{_HOST_DEVICES_FLAG}={devices}"])
        # Like TF's memory growth: allocate GPU memory as needed, not 75% up front.
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import_keras()


def import_keras() -> None:
    """Import Keras (on $KERAS_BACKEND, which imports TensorFlow or JAX) with Python's cyclic
    collector off; what it made is then frozen (gc.freeze: it lives as long as the process, and
    later collections leave it alone). The imports make ~450,000 such objects and few cycles,
    and the collector walked the growing heap again and again meanwhile: a fifth of the samples
    in `perf`; a TensorFlow worker's imports 4.70 -> 3.53 CPU-s (benchmarks/import_cpu.py).
    scikit-learn is kept out while Keras loads: its scikit-learn wrappers import it when it is
    installed (with SciPy's stats, 0.8 CPU-s) and work without it; no worker uses them, and
    code run later (a user's model file) may still import scikit-learn."""
    was_on = gc.isenabled()
    gc.disable()
    finder = None if "sklearn" in sys.modules else _KeptOut(["sklearn"], "while Keras loads: import_keras")
    if finder:
        sys.meta_path.insert(0, finder)
    try:
        import keras  # noqa: F401
    finally:
        if finder:
            sys.meta_path.remove(finder)
        gc.freeze()
        if was_on:
            gc.enable()


class _KeptOut:
    """A meta path finder that answers ModuleNotFoundError for some top-level packages,
    as if they were not installed (`"pandas" in sys.modules` stays False, which
    libraries such as scikit-learn read as "not there")."""

    def __init__(self, names, why: str = "engine.training.backends.UNUSED_IN_WORKER"):
        self.names, self.why = frozenset(names), why

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"{fullname} is kept out of this worker process ({self.why})",
                                      name=fullname)
        return None


def keep_out(modules) -> None:
    """Make ``import m`` raise ModuleNotFoundError in this process, for each of `modules`
    not imported yet (a finder first in sys.meta_path). For worker processes only: what
    their imports would load and never use."""
    names = [m for m in modules if m not in sys.modules]
    if names:
        sys.meta_path.insert(0, _KeptOut(names))
