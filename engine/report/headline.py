"""The wording of one pair's headline: time to accuracy (what the clock says), as the
Train page, presenter mode and Replay show it. Pure: from engine.report.pair.compare()'s
result (or a run that is its own baseline and its epoch rows) to strings; drawing them
is the views' business. A comparison of interleaved pairs has its own headline
(engine.report.stats.comparison_headline).
"""
from __future__ import annotations

from typing import Optional

from engine.report import stats
from engine.report.target import effective_target, not_reached, time_to_accuracy

OWN_BASELINE = "This run is its own baseline: nothing to compare."


def ratio_text(v: Optional[float]) -> str:
    """A speedup as '1.23×' (2 decimals), or '—' when there is none."""
    return "—" if v is None else f"{v:.2f}×"


def target_label(target: Optional[float]) -> str:
    """'time to 0.95 val accuracy' (or 'time to accuracy' with no target)."""
    return f"time to {target:g} val accuracy" if target is not None else "time to accuracy"


def own_time(run: dict, epochs: list[dict]) -> dict:
    """A run that is its own baseline (nothing to compare): its own time to its target.

    Args: run (a store row), epochs (its epoch rows: dicts with t in s, val_accuracy).
    Returns: {'target': the target accuracy or None, 'seconds': s to reach it or None,
    'label': 'Time to 0.95 val accuracy' or None with no target, 'value': '12.34 s' or '—',
    'note': 'Not reached in 3 epochs. ' or ''} (the note ends in '. ' so that
    OWN_BASELINE can follow it).
    """
    goal = effective_target(run)
    secs = time_to_accuracy(epochs, goal)
    note = not_reached(run, epochs, goal)
    return {"target": goal, "seconds": secs,
            "label": None if goal is None else f"Time to {goal:g} val accuracy",
            "value": "—" if secs is None else f"{secs:.2f} s",
            "note": f"{note[0].upper()}{note[1:]}. " if note else ""}


def pair_headline(cmp: dict) -> dict:
    """The time-to-accuracy headline of one pair (run vs baseline, both ended).

    Args: cmp, engine.report.pair.compare()'s result (time_to_accuracy_speedup, the two
    times in s, target_accuracy, the two *_time_to_accuracy_note).
    Returns: {'label': 'time to 0.95 val accuracy', 'ratio': the speedup or None,
    'value': '3.42× faster', '0.80× slower' or '—', 'seconds': '45.3 s → 13.2 s' or None,
    'notes': why there is no ratio, e.g. ['baseline: not reached in 3 epochs'],
    'missed': 'run' or 'baseline' when one side ended without reaching the target, else None
    (a live 'not reached yet' is no verdict: it would flicker), 'machines': 'measured on two
    machines: A vs B' or None (then 'value' reads '1.23× (not comparable)')}.
    """
    tt = cmp.get("time_to_accuracy_speedup")
    sides = (("baseline", cmp.get("baseline_time_to_accuracy_note")), ("run", cmp.get("time_to_accuracy_note")))
    notes = [f"{who}: {note}" for who, note in sides if note]
    missed = next((who for who, note in reversed(sides)  # the run's first, as presenter mode said it
                   if tt is None and note and not note.startswith("not reached yet")), None)
    machines = cmp.get("machines")  # two machines: a ratio, never "faster" (engine.report.pair.compare)
    return {"label": target_label(cmp.get("target_accuracy")), "ratio": tt, "machines": machines,
            "value": "—" if tt is None else f"{tt:.2f}× (not comparable)" if machines else
            stats.fmt_speed(tt, "×"),
            "seconds": (None if tt is None else
                        f"{cmp['baseline_time_to_accuracy_sec']:.1f} s → {cmp['time_to_accuracy_sec']:.1f} s"),
            "notes": notes, "missed": missed}
