"""Worker side of the hardware check: imports TensorFlow and JAX (where installed), so it
runs only in a child process (``python -m engine.hardware.probe``), never in the app.

Prints one JSON object (the *facts*, layout documented in engine.hardware.verdicts) as
the last line of stdout.  Anything that fails is recorded in ``facts['errors']``
instead of aborting, so a half-working install still yields a report.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import threading
import time

import psutil

from engine.hardware import machine

SCHEMA = 1
TPU_TIMEOUT_S = 10.0  # TPUClusterResolver can block on GCE metadata lookups


def host_facts() -> dict:
    """CPU model, cores (the machine's and the usable ones: affinity and cgroup
    quota, engine.hardware.machine.cpu_facts), low-precision CPU flags, RAM (GiB = 2**30 bytes), OS."""
    flags = machine.cpu_flags()
    return {
        "cpu_model": machine.cpu_model(),
        "physical_cores": psutil.cpu_count(logical=False),
        "logical_cores": psutil.cpu_count(logical=True),
        **{k: v for k, v in machine.cpu_facts().items() if k != "logical_cores"},  # usable_cpus, ...
        "cpu_flags": sorted(flags & set(machine.LOW_PRECISION_FLAGS)),
        "ram_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "os": platform.system(),
        "arch": platform.machine(),
    }


def nvidia_smi_gpus(timeout_s: float = 5.0) -> list[dict]:
    """[{'name', 'memory_mib', 'driver_version'}] per GPU from nvidia-smi; [] without it."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                              "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return []
    rows = []
    for line in out.stdout.splitlines() if out.returncode == 0 else []:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3:
            mem = int(parts[1]) if parts[1].isdigit() else None
            rows.append({"name": parts[0], "memory_mib": mem, "driver_version": parts[2]})
    return rows


def tf_gpus(tf, smi: list[dict], errors: list[str]) -> list[dict]:
    """GPUs TensorFlow sees: name and compute capability from TF, memory (MiB)
    from the nvidia-smi row with the same name (TF and nvidia-smi may order
    devices differently), else the row with the same index."""
    gpus, unused = [], list(smi)
    for i, dev in enumerate(tf.config.list_physical_devices("GPU")):
        try:
            details = tf.config.experimental.get_device_details(dev)
        except Exception as e:  # noqa: BLE001 - report, don't abort
            details = {}
            errors.append(f"get_device_details({dev.name}): {e}")
        name = details.get("device_name", dev.name)
        cc = details.get("compute_capability")
        row = next((r for r in unused if r["name"] == name), None)
        if row is None and i < len(smi) and smi[i] in unused:
            row = smi[i]
        if row is not None:
            unused.remove(row)
        gpus.append({"name": name, "compute_capability": list(cc) if cc else None,
                     "memory_mib": row["memory_mib"] if row else None})
    return gpus


def tpu_facts(tf, timeout_s: float = TPU_TIMEOUT_S) -> dict:
    """{'hint', 'cores', 'error'}; tries TPUClusterResolver only when
    engine.hardware.machine.tpu_hint() is true, in a thread given `timeout_s` seconds."""
    hint = machine.tpu_hint()
    result = {"hint": hint, "cores": 0, "error": None}
    if not hint:
        return result

    def attempt():
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
            cores = 0
            try:
                cores = int(resolver.num_accelerators().get("TPU", 0))
            except Exception:  # noqa: BLE001 - fall back to initialising the system
                pass
            if not cores:
                tf.config.experimental_connect_to_cluster(resolver)
                tf.tpu.experimental.initialize_tpu_system(resolver)
                cores = len(tf.config.list_logical_devices("TPU"))
            result["cores"] = cores
        except Exception as e:  # noqa: BLE001
            result["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        result["error"] = f"TPU lookup did not finish within {timeout_s:.0f} s"
    return result


def _version(dist: str):
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def jax_facts(versions: dict, errors: list[str]) -> dict:
    """{'version', 'jaxlib', 'platform' ('gpu' | 'cpu' | ...), 'devices': ['cuda:0', ...],
    'gpu_details': [{name, compute_capability, memory_mib}]} from ``jax.devices()``;
    imports JAX (this process only), without taking GPU memory up front."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    out = {"version": versions["jax"], "jaxlib": versions["jaxlib"], "platform": None, "devices": [],
           "gpu_details": []}
    try:
        import jax

        devs = jax.devices()
        out["platform"] = devs[0].platform if devs else None
        out["devices"] = [f"{d.platform}:{d.id} ({d.device_kind})" for d in devs]
        for d in devs:
            if d.platform == "gpu":
                cc = getattr(d, "compute_capability", None)
                out["gpu_details"].append({"name": d.device_kind, "memory_mib": None,
                                           "compute_capability": [int(p) for p in str(cc).split(".")[:2]]
                                           if cc else None})
    except Exception as e:  # noqa: BLE001 - report, don't abort
        errors.append(f"jax.devices(): {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
    return out


def peak_facts(facts: dict, versions: dict, errors: list[str]):
    """The best matmul per dtype (engine.hardware.matmul_peak.measure, sizes until the rate
    stops rising, <= about 30 s) on the first GPU where there is one, else the CPU; with
    TensorFlow, else JAX; None without either. Other processes' CPU use is metered while it
    runs: a measurement under load is returned marked ('under_load', 'load_share') and not
    kept as this machine's figure (engine.hardware.peak_store)."""
    from engine.hardware import matmul_peak, peak_store

    backend = "tensorflow" if versions["tensorflow"] else "jax" if versions["jax"] else None
    if backend is None:
        return None
    gpus = facts.get("gpus") or []
    kind = "GPU" if gpus else "CPU"
    name = gpus[0]["name"] if gpus else (facts.get("host") or {}).get("cpu_model")
    try:
        with peak_store.LoadMeter() as load:
            got = matmul_peak.measure(backend, kind, name, matmul_peak.dtypes_for(
                kind, (facts.get("host") or {}).get("cpu_flags") or (),
                gpus[0].get("compute_capability") if gpus else None))
        got.update(under_load=load.under_load, load_share=round(load.share, 3))
        return peak_store.keep_best_matmul(got)
    except Exception as e:  # noqa: BLE001 - report, don't abort
        errors.append(f"matmul peak: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
        return None


def theoretical_facts(facts: dict, errors: list[str]) -> dict:
    """{'clock': the CPU clock (engine.hardware.clock, measured now and stored),
    'cpu': engine.hardware.peaks.cpu_theoretical per dtype, 'gpu': the first GPU's
    data-sheet dense peak per dtype (engine.hardware.peaks.theoretical) or None}."""
    from engine.hardware import peak_store, peaks

    out = {"clock": None, "cpu": {}, "gpu": None}
    try:
        out["clock"] = peak_store.cpu_clock(again=True)
        out["cpu"] = peak_store.cpu_theoretical(measure_clock=False)
    except Exception as e:  # noqa: BLE001 - report, don't abort
        errors.append(f"CPU clock: {type(e).__name__}: {e}")
    gpus = facts.get("gpus") or []
    if gpus:
        out["gpu"] = {d: peaks.theoretical("GPU", d, gpus[0]["name"]) for d in ("float32", "bfloat16", "float16")}
    return out


def collect() -> dict:
    """All facts; imports TensorFlow and JAX where installed (about 3-6 s on a CPU machine)."""
    t0 = time.time()
    errors: list[str] = []
    facts = {"schema": SCHEMA, "hostname": socket.gethostname(), "host": host_facts()}
    smi = nvidia_smi_gpus()
    facts["driver"] = {"gpus": machine.nvidia_gpus(),
                       "version": smi[0]["driver_version"] if smi else None}
    versions = machine.installed_backends()
    facts["software"] = {"python": platform.python_version(), "tensorflow": versions["tensorflow"],
                         "jax": versions["jax"], "jaxlib": versions["jaxlib"], "keras": _version("keras")}
    facts["build"], facts["gpus"] = {}, []
    facts["tpu"] = {"hint": machine.tpu_hint(), "cores": 0, "error": None}
    if versions["tensorflow"]:
        import tensorflow as tf  # the point of this module

        try:
            build = dict(tf.sysconfig.get_build_info())
        except Exception as e:  # noqa: BLE001
            build = {}
            errors.append(f"get_build_info: {e}")
        facts["build"] = json.loads(json.dumps(build, default=str))
        try:
            facts["gpus"] = tf_gpus(tf, smi, errors)
        except Exception as e:  # noqa: BLE001
            errors.append(f"list GPUs: {e}")
        facts["tpu"] = tpu_facts(tf)
    facts["backends"] = {"tensorflow": {"version": versions["tensorflow"],
                                        "devices": ["CPU", *[g["name"] for g in facts["gpus"]]]
                                        if versions["tensorflow"] else []}}
    if versions["jax"]:
        facts["backends"]["jax"] = jax_facts(versions, errors)
        if not versions["tensorflow"]:  # a JAX-only machine: its GPUs as JAX sees them
            facts["gpus"] = facts["backends"]["jax"].pop("gpu_details", [])
            for g, row in zip(facts["gpus"], smi):
                g["memory_mib"] = row["memory_mib"]
        facts["backends"]["jax"].pop("gpu_details", None)
    facts["theoretical"] = theoretical_facts(facts, errors)  # before the matmuls: a quiet core
    facts["peak"] = peak_facts(facts, versions, errors)
    facts["errors"] = errors
    facts["probed_at"] = round(t0, 3)
    facts["probe_seconds"] = round(time.time() - t0, 2)
    return facts


def main() -> None:
    line = json.dumps(collect(), sort_keys=True)
    sys.stdout.write("\n" + line + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: a stuck TPU thread or TF's own shutdown must not
    # hold the parent past its timeout once the answer is out.
    os._exit(0)


if __name__ == "__main__":
    main()
