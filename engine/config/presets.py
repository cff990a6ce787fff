"""Hand-made presets: per bundled data set, a configuration that reaches the data
set's default target sooner than the baseline (RunConfig's defaults), for demos and
benchmarks. No TF here.

Each preset combines techniques SpeedLab measures: a larger global batch with the
linear scaling rule (Goyal et al. 2017, arXiv:1706.02677), a one-cycle schedule
(Smith & Topin 2018, arXiv:1708.07120), label smoothing (Szegedy et al. 2016),
bfloat16 mixed precision and several steps per execution. The figures behind each
are in docs/datasets.md.
"""
from __future__ import annotations


from engine.config import RunConfig
from engine.store import tuned_baselines

# digits: benchmarks/time_to_accuracy.py's hand-made configuration (kept there as PRESET).
PRESETS = {
    "digits": dict(model="cnn", batch_size=256, epochs=10, learning_rate=1e-3, scale_lr=True,
                   reference_batch_size=128, schedule="one_cycle", max_lr=0.005, label_smoothing=0.1,
                   precision="mixed_bfloat16", steps_per_execution=2),
    # mnist5k: the default global batch (128), so that its like-for-like baseline
    # (engine.config.baseline_config) is RunConfig's defaults on mnist5k.
    "mnist5k": dict(model="cnn", batch_size=128, epochs=10, learning_rate=1e-3, schedule="one_cycle",
                    max_lr=0.005, label_smoothing=0.1, precision="mixed_bfloat16", steps_per_execution=4),
}


def preset(dataset: str, **overrides) -> RunConfig:
    """The hand-made preset RunConfig for bundled data set `dataset` ('digits' or 'mnist5k'),
    with `overrides` (e.g. seed=1). Raises KeyError for another data set;
    ConfigError as RunConfig."""
    return RunConfig(**{**PRESETS[dataset], "dataset": dataset, **overrides})


# The autopilot's recorded winners (engine.autopilot): the configuration each search ended on,
# as benchmarks/results says, with the confirmed speedup it had there and the machine it was
# measured on (its fingerprint {id, name}; None: recorded before fingerprints, machine not recorded).
AUTOPILOT_WINNERS = {
    # 2026-12-02, invocation 8 (benchmarks/results/2026-12-02-autopilot.md): 1.90x (1.56-1.93x) to 0.95.
    "digits": (dict(model="cnn", batch_size=256, epochs=10, learning_rate=1e-3, scale_lr=True,
                    reference_batch_size=128, schedule="one_cycle", max_lr=0.0071, label_smoothing=0.1,
                    precision="mixed_bfloat16", fused_optimizer=True),
               "recorded 2026-12-02: bf16 · batch 256, scaled LR · one-cycle to 0.0071 · smoothing 0.1 · fused Adam",
               "1.90x [1.56-1.93] to 0.95", None),
    # 2026-12-03 (benchmarks/results/2026-12-03-autopilot-mnist5k.md): 4.51x [3.67-5.54] to 0.965.
    "mnist5k": (dict(model="cnn", batch_size=128, epochs=3, learning_rate=1e-3, schedule="one_cycle", max_lr=0.013,
                     label_smoothing=0.1, precision="mixed_bfloat16", steps_per_execution=8, fused_optimizer=True),
                "recorded 2026-12-03: bf16 · 8 steps/execution · one-cycle to 0.013 over 3 epochs · smoothing 0.1 · "
                "fused Adam", "4.51x [3.67-5.54] to 0.965 (missed it on 1 seed of 5)", None),
}
HAND_MADE_MACHINE = None  # the hand-made presets' figures (docs/datasets.md) predate fingerprints


def _where(fp: dict | None, here: str) -> tuple[str, bool]:
    """(the machine's name or 'machine not recorded', whether it is another machine than `here`)."""
    if fp and fp.get("id"):
        return fp.get("name") or fp["id"], fp["id"] != here
    return "machine not recorded", True


def menu(dataset: str, tuned: dict | None = None, here: str | None = None, machine: dict | None = None,
         probe: dict | None = None) -> list[dict]:
    """The presets the Train page offers for bundled data set `dataset`, each
    {'name', 'line' (one line: what it is, and where it was measured), 'settings' (RunConfig fields
    that differ from RunConfig's defaults, 'dataset' included) or None when not available yet,
    'missing' (why), 'machine' (the name of the machine its figure was measured on, 'machine not
    recorded', or None for the baseline, which is no measurement), 'elsewhere' (measured on
    another machine than `here`, this machine's fingerprint id: its line says 'measured elsewhere:
    check it here' instead of its figure), 'slow' (engine.config.preflight.slow_precision's one line
    when its precision is one this CPU emulates, from `machine` = quick_facts() and `probe`, else None)}:
    the baseline (RunConfig's defaults), the tuned baseline (its schedule, peak learning rate and
    label smoothing from `python -m engine tune-baseline`: `tuned`, the engine.store.tuned_baselines
    row, None when not stored),
    the hand-made preset (PRESETS) and the autopilot's recorded winner (AUTOPILOT_WINNERS).
    [] for a data set with no presets."""
    if dataset not in PRESETS:
        return []
    from engine.config.preflight import slow_precision
    from engine.hardware.fingerprint import here_id

    here = here or here_id()
    defaults = RunConfig(dataset=dataset).to_dict()

    def diff(cfg: RunConfig) -> dict:
        return {"dataset": dataset, **{k: v for k, v in cfg.to_dict().items() if v != defaults.get(k)}}

    def elsewhere(fp) -> str:
        name, other = _where(fp, here)
        return f"; measured elsewhere ({name}): check it here" if other else f"; measured on this machine ({name})"

    winner, winner_line, winner_figure, winner_fp = AUTOPILOT_WINNERS.get(dataset, (None, "", "", None))
    tuned_fp = (tuned or {}).get("fingerprint") or ((tuned or {}).get("result") or {}).get("fingerprint")
    out = [{"name": "Baseline", "line": "float32, 1 device, Adam 1e-3, constant LR: what every speedup is measured "
                                        "against", "settings": diff(RunConfig(dataset=dataset)), "missing": None,
            "machine": None, "elsewhere": False},
           {"name": "Tuned baseline",
            "line": (f"the baseline at its tuned {tuned_baselines.describe(tuned)} (tune-baseline)" + elsewhere(tuned_fp)
                     if tuned else "the baseline with a tuned schedule and learning rate: store one with python -m "
                     f"engine tune-baseline --dataset {dataset}"),
            "settings": diff(RunConfig(dataset=dataset, **tuned_baselines.config_fields(tuned))) if tuned else None,
            "missing": None if tuned else "no tuned baseline stored on this machine yet",
            "machine": _where(tuned_fp, here)[0] if tuned else None, "elsewhere": bool(tuned) and _where(tuned_fp, here)[1]},
           {"name": "Hand-made preset", "line": "bf16 · one-cycle · label smoothing · steps per execution "
                                                 "(docs/datasets.md)" + elsewhere(HAND_MADE_MACHINE),
            "settings": diff(preset(dataset)), "missing": None,
            "machine": _where(HAND_MADE_MACHINE, here)[0], "elsewhere": _where(HAND_MADE_MACHINE, here)[1]}]
    if winner:
        name, other = _where(winner_fp, here)
        out.append({"name": "Autopilot winner",
                    "line": winner_line + (elsewhere(winner_fp) if other else f"; {winner_figure} on this machine"),
                    "settings": diff(RunConfig(dataset=dataset, **winner)), "missing": None,
                    "machine": name, "elsewhere": other})
    for p in out:
        p["slow"] = slow_precision(RunConfig(**p["settings"]), machine, probe) if p["settings"] else None
    return out
