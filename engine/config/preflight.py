"""Machine-dependent checks of a valid RunConfig, still before any TF work.

`RunConfig` validates values on construction and stays loadable on any
machine; this module asks whether *this* machine can run it: devices, data
files (or a download), pretrained weights and transfer source runs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Optional

from engine.config import MAX_MODEL_KERAS_BYTES, MAX_MODEL_PY_BYTES, RunConfig, user_model
from engine.data import keras_data
from engine.data.meta import check_available, class_warnings, dataset_info
from engine.base.errors import ConfigError
from engine.base.process import ROOT
from engine.hardware.machine import installed_backends, quick_facts  # no TF: /proc, nvidia-smi, env
from engine.config.transfer_source import check_source


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
    check_user_model(c)
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


# A user model's check builds it with Keras: in a fresh process (this one may be the dashboard,
# which never imports a framework), remembered per file version, data shape and backend.
USER_MODEL_CHECK_TIMEOUT_S = 180
_checked: dict[tuple, dict] = {}


def check_user_model(c: RunConfig, timeout_s: float = USER_MODEL_CHECK_TIMEOUT_S) -> Optional[dict]:
    """A user's model (`model` = file.py:build or model.keras, docs/your-own-model.md): the file
    exists, is readable and within its size limit (checked before it is read), then
    `python -m engine.training.user_model check` builds it for the data set's shape and
    classes and checks input, output units and the softmax (Keras only in that process;
    about 5 s, remembered per file size and mtime). Returns {'ok': True, 'params': N} or
    None for a built-in model.
    Raises: ConfigError (one line) for every fault, an error inside the user's code included."""
    spec = user_model(c.model)
    if spec is None:
        return None
    path, name = spec
    limit = MAX_MODEL_PY_BYTES if name is not None else MAX_MODEL_KERAS_BYTES
    try:
        st = os.stat(path)
    except OSError:
        raise ConfigError("model", c.model, "names a file that does not exist",
                          "give the path of a .py or .keras file on this machine") from None
    if not os.path.isfile(path):
        raise ConfigError("model", c.model, "is not a file", "give the path of a .py or .keras file")
    if st.st_size > limit:
        raise ConfigError("model", c.model, f"is {st.st_size:,} bytes, over the {limit:,} byte limit",
                          "give a smaller file")
    if not os.access(path, os.R_OK):
        raise ConfigError("model", c.model, "cannot be read (permissions)", "make the file readable")
    info = dataset_info(c.dataset, c)
    shape, classes = tuple(int(d) for d in info.shape), int(info.classes)
    key = (c.model, st.st_size, st.st_mtime_ns, shape, classes, c.backend)
    out = _checked.get(key) or _run_check(c, shape, classes, timeout_s)
    _checked[key] = out  # a fault too: the Train page checks on every rerun
    if not out.get("ok"):
        raise ConfigError("model", c.model, str(out.get("problem")), str(out.get("fix")))
    return out


def _run_check(c: RunConfig, shape: tuple, classes: int, timeout_s: float) -> dict:
    """`python -m engine.training.user_model check` for `c.model`: its JSON line.
    Raises: ConfigError when it times out or prints no answer (not remembered)."""
    env = dict(os.environ, KERAS_BACKEND=c.backend, CUDA_VISIBLE_DEVICES="-1", JAX_PLATFORMS="cpu",
               TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=os.pathsep.join(
                   p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    cmd = [sys.executable, "-m", "engine.training.user_model", "check", c.model,
           ",".join(map(str, shape)), str(classes)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env,
                           cwd=ROOT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ConfigError("model", c.model, f"took more than {timeout_s:g} s to build",
                          "make build() quick (no training or downloads in it)") from None
    lines = p.stdout.strip().splitlines()
    try:
        out = json.loads(lines[-1]) if lines else None
    except ValueError:
        out = None
    if not isinstance(out, dict):
        err = (p.stderr.strip().splitlines() or [f"exit code {p.returncode}"])[-1][:300]
        raise ConfigError("model", c.model, f"could not be checked: {err}", "run it by hand to see why")
    return out


# A low precision on a CPU without native support for it: (RunConfig precision, quick_facts key
# of the native flag, the probe's dtype, the flags named).
SLOW_PRECISIONS = {"mixed_bfloat16": ("cpu_bf16", "bfloat16", "avx512_bf16/amx_bf16"),
                   "mixed_float16": ("cpu_fp16", "float16", "avx512_fp16/amx_fp16")}


def slow_precision(c: RunConfig, machine: Optional[dict] = None, probe: Optional[dict] = None) -> Optional[str]:
    """One line when `c` would train in a low precision this machine's CPU emulates (no native
    instructions for it in the live CPU flags, `machine` = quick_facts()), with the slowdown the
    cached hardware probe measured when it has one (`probe` = engine.hardware.verdicts.cached_facts(),
    its matmul peak per dtype: e.g. 'bf16 here: about 35x slower than float32 in the probe'); None
    on a GPU or TPU, for float32, or where the CPU has the instructions. Launch asks to allow it."""
    if c.precision not in SLOW_PRECISIONS:
        return None
    m = machine if machine is not None else quick_facts()
    if c.device_type == "tpu" or c.device_type == "gpu" or (c.device_type == "auto" and m.get("gpus", 0) > 0):
        return None
    key, dtype, flags = SLOW_PRECISIONS[c.precision]
    if m.get(key):
        return None
    if probe is None:
        from engine.hardware.verdicts import cached_facts

        probe = cached_facts() or {}
    peak = probe.get("peak") or {}
    rates = peak.get("dtypes") or {}
    f32, low = ((rates.get(d) or {}).get("flops_per_sec") for d in ("float32", dtype))
    short = {"bfloat16": "bf16", "float16": "fp16"}[dtype]
    if peak.get("device") == "CPU" and f32 and low and f32 > low:
        return (f"{short} here: about {f32 / low:.0f}x slower than float32 in the probe "
                f"(this CPU has no {flags})")
    return (f"{c.precision} on this CPU without {flags}: emulated, expect it to be slower than float32 "
            "(the hardware check measures by how much)")
