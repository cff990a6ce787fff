"""Time and samples to a target accuracy, read from a run's stored epochs (no TF here).

A run reaches its target at the end of the first epoch whose validation accuracy is at or
above it; one that never does is said so (`not_reached`), or censored at its last epoch
(`censored_time`) where a comparison's statistics need a bound.
"""
from __future__ import annotations

from typing import Optional


def effective_target(run: dict, target: Optional[float] = None) -> Optional[float]:
    """The target validation accuracy (0-1) a run's time to accuracy is measured to:
    `target` if given, else its config's (engine.data.meta.target_for: the config's
    target_accuracy or the data set's default), else the one its worker used (summary)."""
    if target is not None:
        return target
    from engine.data.meta import target_for

    cfg = run.get("config") or {}
    found = target_for(cfg.get("target_accuracy"), cfg.get("dataset"))
    return found if found is not None else (run.get("summary") or {}).get("target_accuracy")


def time_to_accuracy(epochs: list[dict], target: Optional[float]) -> Optional[float]:
    """Seconds from the start of training to the end of the first validation whose
    accuracy reaches `target` (epoch rows' t), or None. Same float32 tolerance as
    the worker (engine.training.recorder.reached)."""
    if target is None:
        return None
    hit = next((e for e in epochs if e.get("val_accuracy") is not None
                and e["val_accuracy"] >= target - 1e-6), None)
    return hit["t"] if hit else None


def samples_to_accuracy(run: dict, epochs: list[dict], target: Optional[float]) -> Optional[float]:
    """Training samples seen until the end of the first validation at or above `target`
    (epochs done x samples per epoch: plan n_train - dropped_samples_per_epoch), or None."""
    if target is None:
        return None
    hit = next((e for e in epochs if e.get("val_accuracy") is not None
                and e["val_accuracy"] >= target - 1e-6), None)
    return _samples_after(run, hit)


def _samples_after(run: dict, epoch_row: Optional[dict]) -> Optional[float]:
    plan = run.get("plan") or {}
    if epoch_row is None or not plan.get("n_train"):
        return None
    return float((int(epoch_row["epoch"]) + 1) * (plan["n_train"] - (plan.get("dropped_samples_per_epoch") or 0)))


def censored_time(run: dict, epochs: list[dict], target: Optional[float]) -> tuple[Optional[float], Optional[float]]:
    """(s, samples) trained by a completed run that never reached `target`: the time and
    samples at its last validation, a lower bound of its time to accuracy (a censored
    observation); (None, None) when it reached the target, did not complete, or has no
    validation."""
    if target is None or run.get("status") != "completed" or not epochs or \
            time_to_accuracy(epochs, target) is not None:
        return None, None
    last = epochs[-1]
    return last.get("t"), _samples_after(run, last)


def not_reached(run: dict, epochs: list[dict], target: Optional[float]) -> Optional[str]:
    """'not reached in N epochs' (or '... yet' while the run is active, 'not reached: stopped
    after N epochs' for a run the user or a signal stopped) when a target is set and no
    validation reached it; None otherwise."""
    if target is None or time_to_accuracy(epochs, target) is not None:
        return None
    n = len(epochs)
    if run.get("status") in ("queued", "running"):
        return f"not reached yet ({n} epoch{'s' if n != 1 else ''} so far)"
    return missed_text(run.get("status"), n)


def missed_text(status: Optional[str], n: int) -> str:
    """Why an ended run (`status`) has no time to its target after `n` validations (epochs):
    'not reached in N epochs', 'not reached: stopped after N epochs' (cancelled: "in 25 epochs"
    read as if it had trained them all and missed), or 'not reached: stopped (failed) before its
    first validation' ("in 0 epochs" read as no training)."""
    how = "stopped" if status == "cancelled" else status or "ended"
    if n == 0:
        return f"not reached: {how} before its first validation"
    if status == "cancelled":
        return f"not reached: stopped after {n} epoch{'s' if n != 1 else ''}"
    return f"not reached in {n} epoch{'s' if n != 1 else ''}"
