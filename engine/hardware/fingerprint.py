"""This machine's fingerprint: which hardware and software a number was measured on (no TF).

The machines this project runs on change CPU from day to day while all of them report the
hostname ``vm`` (and a Zen 3 and a Zen 4 both say ``AMD EPYC``), and bf16 is ~35x slower than
float32 on the one and 1.8x faster on the other; so a stored figure is matched to "this
machine" by the fingerprint's `id`, never by the hostname (docs/machines.md).

`compute` builds it from facts it is given (tests pass /proc/cpuinfo text and the rest);
`fingerprint` is this process's, computed once (cached) from /proc/cpuinfo,
engine.hardware.machine and package metadata: cheap, it measures nothing (the clock is
added by engine.hardware.peak_store.fingerprint_with_clock where it already holds one).

The `id` is 12 hex digits of sha256 over the parts that change how fast a run trains, and
nothing else: CPU vendor, family, model and stepping (the microarchitecture: Zen 3 and Zen 4
share a model name), the speed flags present (SPEED_FLAGS: whether bf16 is native, AVX-512,
AMX), the usable cores (a quota of 1 CPU halves a 2-core machine), each accelerator's name
and count, and the backends' major.minor versions (a new TensorFlow or JAX changes kernels;
a patch release rarely does). Memory, the hostname, the clock and patch versions are shown
but not hashed: they vary without changing the machine (a hostname) or are measured.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from typing import Optional

# ISA features that change training speed (x86 and ARM), in the order they are listed.
SPEED_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile",
               "asimd", "sve")
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
UNKNOWN = "machine unknown"  # the label of a figure stored before fingerprints
# The setting that lets runs stored before fingerprints (no id) count as this machine's.
UNKNOWN_SETTING = "SPEEDLAB_USE_UNKNOWN_MACHINE"


def _arch(vendor: str, family: Optional[int], model: Optional[int]) -> Optional[str]:
    """The microarchitecture of a known (vendor, family, model), else None: AMD from its
    family and model ranges, Intel server parts of family 6 by model."""
    if family is None or model is None:
        return None
    if vendor == "AuthenticAMD":
        if family == 23:
            return "Zen/Zen 2"
        if family == 25:
            if model <= 0x0F or 0x20 <= model <= 0x5F:
                return "Zen 3"
            if 0x10 <= model <= 0x1F or 0x60 <= model <= 0xAF:
                return "Zen 4"
        if family == 26:
            return "Zen 5"
        return None
    if vendor == "GenuineIntel" and family == 6:
        return {85: "Skylake-SP/Cascade Lake", 106: "Ice Lake-SP", 108: "Ice Lake-SP",
                143: "Sapphire Rapids", 207: "Emerald Rapids", 173: "Granite Rapids",
                174: "Granite Rapids"}.get(model)
    return None


def parse_cpuinfo(text: str) -> dict:
    """The first processor's {'vendor', 'family', 'model', 'stepping' (ints or None),
    'model_name', 'flags' (set)} from /proc/cpuinfo text (ARM: 'Features', 'CPU implementer')."""
    out = {"vendor": "", "family": None, "model": None, "stepping": None, "model_name": "", "flags": set()}
    ints = {"cpu family": "family", "model": "model", "stepping": "stepping"}
    for line in text.splitlines():
        if not line.strip():
            if out["vendor"] or out["flags"]:
                break  # the first processor's block is enough
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in ("vendor_id", "CPU implementer") and not out["vendor"]:
            out["vendor"] = value
        elif key in ints:
            try:
                out[ints[key]] = int(value, 0)
            except ValueError:
                pass
        elif key == "model name":
            out["model_name"] = value
        elif key in ("flags", "Features"):
            out["flags"] = set(value.split())
    return out


def read_cpuinfo(source: str = "/proc/cpuinfo") -> str:
    """/proc/cpuinfo's text ('' where it does not exist); `source` may be another path."""
    try:
        with open(source) as f:
            return f.read()
    except OSError:
        return ""


def _short_model(name: str) -> str:
    """'Intel(R) Xeon(R) Processor' -> 'Intel Xeon'; 'AMD EPYC 7B13' stays."""
    for junk in ("(R)", "(r)", "(TM)", "(tm)", " Processor", " CPU"):
        name = name.replace(junk, "")
    return " ".join(name.split("@")[0].split()) or "unknown CPU"


def _isa(flags: set) -> str:
    if {"amx_tile", "amx_bf16"} & flags:
        return "AVX-512+AMX"
    if "avx512f" in flags:
        return "AVX-512"
    if {"avx2", "fma"} <= flags:
        return "AVX2+FMA"
    if "avx2" in flags:
        return "AVX2"
    if "sve" in flags:
        return "SVE"
    if "asimd" in flags:
        return "NEON"
    return "no AVX2"


def _major_minor(version: Optional[str]) -> Optional[str]:
    return ".".join(version.split(".")[:2]) if version else None


def compute(cpuinfo: str, usable_cpus: int, logical_cores: Optional[int] = None,
            physical_cores: Optional[int] = None, memory_gib: Optional[float] = None,
            gpu_names: tuple = (), tpu: bool = False, backends: Optional[dict] = None,
            onednn: Optional[str] = None, flags: Optional[set] = None) -> dict:
    """The fingerprint of a machine described by its /proc/cpuinfo text and facts (`flags`
    overrides cpuinfo's flags). Returns {'id', 'name', 'cpu': {vendor, family, model,
    stepping, model_name, arch, flags}, 'usable_cpus', 'logical_cores', 'physical_cores',
    'memory_gib', 'accelerators': [{name, count}], 'tpu', 'backends': {tensorflow, jax,
    jaxlib, keras}, 'onednn'} (see the module docstring for what the id hashes)."""
    c = parse_cpuinfo(cpuinfo)
    have = sorted((c["flags"] if flags is None else set(flags)) & set(SPEED_FLAGS), key=SPEED_FLAGS.index)
    arch = _arch(c["vendor"], c["family"], c["model"])
    counts: dict = {}
    for g in gpu_names:
        counts[g] = counts.get(g, 0) + 1
    accel = [{"name": k, "count": v} for k, v in sorted(counts.items())]
    backends = {k: (backends or {}).get(k) for k in ("tensorflow", "jax", "jaxlib", "keras")}
    hashed = {"vendor": c["vendor"], "family": c["family"], "model": c["model"], "stepping": c["stepping"],
              "flags": have, "usable_cpus": usable_cpus, "accelerators": accel, "tpu": bool(tpu),
              "backends": {k: _major_minor(v) for k, v in backends.items()}}
    fid = hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()[:12]
    where = f"family {c['family']} model {c['model']}" if c["family"] is not None else "family unknown"
    words = [_short_model(c["model_name"] or c["vendor"])] + ([arch] if arch else [])
    name = (f"{' '.join(words)} ({where}), {_isa(set(have))}, "
            f"{'bf16' if set(have) & set(BF16_FLAGS) else 'no bf16'}, {usable_cpus} core{'s' if usable_cpus != 1 else ''}")
    name += "".join(f", {a['count']}x {a['name']}" for a in accel) + (", TPU" if tpu else "")
    return {"id": fid, "name": name,
            "cpu": {"vendor": c["vendor"], "family": c["family"], "model": c["model"], "stepping": c["stepping"],
                    "model_name": c["model_name"], "arch": arch, "flags": have},
            "usable_cpus": usable_cpus, "logical_cores": logical_cores, "physical_cores": physical_cores,
            "memory_gib": memory_gib, "accelerators": accel, "tpu": bool(tpu), "backends": backends,
            "onednn": onednn}


def _keras_version() -> Optional[str]:
    from importlib import metadata

    try:
        return metadata.version("keras")
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def fingerprint() -> dict:
    """This process's fingerprint (`compute` over /proc/cpuinfo, engine.hardware.machine's
    flags, cores, GPUs and TPU hint, psutil's memory and package versions); computed once."""
    import psutil

    from engine.hardware import machine

    cores = machine.cpu_facts()
    return compute(read_cpuinfo(), cores["usable_cpus"], logical_cores=cores["logical_cores"],
                   physical_cores=psutil.cpu_count(logical=False),
                   memory_gib=round(psutil.virtual_memory().total / 2**30, 1),
                   gpu_names=tuple(machine.nvidia_gpus()), tpu=machine.tpu_hint(),
                   backends={**machine.installed_backends(), "keras": _keras_version()},
                   onednn=os.environ.get("TF_ENABLE_ONEDNN_OPTS"), flags=machine.cpu_flags())


def here_id() -> str:
    """This machine's fingerprint id."""
    return fingerprint()["id"]


def short(fp: Optional[dict] = None) -> dict:
    """{'id', 'name'} of `fp` (default this machine's): what comparisons and records keep."""
    fp = fp or fingerprint()
    return {"id": fp.get("id"), "name": fp.get("name")}


def of(environment: Optional[dict]) -> Optional[dict]:
    """The fingerprint a run's environment (or a row's settings / result) carries, or None."""
    fp = (environment or {}).get("fingerprint")
    return fp if isinstance(fp, dict) and fp.get("id") else None


def name_of(environment: Optional[dict]) -> str:
    """The machine's name a run's environment carries, or UNKNOWN."""
    fp = of(environment)
    return fp.get("name") or fp["id"] if fp else UNKNOWN


def use_unknown() -> bool:
    """Whether figures stored before fingerprints may count as this machine's: the setting
    SPEEDLAB_USE_UNKNOWN_MACHINE=1 (the CLI's --use-unknown-machine sets it)."""
    return os.environ.get(UNKNOWN_SETTING, "").strip().lower() in ("1", "true", "yes", "on")


def matches(stored: Optional[dict], hostname: Optional[str] = None, here: Optional[str] = None,
            unknown: Optional[bool] = None) -> bool:
    """Whether something stored with fingerprint `stored` ({'id', ...} or None) and
    `hostname` counts as measured on this machine (`here`, default `here_id()`): the same id;
    one stored before fingerprints only when `unknown` (default `use_unknown()`) and its
    hostname is this one's."""
    if stored and stored.get("id"):
        return stored["id"] == (here or here_id())
    if not (use_unknown() if unknown is None else unknown):
        return False
    return hostname is None or hostname == os.uname().nodename


def two_machines(env_a: Optional[dict], env_b: Optional[dict]) -> Optional[str]:
    """'measured on two machines: <name A> vs <name B>' when two runs' environments carry
    different fingerprints (or one has none and old runs are not opted in, `use_unknown`);
    None when they are one machine's (or both predate fingerprints: nothing to tell apart)."""
    a, b = of(env_a), of(env_b)
    if a is None and b is None:
        return None
    if a and b and a["id"] == b["id"]:
        return None
    if (a is None or b is None) and use_unknown():
        return None
    return f"measured on two machines: {name_of(env_a)} vs {name_of(env_b)}"


OVERLAP_MIN_S = 0.5  # shorter overlaps are clock granularity between two processes' stamps


def overlap(a: dict, b: dict, now: Optional[float] = None) -> Optional[str]:
    """'these runs overlapped for N s on this machine: their times are not independent' when
    two stored runs (rows with 'started' and 'ended', Unix s, and 'environment') trained at the
    same time on one machine, else None. One machine: the same fingerprint id (a run stored
    before fingerprints cannot be placed, so None; never the hostname: ours all say `vm`). A run
    still running (no 'ended') counts to `now` (Unix s, default the clock). N is whole seconds;
    an overlap under OVERLAP_MIN_S is none. Every comparison of two runs asks this
    (engine.report.pair.compare)."""
    fa, fb = of(a.get("environment")), of(b.get("environment"))
    if not (fa and fb and fa["id"] == fb["id"]) or (a.get("id") is not None and a.get("id") == b.get("id")):
        return None
    spans = []
    for run in (a, b):
        start, end = run.get("started"), run.get("ended")
        if not isinstance(start, (int, float)):
            return None  # never started (queued, or cancelled before it ran)
        spans.append((float(start), float(end) if isinstance(end, (int, float)) else
                      (time.time() if now is None else float(now))))
    sec = min(spans[0][1], spans[1][1]) - max(spans[0][0], spans[1][0])
    if sec < OVERLAP_MIN_S:
        return None
    return f"these runs overlapped for {max(1, round(sec)):,} s on this machine: their times are not independent"


def row_here(row: dict) -> bool:
    """Whether a stored row (a tuned baseline: its 'fingerprint' or result's; a comparison:
    its settings'; a run: its environment's) was measured on this machine (`matches`, with the
    row's 'hostname' for one stored before fingerprints)."""
    fp = of(row) or of(row.get("settings")) or of(row.get("result")) or of(row.get("environment"))
    return matches(fp, row.get("hostname") or (row.get("environment") or {}).get("hostname"))


def record_line(fp: Optional[dict] = None) -> str:
    """The line a benchmark record starts with, after its title: 'Machine: <name> · fingerprint
    <id>' of `fp` (default this machine's); docs/machines.md."""
    fp = fp or fingerprint()
    return f"Machine: {fp['name']} · fingerprint {fp['id']}"
