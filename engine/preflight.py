"""Machine-dependent checks of a valid RunConfig, still before any TF work.

`RunConfig` validates values on construction and stays loadable on any
machine; this module asks whether *this* machine can run it: devices, data
files (or a download), pretrained weights and transfer source runs.
"""
from __future__ import annotations

from typing import Optional

from engine.config import RunConfig
from engine.data import keras_data
from engine.data.meta import check_available, class_warnings, dataset_info
from engine.errors import ConfigError
from engine.hardware.machine import installed_backends, quick_facts  # no TF: /proc, nvidia-smi, env
from engine.transfer_source import check_source


def check_runnable(c: RunConfig, machine: Optional[dict] = None) -> list[str]:
    """Machine-dependent checks, still before any TF work.

    `machine` is `engine.hardware.machine.quick_facts()` (GPU count, TPU presence, CPU
    flags) and is looked up when omitted.

    Returns: warnings (one line each) for allowed-but-slow settings.
    Raises: ConfigError when the machine cannot run the config at all.
    """
    m = machine if machine is not None else quick_facts()
    warnings: list[str] = []
    _check_backend(c, m)
    if c.device_type == "tpu" and not m.get("tpu"):
        raise ConfigError("device_type", "tpu", "was requested but No TPU detected",
                          "use device_type cpu, gpu or auto")
    if c.device_type == "gpu" and m.get("gpus", 0) == 0:
        raise ConfigError("device_type", "gpu", "was requested but no GPU is visible",
                          "use device_type cpu or auto, or install tensorflow[and-cuda]")
    on_gpu = c.device_type == "gpu" or (c.device_type == "auto" and m.get("gpus", 0) > 0)
    on_tpu = c.device_type == "tpu"
    if c.precision == "mixed_float16" and not on_gpu and not on_tpu:
        warnings.append("mixed_float16 on a CPU is emulated: expect it to be much slower than "
                        "float32 (about 100x on one of our CPU machines)")
    if c.precision == "mixed_bfloat16" and not on_gpu and not on_tpu and not m.get("cpu_bf16"):
        warnings.append("mixed_bfloat16 on a CPU without native bf16 instructions "
                        "(avx512_bf16/amx_bf16): expect it to be slower than float32")
    physical = m.get("gpus", 0) if on_gpu else (0 if on_tpu else 1)
    if on_tpu and c.steps_per_execution == 1:
        # Each execution is a host round trip; TPUs idle between them.
        warnings.append("on a TPU, fuse several steps per execution (e.g. steps_per_execution 32)")
    if c.workers > 1 and c.device_type == "tpu":
        raise ConfigError("workers", c.workers, "cannot be combined with a TPU",
                          "a TPU runs all its cores from one process: use workers 1")
    if c.workers > 1 and not on_gpu and c.devices > 1:
        raise ConfigError("devices", c.devices, f"per worker on a CPU with {c.workers} workers",
                          "use devices 1 with several CPU workers (each worker is one replica)")
    if c.jit_compile and not on_tpu and c.devices > physical and c.backend != "jax":
        # TF cannot compile one XLA program over variables on logical devices of one
        # physical device (https://www.tensorflow.org/xla/known_issues).
        raise ConfigError("jit_compile", True, f"cannot run over {c.devices} simulated logical devices",
                          "turn jit_compile off, or use as many devices as the machine has")
    if not on_tpu and c.devices > physical:
        kind = "GPU" if on_gpu else "CPU"
        warnings.append(f"{c.devices} replicas will be simulated logical devices carved out of "
                        f"{physical} physical {kind}: they share its cores, so expect no speedup")
    # Data, weights and source runs: files on this machine (or a download).
    check_available(c.dataset)
    warnings += class_warnings(dataset_info(c.dataset, c), c.validation_fraction)
    if c.pretrained:
        keras_data.check_weights(c.model, c.input_size)
    if c.init_from is not None:
        check_source(c)
    if c.backbone and not on_gpu and not on_tpu and c.input_size >= 128:
        warnings.append(f"{c.model} at {c.input_size}x{c.input_size} on a CPU is slow (seconds per batch); "
                        "set image_size to 32-96 for a quick try")
    return warnings


# How to install each backend (the CPU build; docs/backends.md says how to get JAX with CUDA).
INSTALL_HINT = {"tensorflow": "pip install -r requirements.txt",
                "jax": 'pip install "jax==0.10.2" "jaxlib==0.10.2" (CPU; docs/backends.md: JAX with CUDA)'}


def _check_backend(c: RunConfig, m: dict) -> None:
    """The backend must be installed; JAX cannot split a GPU into logical devices."""
    versions = m.get("backends") or installed_backends()
    if not versions.get(c.backend):
        other = [b for b in ("tensorflow", "jax") if b != c.backend and versions.get(b)]
        raise ConfigError("backend", c.backend, "is not installed in this environment",
                          f"{INSTALL_HINT[c.backend]}" + (f", or use backend {other[0]}" if other else ""))
    gpus = m.get("gpus", 0)
    if c.backend == "jax" and (c.device_type == "gpu" or (c.device_type == "auto" and gpus)) \
            and c.devices > max(gpus, 1):
        raise ConfigError("devices", c.devices, f"is more than the {gpus} GPU(s) here, and JAX cannot split a "
                          "GPU into simulated logical devices", f"use at most {gpus} devices with backend jax, "
                          "or device_type cpu (simulated CPU devices)")
