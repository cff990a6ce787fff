"""Quick facts about this machine, read without TensorFlow (it must not be
initialised in the app process): NVIDIA GPUs, TPU presence, CPU bf16 flags.

The full probe, which does start TF, runs in a worker (engine.hardware.verdicts).
"""
from __future__ import annotations

import functools
import glob
import math
import os
import platform
import shutil
import subprocess
from typing import Optional

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


def cpu_ident() -> dict:
    """{'vendor': 'GenuineIntel' | 'AuthenticAMD' | '', 'family': int | None, 'threads_per_core':
    logical CPUs per physical core (SMT siblings share a core's vector units)} from /proc."""
    vendor, family = "", None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id") and not vendor:
                    vendor = line.split(":", 1)[1].strip()
                elif line.startswith("cpu family") and family is None:
                    family = int(line.split(":", 1)[1].strip())
                if vendor and family is not None:
                    break
    except (OSError, ValueError):
        pass
    siblings = _read("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list") or "0"
    threads = 0
    for part in siblings.split(","):
        lo, _, hi = part.partition("-")
        try:
            threads += int(hi or lo) - int(lo) + 1
        except ValueError:
            threads = 1
    return {"vendor": vendor, "family": family, "threads_per_core": max(threads, 1)}


# --- CPUs this process may use: affinity and cgroup quota ---------------------------
def _read(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _cgroup_paths(proc_cgroup: str) -> dict:
    """{controller or '' (v2): path} from /proc/self/cgroup text."""
    out = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for ctrl in parts[1].split(","):
                out[ctrl] = parts[2]
    return out


def cpu_quota(root: str = "/sys/fs/cgroup", proc_cgroup: Optional[str] = None) -> Optional[float]:
    """CPUs' worth of time this process's cgroup may use (quota / period, e.g. 1.5),
    or None without a limit. cgroup v2: ``cpu.max`` ("QUOTA PERIOD" or "max PERIOD");
    v1: ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (quota -1 = none). The
    process's own cgroup and its parents are read; the smallest limit counts
    (https://docs.kernel.org/admin-guide/cgroup-v2.html#cpu-interface-files)."""
    text = proc_cgroup if proc_cgroup is not None else (_read("/proc/self/cgroup") or "")
    paths = _cgroup_paths(text)
    limits = []

    def ancestors(base: str, rel: str):
        rel = rel.strip("/")
        parts = rel.split("/") if rel else []
        for i in range(len(parts), -1, -1):
            yield os.path.join(base, *parts[:i])

    if "" in paths:  # v2 (unified)
        for d in ancestors(root, paths[""]):
            v = _read(os.path.join(d, "cpu.max"))
            if v and not v.startswith("max"):
                q, _, period = v.partition(" ")
                try:
                    limits.append(int(q) / int(period or 100000))
                except ValueError:
                    pass
    if "cpu" in paths:  # v1: the cpu controller, mounted alone or with cpuacct
        for base in (os.path.join(root, "cpu"), os.path.join(root, "cpu,cpuacct")):
            for d in ancestors(base, paths["cpu"]):
                q, period = _read(os.path.join(d, "cpu.cfs_quota_us")), _read(os.path.join(d, "cpu.cfs_period_us"))
                try:
                    if q and period and int(q) > 0:
                        limits.append(int(q) / int(period))
                except ValueError:
                    pass
    return min(limits) if limits else None


def cpu_facts() -> dict:
    """{'logical_cores': the machine's logical CPUs, 'affinity_cpus': CPUs this
    process may run on (sched_getaffinity, e.g. taskset), 'cpu_quota': the
    cgroup quota in CPUs or None, 'usable_cpus': min(affinity, ceil(quota)), at least 1}."""
    total = os.cpu_count() or 1
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        affinity = total
    quota = cpu_quota()
    usable = affinity if quota is None else min(affinity, max(1, math.ceil(quota - 1e-9)))
    return {"logical_cores": total, "affinity_cpus": affinity, "cpu_quota": quota, "usable_cpus": usable}


def cpu_line(facts: dict) -> str:
    """'2 CPU cores' or '1 of 2 CPU cores usable (affinity 1, quota 1.5)' from `cpu_facts()`-like keys."""
    total, usable = facts.get("logical_cores"), facts.get("usable_cpus") or facts.get("logical_cores")
    if usable is None or usable == total:
        return f"{total} CPU cores"
    why = [f"affinity {facts['affinity_cpus']}" if facts.get("affinity_cpus") not in (None, total) else "",
           f"quota {facts['cpu_quota']:g}" if facts.get("cpu_quota") else ""]
    why = ", ".join(w for w in why if w)
    return f"{usable} of {total} CPU cores usable" + (f" ({why})" if why else "")


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
    'cpu_fp16': bool, 'cpu_model': str, 'logical_cores': int, 'usable_cpus': int,
    'affinity_cpus': int, 'cpu_quota': float | None (see `cpu_facts`), 'backends':
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
        **cpu_facts(),
        "backends": installed_backends(),
    }
