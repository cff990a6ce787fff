"""A headline: the words at the top of a measured speedup, for every place that shows one
(Train page, presenter mode, Replay, Runs page, CLI, autopilot). Pure: numbers in, strings
out; drawing them is the views' business, the statistics are engine.report.stats'.

- one pair (`pair_headline`, `own_time`): time to accuracy from engine.report.pair.compare();
- a comparison of interleaved pairs (`summary_headline` of one measure's summary,
  `comparison_headline` of a stored result) and what its speedup is made of (`made_of_lines`);
- the one ratio format (`ratio_text`, `speed_text`, `interval_text`, MISSING).
"""
from __future__ import annotations

from typing import Optional, Sequence

from engine.report.stats import (DEFAULT_MARGIN, MIN_PAIRS, NOT_COMPARABLE, POWER, POWER_CAP,
                                  TEST_ACCURACY_MARGIN, accuracy_held, below_floor, overall_verdict,
                                  pairs_for_power, result_floor)
from engine.report.target import effective_target, not_reached, time_to_accuracy

OWN_BASELINE = "This run is its own baseline: nothing to compare."


# The one mark for a missing figure, in text, in the CLI and on the pages.
MISSING = "—"
# The sign after a ratio: 'x' in text and the CLI (plain ASCII), '×' on the pages.
TEXT_SIGN, PAGE_SIGN = "x", "×"


def ratio_text(v: Optional[float], sign: str = TEXT_SIGN, digits: int = 2) -> str:
    """A ratio (a speedup, x) as '1.23x' (2 decimals, as every SpeedLab speedup; `sign` '×'
    on the pages: '1.23×'; `digits` 1 for a chart's reference line, 3 for a benchmark's
    fine effects), MISSING when there is none."""
    return MISSING if v is None else f"{v:.{digits}f}{sign}"


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
            "value": MISSING if secs is None else f"{secs:.2f} s",
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
            "value": MISSING if tt is None else f"{ratio_text(tt, PAGE_SIGN)} (not comparable)" if machines else
            speed_text(tt, PAGE_SIGN),
            "seconds": (None if tt is None else
                        f"{cmp['baseline_time_to_accuracy_sec']:.1f} s → {cmp['time_to_accuracy_sec']:.1f} s"),
            "notes": notes, "missed": missed}


# --- a comparison of interleaved pairs in words (its statistics: engine.report.stats) ---

def interval_text(ci: Optional[Sequence[float]]) -> str:
    """An interval of speedups as its two ends in percent, e.g. '−74% to +286%' for
    [0.26, 3.86] (asymmetric ends, never '±'); MISSING for none."""
    if not ci:
        return MISSING

    def pct(x: float) -> str:
        v = (x - 1) * 100
        return f"{'+' if v >= 0 else '−'}{abs(v):.0f}%"

    return f"{pct(ci[0])} to {pct(ci[1])}"


def speed_text(x: Optional[float], sign: str = TEXT_SIGN) -> str:
    """A speedup in words: '1.31x faster', or a slower one by how many times as long it
    takes: '12.50x slower' for 0.08 ('0.08x slower' read as 8% slower); MISSING for none.
    `sign`: as `ratio_text`'s."""
    if x is None:
        return MISSING
    return f"{ratio_text(x, sign)} faster" if x >= 1 or x <= 0 else f"{ratio_text(1 / x, sign)} slower"


def decide_text(summary: dict, v: Optional[str] = None) -> str:
    """'; 80% power at this effect needs about 9-31 pairs in all (a second look)' for an
    inconclusive verdict (`v`, default the summary's) with `pairs_for_power`'s range, else ''."""
    v = v if v is not None else summary.get("verdict")
    more = None
    if v == "inconclusive":  # also when a noise floor made it so: then computed here
        more = summary.get("pairs_for_power") or pairs_for_power([r for r in summary.get("pair_ratios") or [] if r])
    if not more:
        return ""
    lo, hi = more
    span = (f"{lo}" if lo == hi else f"{lo}-{hi}") + ("+" if hi >= POWER_CAP else "")
    return f"; {POWER * 100:.0f}% power at this effect needs about {span} pairs in all (a second look)"


def verdict_text(summary: dict, v: Optional[str] = None) -> str:
    """The words of a summary with an interval, e.g. '1.31x faster (+18% to +45%)',
    'equivalent within ±5%: 1.01x (−2% to +4%)', 'inconclusive: 0.80x (−79% to +209%)',
    '1.31x faster, accuracy not held (+18% to +45%)', '1.27x slower (−21% to −15%)' for 0.79x
    (speed_text). `v`: the verdict to word (default
    the summary's own)."""
    x, ci = summary.get("speedup"), summary.get("ci95")
    v = v if v is not None else summary.get("verdict")
    span = f"{ratio_text(x)} ({interval_text(ci)})"
    if v == "equivalent":
        return f"equivalent within ±{(summary.get('margin') or DEFAULT_MARGIN) * 100:.0f}%: {span}"
    if v == "inconclusive":
        return f"inconclusive: {span}"
    if v == "slower":
        return f"{speed_text(x)} ({interval_text(ci)})"
    return f"{ratio_text(x)} {v} ({interval_text(ci)})"


def settled_text(pairs_done: int, max_pairs: int, accuracy: bool) -> str:
    """Why an adaptive comparison stopped early (engine.report.stats.verdict_settled), with the
    assumption it rests on: 'stopped after 3 of 5 pairs: the verdict would not change if the
    other 2 fell within the range of these 3 (speedup and test accuracy)'. `accuracy`: whether
    test accuracy was part of the verdict (a 'faster' with test accuracy measured), else
    '(speedup)'. Never 'cannot change': a pair outside that range, or a missed target, could."""
    left = max_pairs - pairs_done
    other = "the last one" if left == 1 else f"the other {left}"
    return (f"stopped after {pairs_done} of {max_pairs} pairs: the verdict would not change if {other} fell "
            f"within the range of these {pairs_done} ({'speedup and test accuracy' if accuracy else 'speedup'})")


def misses_note(summary: dict) -> Optional[str]:
    """The seeds a side missed or failed on, in words, e.g. 'the candidate failed on 1 seed
    (diverged or crashed) and missed the target on 1: no 'faster''; None when every side of
    every pair reached it."""
    m = summary.get("misses") or {}
    parts = []
    for side, who, rules_out in (("run", "the candidate", "faster"), ("baseline", "the baseline", "slower")):
        c = m.get(side) or {}
        bits = ([f"failed on {c['failed']} seed{'s' if c['failed'] != 1 else ''} (diverged or crashed)"]
                if c.get("failed") else []) + \
               ([f"missed the target on {c['missed']} seed{'s' if c['missed'] != 1 else ''}"] if c.get("missed") else [])
        if bits:
            parts.append(f"{who} {' and '.join(bits)}: no '{rules_out}'")
    return "; ".join(parts) or None


def summary_headline(summary: Optional[dict], floor: Optional[float] = None, in_progress: bool = False,
             baseline_label: Optional[str] = None, delta: Optional[dict] = None) -> dict:
    """The words of a comparison's headline, for every place that shows one
    (Train page, presenter mode, Replay, Runs page, CLI, autopilot).

    Args:
        summary: `summarize` of the measure the headline is about (time to
            accuracy, else end-to-end), or None.
        floor: a measured noise floor for that measure (relative half width of a matching
            A/A comparison), or None; an effect within it reads 'inconclusive'.
        in_progress: more pairs are coming: the text says so, and holds the interval and
            verdict back until MIN_PAIRS pairs are in.
        baseline_label: what the baseline is, e.g. 'Keras-default Adam 1e-3'; the
            text ends with 'vs <label>'.
        delta: held-out test accuracy, run − baseline (engine.report.comparison.test_accuracy_delta):
            'faster' whose accuracy did not hold reads FASTER_NOT_HELD (`overall_verdict`).
    Returns: {'text': e.g. '1.31x faster (+18% to +45%), 5 pairs vs tuned Adam 3e-3', 'main'
        (the verdict and interval: '1.31x faster (+18% to +45%)', for large type) and 'detail'
        (the rest: '5 pairs vs tuned Adam 3e-3'), 'verdict' (`overall_verdict`, or None), 'tone'
        ('good' | 'bad' | 'neutral': green only for 'faster'), 'note' (a second line or None:
        missed or failed seeds, pairs without a ratio, outliers, the noise floor)}.
    """
    vs = f" vs {baseline_label}" if baseline_label else ""
    if not summary or summary.get("speedup") is None:
        n = (summary or {}).get("not_reached", 0)
        notes = [x for x in (misses_note(summary or {}),) if x]
        # Pairs that ran and missed, or none that ran to its end (Stop during the first baseline).
        main = ("no speedup yet" if in_progress else "no speedup: no pair where both sides reached the target"
                if n or notes else "no speedup: no pair ran to its end")
        if n and not notes:
            notes.append(f"{n} pair{'s' if n != 1 else ''} without a ratio")
        return {"text": main + vs, "main": main, "detail": vs.strip() or None,
                "verdict": None, "tone": "neutral", "note": "; ".join(notes) or None}
    n, x, ci = summary["pairs"], summary["speedup"], summary.get("ci95")
    v = overall_verdict(summary.get("verdict"), x, delta, floor)
    pairs = f"{n} pair{'s' if n != 1 else ''}"
    if n < MIN_PAIRS:
        # Two pairs give a t interval on 1 degree of freedom (t = 12.7): "±36114%, [0.00–322.90]"
        # was read mid-comparison. No interval or verdict before MIN_PAIRS, on any line.
        v = None
        main = (f"{ratio_text(x)} from {pairs} so far: interval from {MIN_PAIRS} pairs" if in_progress else
                f"{ratio_text(x)} from one pair: not a result (an interval needs {MIN_PAIRS} pairs)" if n == 1 else
                f"{ratio_text(x)} from {pairs}: too few pairs for a result (an interval needs {MIN_PAIRS})")
        detail = vs.strip()
        text = main + vs
    elif ci is None:
        v = None
        main = f"{ratio_text(x)} from {pairs}: no interval yet"
        detail = vs.strip()
        text = main + vs
    else:
        main = verdict_text(summary, v)
        detail = f"{pairs}{vs}{' so far' if in_progress else ''}{decide_text(summary, v)}"
        text = f"{main}, {detail}"
    notes = [x for x in (misses_note(summary),) if x]
    not_run = [m for m in summary.get("missing") or [] if "not run" in m.get("why", "")]
    if not_run:
        k = len(not_run)
        notes.append(f"{k} pair{'s' if k != 1 else ''} with a side not run (its other side failed)")
    if summary.get("outliers") and v is not None:
        idx = ", ".join(str(i + 1) for i in summary["outliers"])
        notes.append(f"pair{'s' if len(summary['outliers']) != 1 else ''} {idx} flagged as outlier "
                     "(modified z-score > 3.5): a stall?")
    if v is not None and below_floor(x, floor):
        notes.append(f"within a measured noise floor (±{floor * 100:.0f}%): not called faster or slower")
    tone = "good" if v == "faster" else "bad" if v == "slower" else "neutral"
    return {"text": text, "main": main, "detail": detail or None, "verdict": v, "tone": tone,
            "note": "; ".join(notes) or None}


MEASURE_NAMES = {"time_to_accuracy": "time to accuracy", "end_to_end": "end-to-end samples/s",
                 "steady": "steady samples/s"}


FACTOR_NAMES = {"throughput": "throughput", "sample_efficiency": "fewer samples",
                "outside_training": "fixed costs"}


def _secs(x: Optional[float]) -> str:
    return "?" if x is None else f"{x:.1f} s"


def factors_text(total: Optional[float], factors: Optional[dict]) -> Optional[str]:
    """The split of a time-to-accuracy speedup into factors that multiply to it, e.g.
    '4.51x = 1.77x throughput × 3.00x fewer samples × 0.85x fixed costs (1.0 s → 1.1 s
    outside steady training)': the last factor is the share that fixed seconds (warm-up,
    validation, the rest) take of each side's time, so the same seconds on both sides
    still read below 1x when the run trains for less; its seconds per side (means) are
    beside it. None without factors."""
    if not total or not factors or any((factors.get(k) or {}).get("speedup") is None for k in FACTOR_NAMES):
        return None
    parts = []
    for k, name in FACTOR_NAMES.items():
        x = factors[k]["speedup"]
        if k == "sample_efficiency" and x < 1:
            name = "sample efficiency (more samples)"
        if k == "outside_training":
            o = factors[k]
            name += (f" ({_secs(o.get('baseline_sec'))} → {_secs(o.get('run_sec'))} outside steady training)"
                     if o.get("baseline_sec") is not None or o.get("run_sec") is not None else "")
        parts.append(f"{ratio_text(x)} {name}")
    return f"{ratio_text(total)} = " + " × ".join(parts)


def with_setup_text(summary: Optional[dict], setup: Optional[dict] = None, short: bool = False) -> Optional[str]:
    """The start-to-end ratio beside a time-to-accuracy headline: each side's time to
    accuracy with its setup (interpreter, imports, devices, data, model) added, e.g.
    'start to target, setup included: 1.77x (setup 2.1 s → 6.3 s)'; `summary` is its
    `summarize` (engine.report.comparison.evaluate's 'with_setup'), `setup` {'baseline_sec',
    'run_sec'} (means); `short`: 'with setup 1.77x', for presenter mode's one line. None without one."""
    if not summary or summary.get("speedup") is None:
        return None
    if short:
        return f"with setup {ratio_text(summary['speedup'])}"
    span = f" ({interval_text(summary['ci95'])})" if summary.get("ci95") else ""
    secs = (f" (setup {_secs(setup.get('baseline_sec'))} → {_secs(setup.get('run_sec'))})"
            if setup and (setup.get("baseline_sec") is not None or setup.get("run_sec") is not None) else "")
    return f"start to target, setup included: {ratio_text(summary['speedup'])}{span}{secs}"


def reached_text(reached: Optional[dict]) -> Optional[str]:
    """'reached the target on 4 of 5 seeds; 1 failed (baseline 5 of 5)', or None without
    counts. Every seed of every counted pair is in the count: failed runs too."""
    if not reached or not reached.get("pairs"):
        return None
    n = reached["pairs"]

    def failed(side: str) -> str:
        k = reached.get(f"{side}_failed") or 0
        return f"; {k} failed" if k else ""

    nr, nb = reached.get("run_of", n), reached.get("baseline_of", n)  # a side dropped after a failure did not run
    return (f"reached the target on {reached['run']} of {nr} seed{'s' if nr != 1 else ''}{failed('run')} "
            f"(baseline {reached['baseline']} of {nb}{failed('baseline')})")


def test_accuracy_text(delta: Optional[dict], versus: str = "the baseline") -> Optional[str]:
    """'test accuracy +0.3 points (−0.4 to +1.0) vs the baseline, 5 pairs: held' (`versus` names
    the other side; 'held' when `accuracy_held`, 'not held (lower end below −0.5)' when not,
    'no interval yet' under MIN_PAIRS pairs), or None."""
    if not delta or delta.get("mean") is None:
        return None
    m, ci, n = delta["mean"] * 100, delta.get("ci95"), delta.get("pairs", 0)
    # A lower end that rounds to the margin gets a second decimal: "−0.52 ... not held", not "−0.5 ... not held".
    d = 2 if ci and f"{ci[0] * 100:.1f}" == f"{-TEST_ACCURACY_MARGIN * 100:.1f}" else 1
    span = f" ({ci[0] * 100:+.{d}f} to {ci[1] * 100:+.{d}f})" if ci else ""
    held = accuracy_held(delta)
    # Under MIN_PAIRS pairs nothing is held or not: a gain read "not held" in red at pair 1.
    word = ("held" if held else f"not held (needs the lower end above −{TEST_ACCURACY_MARGIN * 100:.1f})" if ci
            else f"no interval yet (it needs {MIN_PAIRS} pairs)")
    figures = f"{m:+.1f} points{span}".replace("-", "−")  # minus signs in the figures, not in `versus`
    return f"test accuracy {figures} vs {versus}, {n} pair{'s' if n != 1 else ''}: {word}"


def made_of_lines(result: Optional[dict], versus: str = "the baseline") -> list[str]:
    """What a paired speedup (`result`: 'speedup', 'factors', 'reached', 'test_accuracy_delta',
    'with_setup', 'setup', as the autopilot's confirmation stores each) is made of, in words:
    the split (`factors_text`), the start-to-end ratio (`with_setup_text`), the seeds reached
    (`reached_text`) and test accuracy against `versus` (`test_accuracy_text`), leaving out
    what is unknown."""
    r = result or {}
    lines = (factors_text(r.get("speedup"), r.get("factors")), with_setup_text(r.get("with_setup"), r.get("setup")),
             reached_text(r.get("reached")), test_accuracy_text(r.get("test_accuracy_delta"), versus))
    return [x for x in lines if x]


def comparison_headline(result: Optional[dict], in_progress: bool = False) -> dict:
    """`summary_headline` of a stored comparison result (engine.report.comparison.evaluate):
    its headline measure ('measure'), judged with the result's own noise floor
    (`result_floor`) and held-out test accuracy, plus 'measure' (name in words) and,
    when the time to accuracy could not be the headline, a note saying why; 'factors'
    (`factors_text`), 'setup' (`with_setup_text`), 'reached' (`reached_text`) and 'test'
    (`test_accuracy_text`), each None when unknown. Pure; no I/O."""
    if not result:
        return {**summary_headline(None, in_progress=in_progress), "measure": None, "factors": None, "setup": None,
                "reached": None, "test": None}
    measure = result.get("measure") or "time_to_accuracy"
    delta = result.get("test_accuracy_delta")
    h = summary_headline(result.get(measure), floor=result_floor(result, measure), in_progress=in_progress,
                 baseline_label=result.get("baseline_label"), delta=delta)
    tta = result.get("time_to_accuracy") or {}
    if measure != "time_to_accuracy" and result.get("target_accuracy") is not None and tta.get("not_reached"):
        k = tta["not_reached"]
        why = (f"time to {result['target_accuracy']:g} accuracy: {k} pair{'s' if k != 1 else ''} without a ratio "
               "(target not reached on both sides), so the headline is end-to-end samples/s")
        h["note"] = why if not h["note"] else f"{why}; {h['note']}"
    if result.get("overlap"):  # runs that shared the machine: said before any other note
        h["note"] = result["overlap"] if not h["note"] else f"{result['overlap']}; {h['note']}"
    h["measure"] = MEASURE_NAMES.get(measure, measure)
    enough = (result.get(measure) or {}).get("pairs", 0) >= MIN_PAIRS
    tta_head = measure == "time_to_accuracy" and enough
    h["factors"] = factors_text(tta.get("speedup"), result.get("factors")) if tta_head else None
    h["setup"] = with_setup_text(result.get("with_setup"), result.get("setup")) if tta_head else None
    h["reached"] = reached_text(result.get("reached"))
    h["test"] = test_accuracy_text(delta)
    if result.get("machines") and h["verdict"] is not None:  # two machines: said first, never green
        names = result["machines"].split(": ", 1)[-1]
        h.update(verdict=NOT_COMPARABLE, tone="neutral",
                 main=f"measured on two machines: {ratio_text(_headline_speedup(result))}, {NOT_COMPARABLE}",
                 detail=f"{names} · {h['detail']}" if h.get("detail") else names,
                 text=f"{result['machines']}: {h['text']} ({NOT_COMPARABLE})")
    return h


def _headline_speedup(result: dict) -> Optional[float]:
    """The headline measure's central ratio of a comparison result."""
    return (result.get(result.get("measure") or "time_to_accuracy") or {}).get("speedup")
