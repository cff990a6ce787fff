"""Devices and data parallelism for a JAX worker (imports JAX inside functions only).

Several replicas use `keras.distribution.DataParallel`: the variables are replicated on
every device and each global batch is split evenly along its first axis (Keras's
distribution API, https://keras.io/guides/distribution/). On a CPU the devices are
simulated with XLA's host device count (engine.training.backends.use sets it before
JAX starts) and labelled simulated, as TensorFlow's logical devices are.
"""
from __future__ import annotations

import contextlib

from engine.training.device_setup import DeviceError, DeviceSetup


class _NoStrategy:
    """Stands in for a tf.distribute strategy: JAX places variables through the global
    Keras distribution instead of a scope."""

    num_replicas_in_sync = 1

    def scope(self):
        return contextlib.nullcontext()


def configure(device_type: str, n: int) -> DeviceSetup:
    """Set up `n` replicas on `device_type` ('auto' | 'cpu' | 'gpu').

    Raises: DeviceError when JAX sees no GPU for 'gpu', when more GPUs are asked for
    than there are (JAX cannot split a GPU into logical devices), or when fewer
    simulated CPU devices exist than asked for (XLA_FLAGS set too late).
    """
    import jax
    import keras

    gpus = _devices(jax, "gpu")
    kind = "GPU" if (device_type == "gpu" or (device_type == "auto" and gpus)) else "CPU"
    if kind == "GPU" and not gpus:
        raise DeviceError("device_type gpu: JAX sees no GPU (install jax[cuda12] or jax[cuda13]; "
                          "run `python -m engine hardware`)")
    if kind == "GPU":
        if n > len(gpus):
            raise DeviceError(f"devices: {n} asked for but JAX sees {len(gpus)} GPU(s); JAX cannot split "
                              f"a GPU into logical devices: use at most {len(gpus)}")
        devs, physical, simulated = gpus[:n], len(gpus), False
    else:
        cpus = _devices(jax, "cpu")
        if n > len(cpus):
            raise DeviceError(f"devices: {n} simulated CPU devices asked for but JAX has {len(cpus)}; "
                              "XLA_FLAGS must be set before JAX starts (engine.training.backends.use)")
        devs, physical, simulated = cpus[:n], 1, n > 1
    names = [f"{d.platform}:{d.id}" for d in devs]
    dist = keras.distribution.DataParallel(devices=names) if n > 1 else None
    keras.distribution.set_distribution(dist)  # None: plain single-device placement
    return DeviceSetup(_NoStrategy(), kind, n, simulated, physical, names, distribution=dist)


def _devices(jax, platform: str) -> list:
    try:
        return list(jax.devices(platform))
    except RuntimeError:  # no such platform in this jaxlib
        return []


def gpu_memory_mb(names: list) -> float | None:
    """GPU memory in use over the devices `names` ('gpu:0', ...), in MB, or None off GPU."""
    import jax

    total, seen = 0.0, False
    for d in _devices(jax, "gpu"):
        if f"{d.platform}:{d.id}" in names:
            stats = d.memory_stats() or {}
            if "bytes_in_use" in stats:
                total += stats["bytes_in_use"] / 2**20
                seen = True
    return total if seen else None
