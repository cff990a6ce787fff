"""Quick facts about this machine, read without TensorFlow (it must not be
initialised in the app process): NVIDIA GPUs, TPU presence, CPU bf16 flags.

The full probe, which does start TF, runs in a worker (engine.hardware.verdicts).
"""
from __future__ import annotations

import functools
import glob
import os
import platform
import shutil
import subprocess

# Keras backends SpeedLab can run on, and the distributions that provide them.
BACKEND_DISTRIBUTIONS = {"tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-intel",
                                        "tensorflow-macos", "tf-nightly"),
                         "jax": ("jax",), "jaxlib": ("jaxlib",)}

LOW_PRECISION_FLAGS = ("avx512_bf16", "amx_bf16", "avx512_fp16", "amx_fp16", "amx_tile", "avx512f")


def cpu_flags() -> set[str]:
    """CPU feature flags from /proc/cpuinfo (empty where it does not exist)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_model() -> str:
    """The CPU's model name, or platform.processor() where /proc is absent."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def nvidia_gpus(timeout_s: float = 5.0) -> list[str]:
    """Names of NVIDIA GPUs the driver reports (nvidia-smi), else /dev/nvidiaN nodes."""
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=timeout_s)
            if out.returncode == 0:
                return [line.strip() for line in out.stdout.splitlines() if line.strip()]
        except (OSError, subprocess.TimeoutExpired):
            pass
    return [f"NVIDIA device {os.path.basename(p)}" for p in sorted(glob.glob("/dev/nvidia[0-9]*"))]


def tpu_hint() -> bool:
    """True when the environment names a TPU (Colab / Cloud TPU VM conventions)."""
    env = any(os.environ.get(k) for k in ("TPU_NAME", "COLAB_TPU_ADDR", "TPU_WORKER_ID"))
    return env or bool(glob.glob("/dev/accel[0-9]*")) or bool(glob.glob("/dev/vfio/[0-9]*"))


def installed_backends() -> dict:
    """{'tensorflow': version or None, 'jax': ..., 'jaxlib': ...} from package metadata
    (imports neither)."""
    from importlib import metadata

    out = {}
    for name, dists in BACKEND_DISTRIBUTIONS.items():
        out[name] = None
        for dist in dists:
            try:
                out[name] = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
    return out


@functools.lru_cache(maxsize=1)
def quick_facts() -> dict:
    """{'gpus': int, 'gpu_names': [...], 'tpu': bool, 'cpu_bf16': bool,
    'cpu_fp16': bool, 'cpu_model': str, 'logical_cores': int, 'backends':
    installed_backends()}; cached per process."""
    flags = cpu_flags()
    names = nvidia_gpus()
    return {
        "gpus": len(names),
        "gpu_names": names,
        "tpu": tpu_hint(),
        "cpu_bf16": bool(flags & {"avx512_bf16", "amx_bf16"}),
        "cpu_fp16": bool(flags & {"avx512_fp16", "amx_fp16"}),
        "cpu_model": cpu_model(),
        "logical_cores": os.cpu_count() or 1,
        "backends": installed_backends(),
    }
