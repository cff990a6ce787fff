"""Train page: the sidebar's values checked by the engine (one line naming the
field), and the cached hardware check's verdict beside precision, devices and XLA.
"""
from __future__ import annotations

from engine.config import ConfigError, RunConfig
from engine.hardware import verdicts as hardware
from engine.config.preflight import check_runnable

DEFAULTS = RunConfig()
OPTIONAL = ("target_accuracy", "max_lr", "init_from")  # None means "not set" for these fields
BACKEND_LABELS = {"tensorflow": "TensorFlow", "jax": "JAX"}
VERDICT_COLORS = {"faster": "green", "slower": "red", "neutral": "gray", "unavailable": "violet",
                  "measure": "orange"}


def validate(values: dict) -> tuple:
    """(config or None, the engine's one-line error or None, the field it is
    about, warnings). Never raises: no traceback may reach the page."""
    for k, v in values.items():
        if v is None and k not in OPTIONAL:
            return None, f"{k}: the box is empty; enter a value (default {getattr(DEFAULTS, k)})", k, []
    try:
        cfg = RunConfig.from_dict(values)
        return cfg, None, None, check_runnable(cfg)
    except ConfigError as e:
        return None, str(e), e.field, []
    except Exception as e:  # noqa: BLE001 - e.g. an empty number box: one line, not a traceback
        return None, f"{type(e).__name__}: {e}", None, []


def warning_field(line: str) -> str:
    """Which control a check_runnable warning is about."""
    if line.startswith("dataset:"):
        return "dataset"
    if "image_size" in line:
        return "image_size"
    return "devices" if "replica" in line else "precision" if "float16" in line else "device_type"


def cached_facts() -> dict | None:
    """The cached hardware check, or None (probing starts TF: not done here)."""
    try:
        return hardware.cached_facts()
    except Exception:  # noqa: BLE001 - an unreadable cache is "no check yet"
        return None


def hardware_hints(cfg: RunConfig) -> dict:
    """{field: one-line hint with a coloured verdict} from the cached hardware
    check (engine.hardware.verdicts), for precision, devices and XLA; empty when no
    check has been run yet (the sidebar then links to the Hardware page)."""
    facts = cached_facts()
    if not facts:
        return {}
    try:
        by = {v["option"]: v for v in hardware.verdicts(facts, cfg.device_type)}

        def line(option: str) -> str:
            v = by[option]
            return f":{VERDICT_COLORS.get(v['verdict'], 'gray')}-badge[{v['verdict']}] {v['reason']}"

        hints = {"jit_compile": line("xla"), "devices": line("multi_device")}
        b = next((v for v in hardware.backend_verdicts(facts, cfg.device_type) if v["backend"] == cfg.backend),
                 None)
        if b is not None:
            hints["backend"] = (f":{VERDICT_COLORS.get(b['verdict'], 'gray')}-badge[{b['verdict']}] "
                                f"{BACKEND_LABELS[b['backend']]} {b['version'] or ''}: {b['reason']}")
        if cfg.backend == "jax":
            hints.pop("jit_compile")
        if cfg.precision != "float32":
            hints["precision"] = line(cfg.precision)
        else:
            better = [o for o in ("mixed_bfloat16", "mixed_float16") if by[o]["verdict"] == "faster"]
            hints["precision"] = (f":green-badge[tip] {better[0]} should be faster here: "
                                  f"{by[better[0]]['reason']}" if better else
                                  "float32: the baseline precision; no low-precision hardware judged "
                                  "faster here")
        return hints
    except Exception:  # noqa: BLE001 - a stale or partial cache only costs the hints
        return {}
