"""Hardware check: what this machine has, and which speed options should pay off.

No TensorFlow here (the app process imports this): `probe` runs
``python -m engine.hardware.probe`` in a child process and caches its answer in
``$SPEEDLAB_HOME/hardware.json``, keyed by hostname + machine fingerprint id + TensorFlow version.

Facts (the probe's JSON; every key optional to `verdicts`)::

    hostname   str
    host       {cpu_model: str, physical_cores: int|None, logical_cores: int,
                usable_cpus: int (affinity and cgroup quota), affinity_cpus: int, cpu_quota: float|None,
                cpu_flags: [low-precision /proc/cpuinfo flags, e.g. 'avx512_bf16'],
                ram_gib: float (2**30 bytes), os: str, arch: str}
    software   {python, tensorflow, jax, jaxlib, keras: version strings (None: not installed)}
    backends   {'tensorflow': {version, devices}, 'jax': {version, jaxlib, platform, devices:
                ['cpu:0 (cpu)', 'gpu:0 (NVIDIA H200)', ...]}} (jax only where installed)
    build      tf.sysconfig.get_build_info(): is_cuda_build, cuda_version, cudnn_version, ...
    gpus       GPUs TensorFlow lists (JAX's where TensorFlow is absent): [{name, compute_capability: [major, minor] | None,
                memory_mib: int|None (nvidia-smi memory.total)}]
    driver     {gpus: [names from nvidia-smi, else /dev/nvidiaN], version: str|None}
    tpu        {hint: bool (engine.hardware.machine.tpu_hint), cores: int, error: str|None}
    peak       engine.hardware.matmul_peak.measure(): {backend, device ('CPU'|'GPU'), device_name, n,
                where, measured_at, seconds, dtypes: {float32|bfloat16|float16: {flops_per_sec,
                best_sec, calls} | {skipped} | {error}}} or None (the achievable FLOP/s for MFU)
    errors     [str]; probed_at: s since the epoch; probe_seconds: s

Verdict rules (the TF mixed precision guide,
https://www.tensorflow.org/guide/mixed_precision): float16 math runs on Tensor
Cores from compute capability 7.0 (Volta); bfloat16 Tensor Cores from 8.0
(Ampere); TPUs compute in bfloat16. On CPUs, bfloat16 is native with
avx512_bf16 (Cooper Lake, AMD Zen 4) or AMX (amx_bf16, Sapphire Rapids), per
Intel's oneDNN bf16 guide (https://www.intel.com/content/www/us/en/developer/
articles/guide/getting-started-with-automixedprecisionmkl.html); float16 on a
CPU is emulated (measured about 100x slower than float32 for a whole training
run on one of our CPUs). Spot check on a 2-core AMD EPYC with avx512_bf16 (no
AMX), TF 2.21: a 1024x1024 matmul took 19.3 ms in float32 vs 8.5 ms in bfloat16,
a 3x3 64-channel conv on 64x32x32 inputs 26.4 ms vs 12.2 ms.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Optional

OPTIONS = ("mixed_float16", "mixed_bfloat16", "xla", "multi_device", "tpu")
VERDICTS = ("faster", "slower", "neutral", "unavailable", "measure")
CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")
CPU_FP16_FLAGS = ("amx_fp16", "avx512_fp16")
TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tensorflow-macos",
                    "tf-nightly")


class ProbeError(RuntimeError):
    """The probe worker failed or timed out; the message ends with its stderr tail."""


# --- pure verdict logic ----------------------------------------------------

def _cc(gpu: dict) -> tuple[int, int]:
    cc = gpu.get("compute_capability")
    return tuple(int(x) for x in cc[:2]) if cc else (0, 0)


def _target(facts: dict, device: str) -> str:
    """'gpu', 'tpu' or 'cpu' as config's device_type resolves it ('auto': a GPU
    when TF lists one, else the CPU); 'none' when the asked-for device is absent."""
    gpus, cores = facts.get("gpus") or [], (facts.get("tpu") or {}).get("cores") or 0
    if device == "auto":
        return "gpu" if gpus else "cpu"
    if device == "gpu":
        return "gpu" if gpus else "none"
    if device == "tpu":
        return "tpu" if cores else "none"
    if device == "cpu":
        return "cpu"
    raise ValueError(f"device {device!r}: use auto, cpu, gpu or tpu")


def _v(option: str, verdict: str, reason: str) -> dict:
    return {"option": option, "verdict": verdict, "reason": reason}


def _gpu_precision(o: str, facts: dict, needed: tuple, fast: str, below: tuple) -> dict:
    """Verdict for a low precision on the weakest GPU: 'faster' at compute
    capability >= `needed` (Tensor Cores for it), else `below` = (verdict, reason)."""
    cc = min(_cc(g) for g in facts["gpus"])
    if cc == (0, 0):
        return _v(o, "measure", "GPU compute capability unknown: measure it")
    name = f"GPU compute capability {cc[0]}.{cc[1]}"
    if cc >= needed:
        return _v(o, "faster", f"{name} has {fast}")
    return _v(o, below[0], f"{name} < {needed[0]}.{needed[1]} {below[1]}")


def _float16(facts: dict, target: str) -> dict:
    o = "mixed_float16"
    if target == "gpu":
        return _gpu_precision(o, facts, (7, 0), "float16 Tensor Cores: expect faster (often 2-3x on "
                              "matmul-heavy models)", ("neutral", "has no Tensor Cores: saves memory, "
                                                       "little or no speedup"))
    if target == "tpu":
        return _v(o, "slower", "TPUs compute in bfloat16, not float16: use mixed_bfloat16")
    flags = set((facts.get("host") or {}).get("cpu_flags") or [])
    have = [f for f in CPU_FP16_FLAGS if f in flags]
    if have:
        return _v(o, "measure", f"this CPU has {have[0]}, but TF's float16 CPU kernels are "
                                "mostly emulated: measure it against float32")
    return _v(o, "slower", "no float16 hardware here (CPU): emulated, expect 10-100x slower")


def _bfloat16(facts: dict, target: str) -> dict:
    o = "mixed_bfloat16"
    if target == "gpu":
        return _gpu_precision(o, facts, (8, 0), "bfloat16 Tensor Cores: expect faster",
                              ("slower", "has no bfloat16 Tensor Cores: expect slower; use mixed_float16"))
    if target == "tpu":
        return _v(o, "faster", "TPUs compute natively in bfloat16: expect faster")
    flags = set((facts.get("host") or {}).get("cpu_flags") or [])
    have = [f for f in CPU_BF16_FLAGS if f in flags]
    if have:
        return _v(o, "faster", f"this CPU has native bf16 ({', '.join(have)}): expect faster")
    return _v(o, "slower", "this CPU has no native bf16 (avx512_bf16/amx_bf16): "
                           "emulated, expect slower")


def _xla(facts: dict, target: str) -> dict:
    o = "xla"
    if target == "gpu":
        return _v(o, "faster", "XLA fuses ops into fewer GPU kernels: usually faster after a "
                               "compile of seconds to minutes in the first epoch")
    if target == "tpu":
        return _v(o, "neutral", "TPU programs are always XLA-compiled: jit_compile changes nothing")
    return _v(o, "measure", "XLA on a CPU is mixed (sometimes faster, sometimes slower): "
                            "measure it")


def _multi(facts: dict, target: str) -> dict:
    o = "multi_device"
    if target == "gpu" and len(facts["gpus"]) > 1:
        n = len(facts["gpus"])
        return _v(o, "faster", f"{n} physical GPUs: real data parallelism (MirroredStrategy), "
                               "keep the per-GPU batch large")
    if target == "tpu":
        n = facts["tpu"]["cores"]
        if n > 1:
            return _v(o, "faster", f"{n} TPU cores: real data parallelism (TPUStrategy)")
    kind = {"gpu": "GPU", "tpu": "TPU core"}.get(target, "CPU")
    host = facts.get("host") or {}
    usable = host.get("usable_cpus") or host.get("logical_cores")
    cores = f" ({usable} usable core{'s' if usable != 1 else ''})" if kind == "CPU" and usable else ""
    return _v(o, "neutral", f"one physical {kind}{cores}: extra replicas are simulated logical devices "
                            "sharing it, no speedup expected")


def _tpu(facts: dict) -> dict:
    tpu = facts.get("tpu") or {}
    if tpu.get("cores"):
        return _v("tpu", "faster", f"{tpu['cores']} TPU cores found: use device_type tpu with "
                                   "mixed_bfloat16")
    if tpu.get("hint"):
        return _v("tpu", "unavailable", f"a TPU is hinted but TF could not reach it: "
                                        f"{tpu.get('error') or 'no cores reported'}")
    return _v("tpu", "unavailable", "no TPU on this machine")


def verdicts(facts: dict, device: str = "auto") -> list[dict]:
    """One verdict per option in OPTIONS for training on `device` (config's
    device_type: 'auto' means a TF-visible GPU if any, else the CPU).

    Returns: [{'option', 'verdict' (one of VERDICTS), 'reason' (one line)}].
    """
    target = _target(facts, device)
    if target == "none":
        why = f"no {device.upper()} visible to TensorFlow"
        out = [_v(o, "unavailable", why) for o in OPTIONS[:-1]]
    else:
        out = [_float16(facts, target), _bfloat16(facts, target), _xla(facts, target),
               _multi(facts, target)]
    return out + [_tpu(facts)]


# Record-setting techniques whose pay-off depends on the hardware (engine.training.techniques).
TECHNIQUE_OPTIONS = ("gradient_accumulation", "muon", "tta", "progressive_resizing")
SMALL_GPU_MIB = 16 * 1024  # below this a large-batch recipe often does not fit one step


def technique_verdicts(facts: dict, device: str = "auto") -> list[dict]:
    """One verdict per TECHNIQUE_OPTIONS for training on `device`: where the hardware decides
    whether a technique pays (gradient accumulation versus a larger batch on a small GPU,
    Muon's extra matmuls, TTA's extra inference, smaller images early on).

    Returns: [{'option', 'verdict' (one of VERDICTS), 'reason' (one line)}]."""
    target = _target(facts, device)
    if target == "none":
        return [_v(o, "unavailable", f"no {device.upper()} visible to TensorFlow") for o in TECHNIQUE_OPTIONS]
    mem = [g.get("memory_mib") for g in facts.get("gpus") or [] if g.get("memory_mib")]
    if target == "gpu" and mem and min(mem) < SMALL_GPU_MIB:
        acc = _v("gradient_accumulation", "faster", f"a GPU with {min(mem) / 1024:.0f} GiB: a large-batch recipe "
                 "may not fit one step; accumulating k batches gives its effective batch in the memory of one")
    else:
        where = f"a GPU with {min(mem) / 1024:.0f} GiB" if target == "gpu" and mem else f"this {target.upper()}"
        acc = _v("gradient_accumulation", "neutral", f"{where} fits large batches: a larger global batch does "
                 "the same in fewer, fuller steps; accumulate only where a batch does not fit")
    if target == "cpu":
        muon = _v("muon", "measure", "Newton-Schulz adds 5 small matmul rounds per weight matrix each step, a "
                  "visible share of a CPU step: its gain must come from needing fewer steps")
        tta = _v("tta", "measure", "each validation runs the model on 2-6 views: on a CPU that multiplies "
                 "validation time; worth it when it reaches the target epochs earlier")
        prog = _v("progressive_resizing", "faster", "a CPU step's convolution FLOPs fall with the square of the "
                  "image side: early epochs on smaller images are faster")
    else:
        muon = _v("muon", "measure", f"Newton-Schulz's extra matmuls are cheap next to a {target.upper()}'s "
                  "matmul rate; its gain is in convergence (airbench94_muon): measure it")
        tta = _v("tta", "neutral", "the views run as one larger batch: cheap where the device has spare "
                 "batch capacity")
        prog = _v("progressive_resizing", "measure", f"small images may leave a {target.upper()} under-used "
                  "(a fixed cost per step): measure the early epochs' samples/s")
    return [acc, muon, tta, prog]


# Our own measurement (docs/backends.md): the same CNN run on this project's 2-core CPU.
CPU_JAX_NOTE = ("on a CPU, JAX compiles the train step for much longer (13-15 s vs 3.5 s for TensorFlow "
                "on our 2-core CPU) and its steady speed depends on the model: measure it")


def backend_verdicts(facts: dict, device: str = "auto") -> list[dict]:
    """One verdict per Keras backend SpeedLab runs on ('tensorflow', 'jax') for training
    on `device`, from the probe's facts['backends'] (versions, devices) and GPUs.

    Returns: [{'backend', 'version' (str|None), 'devices': [str], 'verdict' (one of
    VERDICTS), 'reason' (one line)}]. Reference: the Keras team reports 20-350% from
    picking the fastest backend per model, often JAX on GPUs (keras.io/getting_started/benchmarks).
    """
    found = facts.get("backends") or {}
    sw = facts.get("software") or {}
    target = _target(facts, device)
    out = []
    tf = found.get("tensorflow") or {"version": sw.get("tensorflow"), "devices": []}
    if tf.get("version"):
        out.append({"backend": "tensorflow", "version": tf["version"], "devices": tf.get("devices") or [],
                    "verdict": "neutral", "reason": "the default backend: every technique, including "
                                                    "MirroredStrategy, TPUs and multi-worker runs"})
    else:
        out.append({"backend": "tensorflow", "version": None, "devices": [], "verdict": "unavailable",
                    "reason": "not installed: pip install -r requirements.txt (or use backend jax)"})
    jx = found.get("jax") or {}
    if not jx.get("version"):
        out.append({"backend": "jax", "version": None, "devices": [], "verdict": "unavailable",
                    "reason": 'not installed: pip install "jax==0.10.2" "jaxlib==0.10.2" (CPU), '
                              "or JAX with CUDA on a GPU machine (docs/backends.md)"})
        return out
    row = {"backend": "jax", "version": jx["version"], "devices": jx.get("devices") or []}
    if target == "tpu":
        row.update(verdict="unavailable", reason="SpeedLab runs TPUs through TPUStrategy: TensorFlow only")
    elif target in ("gpu", "none") and device != "cpu":
        if jx.get("platform") == "gpu":
            row.update(verdict="measure", reason=f"JAX sees {len(row['devices'])} GPU(s): often faster than "
                       "TensorFlow on GPUs (the Keras team reports 20-350% from the fastest backend); "
                       "measure it on your model")
        else:
            row.update(verdict="unavailable", reason="this JAX sees no GPU (CPU-only jaxlib): install JAX "
                       "with CUDA (docs/backends.md)")
    else:
        row.update(verdict="measure", reason=CPU_JAX_NOTE)
    out.append(row)
    return out


def gpu_diagnosis(facts: dict) -> Optional[str]:
    """A plain message with the fix when the driver shows a GPU (nvidia-smi or
    /dev/nvidia*) but TensorFlow lists none; None otherwise."""
    driver = (facts.get("driver") or {}).get("gpus") or []
    if not driver or facts.get("gpus"):
        return None
    names = ", ".join(sorted(set(driver)))
    tf_ver = (facts.get("software") or {}).get("tensorflow") or "2.21.0"
    if (facts.get("host") or {}).get("os") == "Windows":
        return (f"The driver shows {names} but TensorFlow lists no GPU: TensorFlow has no GPU "
                "support on native Windows after 2.10; run SpeedLab under WSL2 and there "
                f'pip install "tensorflow[and-cuda]=={tf_ver}"')
    build = facts.get("build") or {}
    why = ("this TensorFlow is a CPU-only build" if build.get("is_cuda_build") is False
           else "TensorFlow could not load the CUDA/cuDNN libraries")
    return (f"The driver shows {names} but TensorFlow lists no GPU ({why}). Fix: "
            f'pip install "tensorflow[and-cuda]=={tf_ver}" in this environment, then '
            "re-run the hardware check with --refresh")


# --- probing (child process) and cache --------------------------------------

def tf_version() -> str:
    """Installed TensorFlow version from package metadata (does not import TF)."""
    for dist in TF_DISTRIBUTIONS:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"


def cache_path() -> Path:
    from engine.store import home
    return home() / "hardware.json"


def cache_key() -> str:
    """Host, machine fingerprint and installed backends: installing JAX (or CUDA builds) re-probes,
    and so does another CPU behind the same hostname (engine.hardware.fingerprint)."""
    from engine.hardware.fingerprint import here_id
    from engine.hardware.machine import installed_backends

    b = installed_backends()
    return f"{socket.gethostname()}|{here_id()}|tensorflow-{tf_version()}" + (f"|jax-{b['jax']}" if b.get("jax") else "")


def run_probe(timeout_s: float = 60) -> dict:
    """Run the probe worker; return its facts. Raises ProbeError."""
    from engine.base.process import ROOT, worker_env
    cmd = [sys.executable, "-m", "engine.hardware.probe"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                             env=worker_env(), cwd=str(ROOT))
    except subprocess.TimeoutExpired as e:
        raise ProbeError(f"hardware probe took longer than {timeout_s} s") from e
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    try:
        if out.returncode != 0 or not lines:
            raise ValueError(f"exit code {out.returncode}")
        return json.loads(lines[-1])
    except ValueError as e:
        tail = "\n".join(out.stderr.strip().splitlines()[-10:])
        raise ProbeError(f"hardware probe failed ({e}); stderr tail:\n{tail}") from None


def _load_cache(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _stale(facts: dict) -> bool:
    """A cached entry is re-probed while its GPU diagnosis stands (the fix keeps
    the TF version) or when the driver's GPU list changed since."""
    from engine.hardware.machine import nvidia_gpus
    return gpu_diagnosis(facts) is not None or (facts.get("driver") or {}).get("gpus") != nvidia_gpus() \
        or ("peak" in facts and "theoretical" not in facts)  # probed before the theoretical peak was kept


def cached_facts() -> Optional[dict]:
    """This machine's cached probe facts, or None; never starts the probe (the
    dashboard calls this on every rerun)."""
    return _load_cache(cache_path()).get(cache_key())


def probe(timeout_s: float = 60, refresh: bool = False) -> dict:
    """Facts for this machine, from the cache or a fresh probe worker.

    Returns: {'facts', 'verdicts', 'backends' (backend_verdicts), 'diagnosis' (str|None),
    'cached' (bool), 'key'}.
    Raises: ProbeError when a fresh probe fails or exceeds `timeout_s` seconds.
    """
    path, key = cache_path(), cache_key()
    cache = _load_cache(path)
    facts = None if refresh else cache.get(key)
    cached = facts is not None and not _stale(facts)
    if not cached:
        facts = run_probe(timeout_s)
        cache = _load_cache(path)
        cache[key] = facts
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
        os.replace(tmp, path)
    return {"facts": facts, "verdicts": verdicts(facts), "backends": backend_verdicts(facts),
            "diagnosis": gpu_diagnosis(facts),
            "cached": cached, "key": key}
