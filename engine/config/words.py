"""A configuration in words: the one vocabulary of every label, table, line and chart.

Each setting has a short form (chart legends, tables, progress lines: 'mixed bf16',
'spe 8', 'EMA 0.99', 'accumulate 2 (effective batch 256)') and a long form (the CLI's
summary, the autopilot's explanation: 'bfloat16', '8 steps per execution',
'weight EMA 0.99 (validated on the averaged weights)', 'gradient accumulation 2
(effective batch 256)'). Callers pass a stored config dict (`RunConfig.to_dict()`);
a setting that is off has no words (None), so callers add only what is on.
"""
from __future__ import annotations

from typing import Mapping, Optional

# precision: (short, long)
_PRECISION = {"float32": ("fp32", "float32"), "mixed_float16": ("mixed fp16", "float16"),
              "mixed_bfloat16": ("mixed bf16", "bfloat16")}
PRECISION_SHORT = {k: short for k, (short, _) in _PRECISION.items()}
_OPTIMIZERS = {"muon": "Muon", "schedule_free_adamw": "schedule-free AdamW", "lamb": "LAMB"}
# The record-setting techniques (engine.training.techniques), in the order every line names them.
TECHNIQUES = ("optimizer", "ema", "cutmix", "gradient_accumulation", "tta", "progressive_resizing")


def precision(value: str, long: bool = False) -> str:
    """'mixed bf16' (short) or 'bfloat16' (long); an unknown value as it is."""
    pair = _PRECISION.get(value)
    return str(value) if pair is None else pair[long]


def devices(n: int, simulated: bool = False) -> str:
    """'1 device', '2 devices (simulated)'."""
    return f"{n} device" + ("s" if n != 1 else "") + (" (simulated)" if simulated else "")


def steps_per_execution(n: int, long: bool = False) -> str:
    """'spe 8' (short) or '8 steps per execution' (long)."""
    return f"{n} steps per execution" if long else f"spe {n}"


def technique(name: str, cfg: Mapping, long: bool = False) -> Optional[str]:
    """Technique `name` (one of TECHNIQUES) as set in `cfg`, or None when it is off
    (for 'optimizer': when the optimizer is not one of the techniques' own).
    Raises ValueError for a name not in TECHNIQUES."""
    if name == "optimizer":
        opt = cfg.get("optimizer")
        if opt not in _OPTIMIZERS:
            return None
        if long and opt == "muon":
            return ("Muon (conv filters reshaped to 2-D)" if cfg.get("muon_conv", "reshape") == "reshape"
                    else "Muon (conv kernels get AdamW, as Keras ships it)")
        return _OPTIMIZERS[opt]
    if name == "ema":
        m = cfg.get("ema_momentum")
        return (f"weight EMA {m:g} (validated on the averaged weights)" if long else f"EMA {m:g}") if m else None
    if name == "cutmix":
        return f"CutMix {cfg['cutmix_factor']:g}" if cfg.get("cutmix_factor") else None
    if name == "gradient_accumulation":
        k = cfg.get("gradient_accumulation_steps") or 1
        if k <= 1:
            return None
        return f"{'gradient accumulation' if long else 'accumulate'} {k} (effective batch {cfg.get('batch_size', 0) * k})"
    if name == "tta":
        mode = cfg.get("tta", "off")
        if mode == "off":
            return None
        return ("test-time augmentation: " if long else "TTA ") + mode.replace("_", " + ")
    if name == "progressive_resizing":
        n = cfg.get("progressive_epochs")
        if not n:
            return None
        scale = cfg.get("progressive_scale", 0.75)
        if long:
            return f"progressive resizing: {n} epoch{'s' if n != 1 else ''} at {scale:g}x the side"
        return f"progressive {n} ep at {scale:g}x"
    raise ValueError(f"technique {name!r}: use one of {', '.join(TECHNIQUES)}")


def techniques(cfg: Mapping, long: bool = False) -> list[str]:
    """The words of every technique `cfg` has on, in TECHNIQUES order ([] when none)."""
    return [w for w in (technique(t, cfg, long) for t in TECHNIQUES) if w]


def bench_cell(cell: Mapping) -> str:
    """A benchmark cell, short: 'mixed bf16 · spe 8 · XLA on · 1 device'; JAX cells start
    with 'JAX · ' and leave out XLA (JAX always compiles with it)."""
    # int(): a cell read back from a DataFrame row holds NumPy numbers
    head = f"{precision(cell['precision'])} · {steps_per_execution(int(cell['steps_per_execution']))}"
    dev = devices(int(cell["devices"]), bool(cell.get("simulated")))
    if cell.get("backend", "tensorflow") == "jax":
        return f"JAX · {head} · {dev}"
    return f"{head} · XLA {'on' if cell['jit_compile'] else 'off'} · {dev}"
