"""The autopilot's search space and configurations: pure functions, no TF, no processes.

What is searched comes from the hardware verdicts (engine.hardware.verdicts): a
precision is tried only where its verdict is 'faster' or 'measure', XLA unless
it is 'neutral' (TPUs compile everything anyway), several devices only where
they are real ('faster': several GPUs or TPU cores). The global batch size moves
with the linear scaling rule (Goyal et al. 2017, "Accurate, Large Minibatch SGD",
arXiv:1706.02677: lr x batch / reference batch), with an optional linear warmup
for batches above the base; the schedule is constant or one-cycle (Smith & Topin
2018, arXiv:1708.07120) with its maximum LR from the LR range test.

The fused optimizer update (engine.training.fused_optimizer) is searched where
the optimizer has a fused kernel (Adam, SGD), on TensorFlow trials only.

The Keras backend is searched where several are installed and usable
(engine.hardware.verdicts.backend_verdicts: 'faster' or 'measure'); JAX always
compiles with XLA, so on a JAX trial XLA is part of the backend, not a technique
of its own.

The techniques of today's fast-training records (engine.training.techniques) are searched
too: the optimizer (the base's, Muon, LAMB, schedule-free AdamW: the last without a
schedule), weight EMA, CutMix, gradient accumulation, test-time augmentation (flips only
where the data set allows them) and, for models that pool globally, progressive resizing.

A *technique* is one of TECHNIQUES; each owns the RunConfig fields in
TECHNIQUE_FIELDS. The leave-one-out ablation switches one technique at a time
back to the baseline's values of exactly those fields.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from engine.config import FUSED_OPTIMIZERS, NO_FLIP_DATASETS, PROGRESSIVE_MODELS, RunConfig, nearest_divisible, words
from engine.base.errors import ConfigError
from engine.hardware.verdicts import backend_verdicts

SPE_CHOICES = (1, 2, 4, 8, 16)
BATCH_FACTORS = (0.5, 1, 2, 4)           # x the base global batch
LABEL_SMOOTHING_CHOICES = (0.0, 0.1)
WARMUP_CHOICES = (0.0, 1.0)               # epochs, only for batches above the base (constant schedule)
# One-cycle length as a share of the epoch cap. The short ones are for targets a few epochs
# away (digits reaches 0.95 in 2-3 epochs at a high peak LR); a target reached mid-cycle
# is reached at a lower LR than the peak, so a cycle as long as the cap rarely wins.
CYCLE_FRACTIONS = (0.1, 0.15, 0.25, 0.5, 1.0)
LOW_PRECISIONS = ("mixed_bfloat16", "mixed_float16")
# Optimizers tried besides the base's (engine.training.techniques.NEW_OPTIMIZERS).
OTHER_OPTIMIZERS = ("muon", "lamb", "schedule_free_adamw")
# Weight EMA: a short horizon (~10 updates), since a target is often a couple of epochs away.
EMA_CHOICES = (0.0, 0.9)
CUTMIX_CHOICES = (0.0, 1.0)
ACCUMULATION_CHOICES = (1, 2)
PROGRESSIVE_CHOICES = (0, 1)             # epochs at the smaller size (progressive_scale's default)

TECHNIQUES = ("backend", "precision", "steps_per_execution", "batch", "schedule", "label_smoothing",
              "jit_compile", "fused_optimizer", "devices", "optimizer", "ema", "cutmix",
              "gradient_accumulation", "tta", "progressive_resizing")
TECHNIQUE_FIELDS = {
    "backend": ("backend", "jit_compile"),   # JAX runs always compile with XLA
    "precision": ("precision",),
    "steps_per_execution": ("steps_per_execution",),
    "batch": ("batch_size", "scale_lr", "reference_batch_size", "warmup_epochs"),
    "schedule": ("schedule", "max_lr", "epochs"),
    "label_smoothing": ("label_smoothing",),
    "jit_compile": ("jit_compile",),
    "fused_optimizer": ("fused_optimizer",),
    "devices": ("devices",),
    "optimizer": ("optimizer", "muon_conv"),
    "ema": ("ema_momentum",),
    "cutmix": ("cutmix_factor",),
    "gradient_accumulation": ("gradient_accumulation_steps",),
    "tta": ("tta",),
    "progressive_resizing": ("progressive_epochs", "progressive_scale"),
}


@dataclass
class SearchSpace:
    """Choices per parameter (tuples, in a fixed order so a seeded sampler is
    reproducible), the base global batch, the epoch cap, and one line per
    choice left out, saying why."""

    choices: dict
    base_batch: int
    epochs: int
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"choices": {k: list(v) for k, v in self.choices.items()}, "base_batch": self.base_batch,
                "epochs": self.epochs, "notes": list(self.notes)}


def facts_from_quick(quick: dict) -> dict:
    """Probe-shaped facts (engine.hardware.verdicts) from
    engine.hardware.machine.quick_facts(), which needs no TensorFlow: CPU bf16 /
    fp16 flags, NVIDIA GPUs by name (compute capability unknown: 'measure')."""
    flags = [f for f, on in (("avx512_bf16", quick.get("cpu_bf16")), ("avx512_fp16", quick.get("cpu_fp16")))
             if on]
    versions = quick.get("backends") or {}
    backends = {name: {"version": versions.get(name)} for name in ("tensorflow", "jax") if versions.get(name)}
    return {"host": {"cpu_flags": flags},
            "gpus": [{"name": n, "compute_capability": None} for n in quick.get("gpu_names") or []],
            "tpu": {"hint": bool(quick.get("tpu")), "cores": 0},
            "software": dict(versions), "backends": backends}


def real_devices(facts: dict, device_type: str) -> int:
    """Physical devices of the kind a run on `device_type` uses: GPUs, TPU cores, else 1."""
    gpus = len(facts.get("gpus") or [])
    cores = (facts.get("tpu") or {}).get("cores") or 0
    if device_type == "tpu":
        return max(cores, 1)
    if device_type in ("gpu", "auto") and gpus:
        return gpus
    return 1


# A backend other than the base's is searched only with a budget of at least this (s): its
# trials start cold and compile first (JAX on a 2-core CPU: 3.4-3.5 s of training each, both
# pruned, in a 30-s search of 4 trials and in a 60-s one).
BACKEND_MIN_BUDGET_S = 120.0


def search_space(verdict_list: list[dict], base: RunConfig, facts: Optional[dict] = None,
                 max_lrs: tuple = (), other_backends: bool = True) -> SearchSpace:
    """The choices for `base` on a machine with these verdicts
    (engine.hardware.verdicts.verdicts(facts, base.device_type)).

    Batches: BATCH_FACTORS x base.batch_size, kept when at least the replica
    count and at most the training samples. Steps per execution: SPE_CHOICES
    (trial_config caps them at an epoch's steps). One-cycle lengths:
    CYCLE_FRACTIONS of base.epochs (the cap every trial runs at most); its peak
    LRs at the base batch: `max_lrs` (engine.autopilot.peak_lr.lr_choices), default 10x
    the base LR (Keras's and SpeedLab's default for one_cycle). other_backends: False
    keeps the search on base.backend (a note says why: a budget under BACKEND_MIN_BUDGET_S).
    """
    v = {x["option"]: x for x in verdict_list}
    notes = []
    precisions = ["float32"]
    for p in LOW_PRECISIONS:
        verdict = v.get(p, {}).get("verdict")
        if verdict in ("faster", "measure"):
            precisions.append(p)
        else:
            notes.append(f"{p} left out ({verdict}): {v.get(p, {}).get('reason', 'no verdict')}")
    xla = v.get("xla", {}).get("verdict")
    jit = (False, True) if xla in ("faster", "measure") else (False,)
    if len(jit) == 1:
        notes.append(f"XLA left out ({xla}): {v.get('xla', {}).get('reason', 'no verdict')}")
    multi = v.get("multi_device", {})
    n = real_devices(facts or {}, base.device_type) if multi.get("verdict") == "faster" else 1
    devices = (1, n) if n > 1 else (1,)
    if n == 1:
        notes.append("several devices left out: " + multi.get("reason", "only one physical device"))
    n_train, _ = base.data_sizes()
    batches = []
    for f in BATCH_FACTORS:
        b = max(1, int(round(base.batch_size * f)))
        if b % max(devices) and b > max(devices):
            b = nearest_divisible(b, max(devices))[0]
        if max(devices) <= b <= n_train and b not in batches:
            batches.append(b)
    cycles = tuple(sorted({max(1, int(math.ceil(base.epochs * f))) for f in CYCLE_FRACTIONS}))
    # TensorFlow's fused update kernels exist for Adam and SGD (engine.training.fused_optimizer);
    # a JAX trial never uses them (trial_config), XLA fuses its step anyway.
    fused = (False, True) if base.optimizer in FUSED_OPTIMIZERS else (False,)
    if len(fused) == 1:
        notes.append(f"fused optimizer left out: no fused kernel for {base.optimizer}")
    backends = [base.backend]
    for b in backend_verdicts(facts or {}, base.device_type):
        if b["backend"] == base.backend:
            continue
        if b["verdict"] in ("faster", "measure") and n == 1 and not other_backends:
            notes.append(f"backend {b['backend']} left out: a budget this short leaves no room for a second "
                         "backend (its trials start cold and compile first); give a budget of "
                         f"{BACKEND_MIN_BUDGET_S:.0f} s or more to search it")
        elif b["verdict"] in ("faster", "measure") and n == 1:
            backends.append(b["backend"])
        else:
            why = b["reason"] if n == 1 else "several devices are searched on the base backend only"
            notes.append(f"backend {b['backend']} left out ({b['verdict']}): {why}")
    optimizers = (base.optimizer, *(o for o in OTHER_OPTIMIZERS if o != base.optimizer))
    tta = ("off", "translate") if base.dataset in NO_FLIP_DATASETS else ("off", "flip", "flip_translate")
    if base.dataset in NO_FLIP_DATASETS:
        notes.append(f"test-time flips left out: a mirrored digit of {base.dataset} is another glyph")
    progressive = PROGRESSIVE_CHOICES if base.model in PROGRESSIVE_MODELS else (0,)
    if len(progressive) == 1:
        notes.append(f"progressive resizing left out: model {base.model} does not pool globally before its head")
    return SearchSpace(choices={
        "backend": tuple(backends),
        "precision": tuple(precisions),
        "steps_per_execution": SPE_CHOICES,
        "batch_size": tuple(batches),
        "schedule": ("constant", "one_cycle"),
        "warmup_epochs": WARMUP_CHOICES,
        "cycle_epochs": cycles,
        "max_lr": tuple(sorted({float(x) for x in max_lrs})) or (10.0 * base.learning_rate,),
        "label_smoothing": LABEL_SMOOTHING_CHOICES,
        "jit_compile": jit,
        "fused_optimizer": fused,
        "devices": devices,
        "optimizer": optimizers,
        "ema_momentum": EMA_CHOICES,
        "cutmix_factor": CUTMIX_CHOICES,
        "gradient_accumulation_steps": ACCUMULATION_CHOICES,
        "tta": tta,
        "progressive_epochs": progressive,
    }, base_batch=base.batch_size, epochs=base.epochs, notes=notes)


def suggest(trial, space: SearchSpace) -> dict:
    """Draw one configuration's parameters from an Optuna trial (define-by-run:
    the warmup only for a constant schedule with a batch above the base, the
    cycle length only for one_cycle). Returns {name: value}."""
    c = space.choices
    p = {name: trial.suggest_categorical(name, c[name])
         for name in ("precision", "steps_per_execution", "batch_size", "schedule")}
    if p["schedule"] == "one_cycle":
        p["cycle_epochs"] = trial.suggest_categorical("cycle_epochs", c["cycle_epochs"])
        p["max_lr"] = trial.suggest_categorical("max_lr", c["max_lr"])
    elif p["batch_size"] > space.base_batch:
        p["warmup_epochs"] = trial.suggest_categorical("warmup_epochs", c["warmup_epochs"])
    for name in ("label_smoothing", "jit_compile", "devices"):
        p[name] = trial.suggest_categorical(name, c[name])
    backends = c.get("backend", ())
    if len(backends) > 1:  # drawn last, so a one-backend space proposes as it did before
        p["backend"] = trial.suggest_categorical("backend", backends)
    if len(c.get("fused_optimizer", ())) > 1:
        p["fused_optimizer"] = trial.suggest_categorical("fused_optimizer", c["fused_optimizer"])
    # The record-setting techniques, drawn last (a space without them proposes as before).
    for name in ("optimizer", "ema_momentum", "cutmix_factor", "gradient_accumulation_steps", "tta",
                 "progressive_epochs"):
        if len(c.get(name, ())) > 1:
            p[name] = trial.suggest_categorical(name, c[name])
    return p


def hint_params(space: SearchSpace, verdict_list: list[dict], max_lr: Optional[float] = None) -> dict:
    """The first trial: what the hardware verdicts and the hand-made preset
    (benchmarks/time_to_accuracy.py) suggest, so that the pruning has a good
    time to beat early: the fastest low precision with a 'faster' verdict, 2
    steps per execution, twice the base batch with scaled LR, one-cycle over
    the length nearest half the epoch cap at `max_lr` (when offered; else the
    highest peak offered), label smoothing 0.1, XLA
    where its verdict is 'faster', the fused optimizer update where the optimizer
    has one (it only removes graph ops), every real device, the base backend.

    Only 2 steps per execution: when the time to a target is short, the warm-up
    (tracing the step) is most of it, and tracing grows with the steps fused
    into one call (on digits, on a 2-core CPU: a first execution of 1.6 s at 2
    steps per execution, 3.5 s at 6)."""
    c = space.choices
    v = {x["option"]: x.get("verdict") for x in verdict_list}
    fast = [p for p in c["precision"] if v.get(p) == "faster"]
    double = [b for b in c["batch_size"] if b == 2 * space.base_batch]
    hint = {
        "precision": fast[0] if fast else "float32",
        "steps_per_execution": 2 if 2 in c["steps_per_execution"] else c["steps_per_execution"][0],
        "batch_size": double[0] if double else space.base_batch if space.base_batch in c["batch_size"]
        else c["batch_size"][-1],
        "schedule": "one_cycle",
        "cycle_epochs": min(c["cycle_epochs"], key=lambda e: (abs(2 * e - space.epochs), e)),
        "max_lr": max_lr if max_lr in c["max_lr"] else c["max_lr"][-1],
        "label_smoothing": 0.1 if 0.1 in c["label_smoothing"] else c["label_smoothing"][0],
        "jit_compile": v.get("xla") == "faster" and True in c["jit_compile"],
        "devices": max(c["devices"]),
    }
    if len(c.get("fused_optimizer", ())) > 1:
        hint["fused_optimizer"] = True
    if len(c.get("backend", ())) > 1:
        hint["backend"] = c["backend"][0]  # the base backend, where the preset was tuned
    for name in ("optimizer", "ema_momentum", "cutmix_factor", "gradient_accumulation_steps", "tta",
                 "progressive_epochs"):
        if len(c.get(name, ())) > 1:  # the preset's: the base optimizer, none of these techniques
            hint[name] = c[name][0]
    return hint


def short_cycle_hint(space: SearchSpace, hint: dict) -> Optional[dict]:
    """The second trial: `hint` on the super-convergence route (Smith & Topin 2017,
    arXiv:1708.07120): one-cycle over the second-shortest length offered at the highest
    peak offered (the LR range test's edge, engine.autopilot.peak_lr.edge_lr), the base
    batch, 1 step per execution. A target a few epochs away is reached in the fewest
    epochs so (digits, 0.95, 2-core CPU: one-cycle over 3 of 20 epochs at 0.024 reached
    it after 2 epochs on 4 of 4 seeds, 0.62-0.93 s), and the sampler's 4 random proposals
    rarely land there. None when it would repeat `hint` (one peak offered)."""
    c = space.choices
    peaks, cycles = c["max_lr"], c["cycle_epochs"]
    if len(peaks) < 2 or peaks[-1] == hint.get("max_lr"):
        return None
    out = {**hint, "schedule": "one_cycle", "max_lr": peaks[-1], "cycle_epochs": cycles[min(1, len(cycles) - 1)]}
    if 1 in c["steps_per_execution"]:
        out["steps_per_execution"] = 1
    if space.base_batch in c["batch_size"]:
        out["batch_size"] = space.base_batch
    return out


def trial_config(base: RunConfig, params: dict, max_lr: Optional[float] = None) -> RunConfig:
    """The RunConfig of one trial: `base` (data, model, optimizer, base learning
    rate, seed, target, epoch cap) with the trial's parameters. A batch other
    than the base's scales the LR linearly (reference = the base batch);
    steps per execution are capped at an epoch's steps (Keras runs at most one
    epoch per execution). One-cycle's peak LR at the base batch is params'
    'max_lr', else `max_lr`.

    Raises: ConfigError if the combination is invalid (e.g. a batch the devices do not divide).
    """
    batch = int(params["batch_size"])
    backend = params.get("backend") or base.backend
    optimizer = params.get("optimizer") or base.optimizer
    changes = {"backend": backend, "precision": params["precision"], "batch_size": batch,
               "devices": int(params.get("devices", 1)), "jit_compile": bool(params.get("jit_compile", False)),
               "fused_optimizer": (bool(params.get("fused_optimizer", False)) and backend != "jax"
                                   and optimizer in FUSED_OPTIMIZERS),
               "label_smoothing": float(params.get("label_smoothing", 0.0)),
               "optimizer": optimizer,
               "ema_momentum": float(params.get("ema_momentum", base.ema_momentum)),
               "cutmix_factor": float(params.get("cutmix_factor", base.cutmix_factor)),
               "gradient_accumulation_steps": int(params.get("gradient_accumulation_steps",
                                                             base.gradient_accumulation_steps)),
               "tta": params.get("tta", base.tta),
               "progressive_epochs": int(params.get("progressive_epochs", base.progressive_epochs))}
    if batch != base.batch_size:
        changes.update(scale_lr=True, reference_batch_size=base.batch_size)
    if params["schedule"] == "one_cycle" and optimizer != "schedule_free_adamw":  # it needs no schedule
        changes.update(schedule="one_cycle", max_lr=float(params.get("max_lr") or max_lr),
                       epochs=int(params["cycle_epochs"]),
                       warmup_epochs=0.0)
    else:
        changes.update(schedule="constant", warmup_epochs=float(params.get("warmup_epochs", 0.0)))
    if base.mixup_alpha > 0:  # one way of mixing a batch per run
        changes["cutmix_factor"] = 0.0
    # Accumulation where it cannot go (an odd number of steps per epoch, the fused update, float16,
    # one-cycle momentum) and CutMix under TensorFlow's XLA: the trial runs without them rather than not at all.
    fallback = {"gradient_accumulation_steps": 1, "cutmix_factor": 0.0}
    while True:
        try:
            cfg = base.replace(**changes, steps_per_execution=1)
            break
        except ConfigError as e:
            if e.field not in fallback or changes.get(e.field) == fallback[e.field]:
                raise
            changes[e.field] = fallback[e.field]
    spe = min(int(params["steps_per_execution"]), cfg.steps_per_epoch())
    return cfg.replace(steps_per_execution=spe)


def config_changes(cfg: RunConfig, ref: RunConfig) -> dict:
    """{field: value} where `cfg` differs from `ref` (the seed aside)."""
    a, b = cfg.to_dict(), ref.to_dict()
    return {k: v for k, v in a.items() if k != "seed" and b.get(k) != v}


def techniques_used(cfg: RunConfig, baseline: RunConfig) -> list[str]:
    """The techniques (in TECHNIQUES order) whose fields differ between `cfg` and `baseline`.
    The backend counts by its name alone, and XLA only on the same backend (JAX runs
    always compile with XLA: there it comes with the backend)."""
    def differs(t: str) -> bool:
        if t == "backend":
            return cfg.backend != baseline.backend
        if t == "jit_compile" and cfg.backend != baseline.backend:
            return False
        return any(getattr(cfg, f) != getattr(baseline, f) for f in TECHNIQUE_FIELDS[t])

    return [t for t in TECHNIQUES if differs(t)]


# What technique_label says for a technique that is off.
_OFF_WORDS = {"ema": "no weight EMA", "cutmix": "no CutMix", "gradient_accumulation": "no gradient accumulation",
              "tta": "no TTA", "progressive_resizing": "full size throughout"}


def technique_label(technique: str, cfg: RunConfig) -> str:
    """How a technique is set in `cfg`, e.g. 'bfloat16', '8 steps per execution',
    'batch 512 + scaled LR + 1 warmup epoch', 'one_cycle (max LR 0.0033, 5 epochs)'."""
    if technique == "backend":
        return {"jax": "JAX backend", "tensorflow": "TensorFlow backend"}.get(cfg.backend, cfg.backend)
    if technique == "precision":
        return words.precision(cfg.precision, long=True)
    if technique == "steps_per_execution":
        return words.steps_per_execution(cfg.steps_per_execution, long=True)
    if technique == "batch":
        s = f"batch {cfg.batch_size}" + (" + scaled LR" if cfg.scale_lr else "")
        if cfg.warmup_epochs:
            s += f" + {cfg.warmup_epochs:g} warmup epoch" + ("s" if cfg.warmup_epochs != 1 else "")
        return s
    if technique == "schedule":
        if cfg.schedule == "one_cycle":
            peak = f"max LR {cfg.max_lr:.2g}, " if cfg.max_lr else ""
            return f"one_cycle ({peak}{cfg.epochs} epochs)"
        return cfg.schedule
    if technique == "label_smoothing":
        return f"label smoothing {cfg.label_smoothing:g}"
    if technique == "jit_compile":
        return "XLA" if cfg.jit_compile else "no XLA"
    if technique == "fused_optimizer":
        return f"fused {cfg.optimizer} update" if cfg.fused_optimizer else f"{cfg.optimizer} update"
    if technique == "devices":
        return words.devices(cfg.devices)
    # The record-setting techniques in their long words (engine.config.words); 'no ...' when off.
    d = cfg.to_dict()
    if technique == "optimizer":
        return words.technique("optimizer", d, long=True) or cfg.optimizer
    if technique in _OFF_WORDS:
        return words.technique(technique, d, long=True) or _OFF_WORDS[technique]
    raise ValueError(f"technique {technique!r}: use one of {', '.join(TECHNIQUES)}")


def techniques_tried(trials: list[dict], baseline: RunConfig) -> list[dict]:
    """What the search tried, technique by technique (TECHNIQUES order, every one, so a
    technique no trial used reads as such).

    Args: trials: the search's trial entries ('config' a RunConfig dict, 'kind',
    'time_to_target_sec' in s).
    Returns: [{'technique', 'trials' (how many used it), 'reached' (how many of those
    reached the target), 'best_sec' (their fastest time to target, s, or None),
    'settings' ({technique_label: trials}, most used first)}].
    """
    rows = {t: {"technique": t, "trials": 0, "reached": 0, "best_sec": None, "settings": {}} for t in TECHNIQUES}
    for trial in trials:
        cfg = RunConfig.from_dict(trial["config"])
        for t in techniques_used(cfg, baseline):
            row = rows[t]
            row["trials"] += 1
            label = technique_label(t, cfg)
            row["settings"][label] = row["settings"].get(label, 0) + 1
            sec = trial.get("time_to_target_sec") if trial.get("kind") == "reached" else None
            if sec is not None:
                row["reached"] += 1
                row["best_sec"] = sec if row["best_sec"] is None else min(row["best_sec"], sec)
    for row in rows.values():
        row["settings"] = dict(sorted(row["settings"].items(), key=lambda kv: (-kv[1], kv[0])))
    return list(rows.values())


def tried_text(tried: list[dict], max_settings: int = 3) -> str:
    """One line of `techniques_tried`, e.g. 'optimizer in 12 trials (muon 7, lamb 3,
    schedule_free_adamw 2), 5 reached, best 4.1 s; ...; in no trial: TTA, 2 devices'."""
    used, unused = [r for r in tried if r["trials"]], [r["technique"] for r in tried if not r["trials"]]
    parts = []
    for r in used:
        settings = list(r["settings"].items())
        shown = ", ".join(f"{k} {v}" for k, v in settings[:max_settings]) + (", ..." if len(settings) > max_settings else "")
        best = f", best {r['best_sec']:.1f} s" if r["best_sec"] is not None else ""
        parts.append(f"{r['technique'].replace('_', ' ')} in {r['trials']} ({shown}), {r['reached']} reached{best}")
    line = "; ".join(parts) if parts else "every trial ran the baseline settings"
    if unused:
        line += "; in no trial: " + ", ".join(t.replace("_", " ") for t in unused)
    return line


def describe(cfg: RunConfig, baseline: RunConfig) -> str:
    """One line naming every technique `cfg` uses over its baseline, e.g.
    'bfloat16 · 8 steps per execution · batch 256 + scaled LR', or 'the baseline'."""
    used = techniques_used(cfg, baseline)
    return " · ".join(technique_label(t, cfg) for t in used) if used else "the baseline settings"


def ablation_configs(winner: RunConfig, baseline: RunConfig) -> list[dict]:
    """Leave-one-out ablation of `winner`: for each technique it uses (see
    `techniques_used`), the winner with exactly that technique's fields set back
    to the `baseline`'s values (the search's baseline: baseline_config of the
    user's settings, so with the user's global batch, not the winner's).

    Returns: [{'technique', 'label' (the winner's setting, technique_label),
    'config' (RunConfig, or None when the switched-back combination is invalid),
    'error' (the ConfigError's line, or None)}], in TECHNIQUES order.
    """
    from engine.base.errors import ConfigError

    out = []
    for t in techniques_used(winner, baseline):
        back = {f: getattr(baseline, f) for f in TECHNIQUE_FIELDS[t]}
        try:
            cfg, error = winner.replace(**back), None
        except ConfigError as e:
            cfg, error = None, str(e)
        out.append({"technique": t, "label": technique_label(t, winner), "config": cfg, "error": error})
    return out
