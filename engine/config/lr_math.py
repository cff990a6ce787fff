"""Learning-rate and momentum schedules as plain formulas (NumPy; no TensorFlow import).

Each formula is written once against an array namespace ``xp`` (``numpy`` here,
for the dashboard's previews; ``keras.ops`` in `engine.training.schedules`, for training
on either Keras backend),
so the preview and the trained schedule cannot drift apart.

Conventions:
    * ``step`` is the 0-based optimizer step whose update uses the value (Keras
      calls the schedule with ``optimizer.iterations`` before incrementing it).
    * ``total_steps = cfg.epochs * steps_per_epoch``;
      ``warmup_steps = round(cfg.warmup_epochs * steps_per_epoch)``.
    * Linear warmup gives ``lr * (step + 1) / warmup_steps``: step 0 already moves
      (no wasted step at lr 0) and step ``warmup_steps - 1`` is at the full LR.
      Warmup applies to constant, warmup_cosine and warmup_step only (cyclic and
      one-cycle start low by construction).
    * With ``cfg.scale_lr`` every LR in the config (``learning_rate`` and
      ``max_lr``) is read as the value at ``reference_batch_size`` and multiplied
      by ``batch_size / reference_batch_size`` (linear scaling rule, Goyal et al.
      2017, "Accurate, Large Minibatch SGD").
    * Step lengths measured in epochs (half cycle, decay interval) are rounded to
      whole steps (at least 1), so float32 and float64 agree on every boundary.
    * Cosines are evaluated as ``sin(pi/2 * remaining)**2`` (the same value as
      ``(1 + cos(pi * done)) / 2``) to keep float32 accurate near the end, where
      the LR approaches 0.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

# One-cycle momentum range (Smith & Topin 2018; PyTorch OneCycleLR defaults).
MOMENTUM_MAX = 0.95
MOMENTUM_MIN = 0.85


# --- formulas: xp is numpy or keras.ops, step a float array/tensor -----------
def _warmup(xp, step, warmup_steps):
    if warmup_steps <= 0:
        return xp.ones_like(step)
    return xp.minimum((step + 1.0) / warmup_steps, 1.0)


def _anneal(xp, start, end, remaining):
    """Cosine from `start` (remaining=1) to `end` (remaining=0)."""
    return end + (start - end) * xp.sin(0.5 * math.pi * remaining) ** 2


def constant(xp, step, *, base_lr, warmup_steps):
    return base_lr * _warmup(xp, step, warmup_steps)


def warmup_cosine(xp, step, *, base_lr, warmup_steps, total_steps):
    """Cosine decay to 0 over the steps after warmup; 0 is reached at step
    `total_steps`, one past the last update (as keras CosineDecay)."""
    decay = max(total_steps - warmup_steps, 1)
    t = xp.minimum(xp.maximum(step - warmup_steps, 0.0), float(decay))
    return _anneal(xp, base_lr, 0.0, (decay - t) / decay) * _warmup(xp, step, warmup_steps)


def warmup_step(xp, step, *, base_lr, warmup_steps, decay_steps, decay_rate):
    """x decay_rate at steps decay_steps, 2*decay_steps, ... counted from step 0,
    warmup included (Goyal et al. 2017 decay at fixed epochs 30/60/80)."""
    return base_lr * decay_rate ** xp.floor(step / decay_steps) * _warmup(xp, step, warmup_steps)


def cyclic(xp, step, *, base_lr, max_lr, step_size, mode, gamma):
    """Smith 2017, "Cyclical Learning Rates for Training Neural Networks", sec. 3.1:
    cycle = floor(1 + it / (2 step_size)); x = |it / step_size - 2 cycle + 1|;
    lr = base + (max - base) * max(0, 1 - x) * scale, with scale 1 (triangular),
    1 / 2**(cycle - 1) (triangular2) or gamma**it (exp_range)."""
    cycle = xp.floor(1.0 + step / (2.0 * step_size))
    x = xp.abs(step / step_size - 2.0 * cycle + 1.0)
    amp = (max_lr - base_lr) * xp.maximum(1.0 - x, 0.0)
    if mode == "triangular2":
        amp = amp / 2.0 ** (cycle - 1.0)
    elif mode == "exp_range":
        amp = amp * xp.exp(step * math.log(gamma))  # gamma**it, accurate in float32
    elif mode != "triangular":
        raise ValueError(f"unknown cyclic mode {mode!r}")
    return base_lr + amp


def _two_phase(xp, step, total_steps, pct_start, start, peak, end):
    """PyTorch OneCycleLR (three_phase=False, anneal_strategy='cos'): cosine from
    `start` at step 0 to `peak` at step pct_start*total_steps - 1, then to `end`
    at step total_steps - 1; held there afterwards (PyTorch raises instead)."""
    p1_end = pct_start * total_steps - 1.0
    p2_end = total_steps - 1.0
    step = xp.minimum(step, p2_end)
    r1 = (p1_end - step) / p1_end if p1_end > 0 else 0.0  # phase 1 of < 1 step: at peak
    r2 = (p2_end - step) / (p2_end - p1_end)
    return xp.where(step <= p1_end, _anneal(xp, start, peak, r1), _anneal(xp, peak, end, r2))


def one_cycle(xp, step, *, max_lr, total_steps, pct_start, div_factor, final_div_factor):
    """Smith & Topin 2018, "Super-Convergence"; PyTorch OneCycleLR numbers:
    initial = max_lr / div_factor, final = initial / final_div_factor."""
    initial = max_lr / div_factor
    return _two_phase(xp, step, total_steps, pct_start, initial, max_lr, initial / final_div_factor)


def one_cycle_momentum(xp, step, *, total_steps, pct_start,
                       max_momentum=MOMENTUM_MAX, min_momentum=MOMENTUM_MIN):
    """Momentum (SGD) or beta_1 (Adam) moving inversely to the one-cycle LR."""
    return _two_phase(xp, step, total_steps, pct_start, max_momentum, min_momentum, max_momentum)


FORMULAS = {f.__name__: f for f in (constant, warmup_cosine, warmup_step, cyclic, one_cycle,
                                    one_cycle_momentum)}


# --- config -> numbers ----------------------------------------------------------
def _scale(cfg) -> float:
    return cfg.batch_size / cfg.reference_batch_size if cfg.scale_lr else 1.0


def effective_lr(cfg) -> float:
    """Base LR after the linear scaling rule (Goyal et al. 2017), in LR units."""
    return float(cfg.learning_rate * _scale(cfg))


def _peak_lr(cfg) -> float:
    return float(cfg.max_lr * _scale(cfg)) if cfg.max_lr is not None else 10.0 * effective_lr(cfg)


def _steps(epochs: float, steps_per_epoch: int) -> int:
    return max(1, round(epochs * steps_per_epoch))


def lr_params(cfg, steps_per_epoch: int) -> tuple[str, dict]:
    """(formula name, keyword numbers) of cfg's LR schedule; JSON-serialisable."""
    spe = int(steps_per_epoch)
    if spe < 1:
        raise ValueError(f"steps_per_epoch must be >= 1, got {steps_per_epoch}")
    total = cfg.epochs * spe
    base = effective_lr(cfg)
    warmup = round(cfg.warmup_epochs * spe)
    kind = cfg.schedule
    if kind == "constant":
        return kind, dict(base_lr=base, warmup_steps=warmup)
    if kind == "warmup_cosine":
        return kind, dict(base_lr=base, warmup_steps=warmup, total_steps=total)
    if kind == "warmup_step":
        return kind, dict(base_lr=base, warmup_steps=warmup,
                          decay_steps=_steps(cfg.step_decay_epochs, spe),
                          decay_rate=float(cfg.step_decay_rate))
    if kind == "cyclic":
        return kind, dict(base_lr=base, max_lr=_peak_lr(cfg),
                          step_size=_steps(cfg.half_cycle_epochs, spe),
                          mode=cfg.cyclic_mode, gamma=float(cfg.cyclic_gamma))
    if kind == "one_cycle":
        return kind, dict(max_lr=_peak_lr(cfg), total_steps=total,
                          pct_start=float(cfg.one_cycle_pct_start),
                          div_factor=float(cfg.one_cycle_div_factor),
                          final_div_factor=float(cfg.one_cycle_final_div_factor))
    raise ValueError(f"unknown schedule {kind!r}")


def momentum_params(cfg, steps_per_epoch: int) -> Optional[tuple[str, dict]]:
    """(formula name, numbers) of the cycled momentum, or None when momentum stays
    fixed: cycled only for one_cycle with sgd or adam (Keras' RMSprop decides on
    its momentum in Python, so it cannot follow a schedule inside the graph)."""
    if cfg.schedule != "one_cycle" or cfg.optimizer not in ("sgd", "adam"):
        return None
    return "one_cycle_momentum", dict(total_steps=cfg.epochs * int(steps_per_epoch),
                                      pct_start=float(cfg.one_cycle_pct_start))


# --- NumPy evaluation -------------------------------------------------------------
def lr_at(cfg, steps, steps_per_epoch: int) -> np.ndarray:
    """LR (float64, same shape as `steps`) used by the update at each 0-based step."""
    kind, params = lr_params(cfg, steps_per_epoch)
    return np.asarray(FORMULAS[kind](np, np.asarray(steps, dtype=np.float64), **params),
                      dtype=np.float64)


def momentum_at(cfg, steps, steps_per_epoch: int) -> Optional[np.ndarray]:
    """Momentum / beta_1 (float64) at each step for one-cycle, else None."""
    mp = momentum_params(cfg, steps_per_epoch)
    if mp is None:
        return None
    kind, params = mp
    return np.asarray(FORMULAS[kind](np, np.asarray(steps, dtype=np.float64), **params),
                      dtype=np.float64)


def preview(cfg, steps_per_epoch: int, max_points: int = 500) -> dict:
    """Chart data: 'step' (int64), 'epoch' (float, step / steps_per_epoch), 'lr'
    and 'momentum' (float64 or None) at up to `max_points` evenly spread steps
    (first and last step always included)."""
    total = cfg.epochs * int(steps_per_epoch)
    n = max(2, min(total, int(max_points)))
    steps = np.unique(np.round(np.linspace(0, total - 1, n)).astype(np.int64))
    return {"step": steps, "epoch": steps / steps_per_epoch,
            "lr": lr_at(cfg, steps, steps_per_epoch),
            "momentum": momentum_at(cfg, steps, steps_per_epoch)}
