"""One-cycle's peak learning rate for the autopilot's trials: from a stored or new LR range
test (engine.lr_find), else a multiple of the base learning rate. No TF here.
"""
from __future__ import annotations

import threading
from typing import Optional

from engine.config import RunConfig

# The LR range test runs inside the budget only when the budget is at least this (s).
LR_FIND_MIN_BUDGET_S = 120.0

# Without an LR range test, one-cycle peaks at this x the base learning rate
# (the hand-tuned preset's 0.005 for Adam at 1e-3).
FALLBACK_MAX_LR_FACTOR = 5.0
EDGE_LR_DIVISOR = 3.0  # the highest one-cycle peak offered: the minimum loss's LR / 3 (edge_lr)


def _lr_key(c: dict) -> tuple:
    return tuple(c.get(k) for k in ("dataset", "model", "batch_size", "optimizer", "learning_rate",
                                    "label_subset", "seed"))


def lr_choices(suggestion: dict) -> list[float]:
    """One-cycle peak LRs from an LR range test's suggestion (engine.lr_find.range_test.suggest),
    distinct and ascending: its 'steepest' descent and its 'min_over_10' (the
    minimum loss's LR / 10), the two rules of the test, and, above them, the
    minimum loss's LR / EDGE_LR_DIVISOR (`edge_lr`). Empty without a rule's value."""
    rules = {float(suggestion[k]) for k in ("steepest", "min_over_10", "suggested") if suggestion.get(k)}
    edge = edge_lr(suggestion)
    return sorted(rules | ({edge} if rules and edge and edge > max(rules) else set()))


def edge_lr(suggestion: dict) -> Optional[float]:
    """The LR range test's minimum-loss LR / EDGE_LR_DIVISOR, or None.

    One-cycle tolerates peak LRs near the largest at which the loss still falls
    (Smith & Topin 2017, "Super-Convergence", arXiv:1708.07120; Smith 2018,
    arXiv:1803.09820, sec. 4.1), well above the cautious min/10 rule, and a short
    cycle at such a peak can reach a target in fewer epochs. Measured on digits
    (batch 128, bfloat16, one-cycle over 3 epochs, 4 seeds, in-process runs):
    0.95 after 2 epochs at min/3 (0.024), 0.62-0.93 s, where min/10 (0.0071)
    needed 3-4 epochs at batch 256 (0.75-1.11 s). A peak that diverges is pruned
    like any slow trial."""
    low = suggestion.get("min_loss_lr")
    return float(low) / EDGE_LR_DIVISOR if low else None


def choose_max_lr(base: RunConfig, budget_s: float, lr_find: str = "auto",
                  max_lr: Optional[float] = None, stop: Optional[threading.Event] = None) -> dict:
    """One-cycle's peak LRs at the base batch: {'value' (the highest), 'choices'
    (ascending), 'source' (one line), 'hint' (the highest but `edge_lr`: the first trial's)}.

    `max_lr` given: that. `lr_find` 'no': FALLBACK_MAX_LR_FACTOR x the base LR (no
    test, stored or new). Else the stored LR range test (engine.lr_find.range_test) for
    the same data, model, batch, optimizer, LR and seed. Else, with `lr_find`
    'yes', or 'auto' and a budget of at least LR_FIND_MIN_BUDGET_S, a new one
    (its seconds count in the budget). From a test: `lr_choices`. Else
    FALLBACK_MAX_LR_FACTOR x the base LR.
    `stop` set during a new test ends it at once (the fallback is used then).
    Raises: engine.lr_find.range_test.LRFindError when a requested test fails.
    """
    from engine.lr_find import range_test as lr_find_mod

    def out(choices, source, suggestion=None):
        if suggestion is not None:  # a test's peaks under the base LR are not one-cycle peaks: RunConfig refuses them
            low = [x for x in choices if x <= base.learning_rate]
            choices = [x for x in choices if x > base.learning_rate]
            if low:
                source += (f"; {', '.join(f'{x:.3g}' for x in low)} left out (not above the base learning rate "
                           f"{base.learning_rate:g})")
            if not choices:
                choices = [FALLBACK_MAX_LR_FACTOR * base.learning_rate]
                source += f": {FALLBACK_MAX_LR_FACTOR:g}x the base learning rate instead"
        edge = edge_lr(suggestion or {})  # the first trial (the preset's guess) keeps to the test's rules
        return {"value": choices[-1], "choices": choices, "source": source,
                "hint": max([x for x in choices if x != edge] or choices)}

    if max_lr is not None:
        return out([float(max_lr)], "given")
    if lr_find == "no":  # none at all, stored or new: the same search whatever was run before
        return out([FALLBACK_MAX_LR_FACTOR * base.learning_rate],
                   f"no LR range test (--lr-find no): {FALLBACK_MAX_LR_FACTOR:g}x the base learning rate")
    latest = lr_find_mod.load_latest() or {}
    choices = lr_choices(latest.get("suggestion") or {})
    if choices and _lr_key(latest.get("config") or {}) == _lr_key(base.to_dict()):
        return out(choices, "the stored LR range test", latest.get("suggestion"))
    if lr_find == "yes" or (lr_find == "auto" and budget_s >= LR_FIND_MIN_BUDGET_S):
        try:
            res = lr_find_mod.run(base.replace(schedule="constant", warmup_epochs=0.0, scale_lr=False), stop=stop)
        except lr_find_mod.LRFindError:
            if not (stop and stop.is_set()):
                raise
            return out([FALLBACK_MAX_LR_FACTOR * base.learning_rate], "none: stopped during the LR range test")
        choices = lr_choices(res.get("suggestion") or {})
        if choices:
            return out(choices, f"an LR range test ({res.get('wall_sec', 0):.0f} s)", res.get("suggestion"))
    why = ("no LR range test" + (f" (budget under {LR_FIND_MIN_BUDGET_S:.0f} s)" if lr_find == "auto" else ""))
    return out([FALLBACK_MAX_LR_FACTOR * base.learning_rate],
               f"{why}: {FALLBACK_MAX_LR_FACTOR:g}x the base learning rate")
