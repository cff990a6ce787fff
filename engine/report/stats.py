"""Statistics of a comparison made of repeated, interleaved pairs (no TF, no I/O).

A comparison of configuration B against A is a list of pairs (a_i, b_i), each
pair measured back to back on the same seed. What is compared per pair is a
*ratio* (a speedup: > 1 means B is faster): the baseline's time to accuracy /
the run's, or the run's samples/s / the baseline's. Timing noise on a shared
machine is multiplicative, so the statistics work on the log ratios:

- central value: the geometric mean of the ratios, exp(mean(log r)); the median
  is reported beside it;
- 95% interval: Student's t interval of the mean log ratio
  (``scipy.stats.t.interval``, df = n - 1), exponentiated. With the 3 to 5 pairs a
  comparison has, a bootstrap interval would be far too narrow (it cannot see
  beyond the few values it resamples); the t interval is exact for lognormal noise;
- adaptive comparisons (pairs added until the interval is narrow enough) use
  Stein's two-stage procedure (C. Stein 1945, "A two-sample test for a linear
  hypothesis whose power is independent of the variance", Ann. Math. Statist. 16):
  the spread s0 of the first MIN_PAIRS log ratios sets how many pairs are needed,
  N = ceil((t * s0 / ln(1 + d))^2), and the interval is mean(all N) ± t * s0 / sqrt(N),
  t with MIN_PAIRS - 1 degrees of freedom. Re-checking a plain t interval after
  each pair ("stop once it is narrow") gives wrong verdicts 7% of the time instead
  of 5% (tests/test_comparison_stats.py simulates both); Stein's is exact;
- verdict: 'faster' when the interval lies above 1, 'slower' when below,
  otherwise 'no difference' (within noise: ±x%, x the interval's half width);
  None with fewer than 2 usable pairs (no interval).

A pair in which one side has no value (it did not reach the target accuracy, or
it failed) has no ratio: it is counted in 'not_reached' with the side that
missed, never dropped silently.

This is the one implementation behind the CLI (`run --baseline`, `noise`,
`compare`), the Train page, presenter mode, Replay, the Runs page and the
autopilot's confirmation re-runs (pyperf, hyperfine and Criterion.rs report the
same kind of figure: a central value, an interval and "within noise").
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

CONFIDENCE = 0.95
# Adaptive comparisons add pairs until the interval is within ±TARGET_HALF_WIDTH
# (relative), or MAX_PAIRS, or the time budget; never before MIN_PAIRS.
TARGET_HALF_WIDTH = 0.10
MIN_PAIRS = 3
MAX_PAIRS = 5

VERDICTS = ("faster", "slower", "no difference")


def pair_ratio(baseline: Optional[float], run: Optional[float], higher_is_better: bool) -> Optional[float]:
    """One pair's speedup: run / baseline for a rate (samples/s, `higher_is_better`),
    baseline / run for a time (s). None when a side is missing or not positive."""
    if baseline is None or run is None or not baseline > 0 or not run > 0:
        return None
    return run / baseline if higher_is_better else baseline / run


def missing_side(baseline: Optional[float], run: Optional[float]) -> Optional[str]:
    """Which side of a pair has no value: 'baseline', 'run', 'both', or None."""
    b, r = baseline is None, run is None
    return "both" if b and r else "baseline" if b else "run" if r else None


def _t(confidence: float, df: int) -> float:
    from scipy import stats

    return float(stats.t.ppf((1 + confidence) / 2, df))


def stein_interval(ratios: Sequence[float], first_stage: int, confidence: float = CONFIDENCE
                   ) -> Optional[tuple[float, float]]:
    """Stein's two-stage interval of the geometric mean of `ratios` (all > 0): the
    mean log ratio of all of them ± t(df = first_stage - 1) * s0 / sqrt(n), s0 the
    sample sd of the first `first_stage` log ratios. None with fewer ratios than
    `first_stage` (or first_stage < 2)."""
    import statistics

    n = len(ratios)
    if first_stage < 2 or n < first_stage:
        return None
    logs = [math.log(r) for r in ratios]
    s0 = statistics.stdev(logs[:first_stage])
    mean = sum(logs) / n
    half = _t(confidence, first_stage - 1) * s0 / math.sqrt(n)
    return (math.exp(mean - half), math.exp(mean + half))


def pairs_needed(ratios: Sequence[float], target_half_width: float = TARGET_HALF_WIDTH,
                 first_stage: int = MIN_PAIRS, confidence: float = CONFIDENCE) -> Optional[int]:
    """Stein's second stage: how many usable pairs bring the interval within
    ±`target_half_width` (relative), from the spread of the first `first_stage`
    ratios; None before there are that many."""
    import statistics

    if len(ratios) < first_stage or first_stage < 2:
        return None
    s0 = statistics.stdev([math.log(r) for r in ratios[:first_stage]])
    return max(first_stage, math.ceil((_t(confidence, first_stage - 1) * s0 / math.log1p(target_half_width)) ** 2))


def log_ratio_interval(ratios: Sequence[float], confidence: float = CONFIDENCE) -> Optional[tuple[float, float]]:
    """Student's t interval of the geometric mean of `ratios` (all > 0), as
    (low, high) ratios; None with fewer than 2 ratios. Identical ratios give a
    zero-width interval at that ratio.

    Raises: ValueError for a ratio <= 0.
    """
    from scipy import stats

    if any(r <= 0 for r in ratios):
        raise ValueError(f"ratios must be > 0: {list(ratios)}")
    n = len(ratios)
    if n < 2:
        return None
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / n
    sem = stats.sem(logs)
    if sem == 0:
        return (math.exp(mean), math.exp(mean))
    lo, hi = stats.t.interval(confidence, n - 1, loc=mean, scale=sem)
    return (math.exp(lo), math.exp(hi))


def one_pair_interval(ratio: float, reference_ratios: Sequence[float], confidence: float = CONFIDENCE
                      ) -> Optional[tuple[float, float]]:
    """Interval of a ratio measured from ONE pair, with the noise of one pair taken
    from `reference_ratios`: n other pairs measured the same way on the same
    machine (the autopilot's confirming pairs, for its ablation). With s the sample
    sd of their log ratios, log(ratio) ± t(df = n - 1) * s, exponentiated: if every
    pair's log ratio has the same spread, (log ratio - its true value) / s follows
    Student's t with n - 1 degrees of freedom, so the interval holds the true ratio
    with `confidence`. It is sqrt(n) times as wide as the reference pairs' own
    interval (`log_ratio_interval`). None with fewer than 2 reference ratios.

    Raises: ValueError for a ratio <= 0.
    """
    import statistics

    if ratio <= 0 or any(r <= 0 for r in reference_ratios):
        raise ValueError(f"ratios must be > 0: {ratio}, {list(reference_ratios)}")
    n = len(reference_ratios)
    if n < 2:
        return None
    half = _t(confidence, n - 1) * statistics.stdev([math.log(r) for r in reference_ratios])
    return (math.exp(math.log(ratio) - half), math.exp(math.log(ratio) + half))


def half_width(ci: Optional[Sequence[float]]) -> Optional[float]:
    """The interval's relative half width (0.08 = ±8%): sqrt(high / low) - 1, the
    ± of a symmetric interval in log space; None without an interval."""
    if not ci:
        return None
    return math.sqrt(ci[1] / ci[0]) - 1


def verdict(ci: Optional[Sequence[float]]) -> Optional[str]:
    """'faster' if the interval lies above 1, 'slower' if below, else 'no difference';
    None without an interval. An end exactly at 1 counts as including 1."""
    if not ci:
        return None
    if ci[0] > 1:
        return "faster"
    if ci[1] < 1:
        return "slower"
    return "no difference"


def summarize(baseline: Sequence[Optional[float]], run: Sequence[Optional[float]], higher_is_better: bool,
              confidence: float = CONFIDENCE, first_stage: Optional[int] = None) -> dict:
    """Statistics of one measure over the pairs (baseline[i], run[i]).

    Args:
        baseline, run: per pair, the measure of each side (s, or samples/s), None
            where that side has none (e.g. the target accuracy was not reached).
        higher_is_better: True for rates (samples/s), False for times (s).
        first_stage: an adaptive comparison's first stage (MIN_PAIRS): once it has
            that many usable pairs, the interval is Stein's (`stein_interval`);
            None: the t interval of a fixed number of pairs (`log_ratio_interval`).
    Returns: {'speedup' (geometric mean of the pair ratios), 'median', 'ci95'
        ([low, high] or None), 'half_width' (relative ±, or None), 'verdict'
        (VERDICTS or None), 'pair_ratios' (per pair, None where not usable),
        'pairs' (pairs with a ratio), 'not_reached' (pairs without one),
        'missing' (per such pair: {'pair' (0-based), 'side'}), 'method' ('t' or
        'stein')}.
    Raises: ValueError when the two lists differ in length.
    """
    import statistics

    if len(baseline) != len(run):
        raise ValueError(f"{len(baseline)} baseline values for {len(run)} run values")
    ratios = [pair_ratio(b, r, higher_is_better) for b, r in zip(baseline, run)]
    usable = [x for x in ratios if x is not None]
    missing = [{"pair": i, "side": missing_side(b, r) or "both"}
               for i, (b, r, x) in enumerate(zip(baseline, run, ratios)) if x is None]
    stein = first_stage is not None and len(usable) >= first_stage
    ci = stein_interval(usable, first_stage, confidence) if stein else log_ratio_interval(usable, confidence)
    return {
        "speedup": math.exp(sum(math.log(x) for x in usable) / len(usable)) if usable else None,
        "median": statistics.median(usable) if usable else None,
        "ci95": list(ci) if ci else None,
        "half_width": half_width(ci),
        "verdict": verdict(ci),
        "pair_ratios": ratios,
        "pairs": len(usable),
        "not_reached": len(missing),
        "missing": missing,
        "method": "stein" if stein else "t",
    }


def adaptive_stop(summary: dict, pairs_done: int, max_pairs: int = MAX_PAIRS,
                  target_half_width: float = TARGET_HALF_WIDTH, min_pairs: int = MIN_PAIRS) -> Optional[str]:
    """The adaptive rule, after each complete pair (`pairs_done`, with or without a
    ratio): 'precise' once the usable pairs reach Stein's `pairs_needed` for
    ±`target_half_width`, 'pair limit' at `max_pairs`, else None (add a pair). The
    decision depends only on the first stage's spread, never on where the interval
    lies, so the false-verdict rate stays at 1 - confidence. The time budget is the caller's."""
    usable = [r for r in summary.get("pair_ratios") or [] if r is not None]
    need = pairs_needed(usable, target_half_width, min_pairs)
    if need is not None and len(usable) >= need:
        return "precise"
    if pairs_done >= max_pairs:
        return "pair limit"
    return None


def below_floor(speedup: Optional[float], floor: Optional[float]) -> bool:
    """Whether an effect is smaller than this machine's noise floor: |log speedup|
    under log(1 + floor), `floor` the relative half width of an A/A comparison."""
    if speedup is None or not floor or speedup <= 0:
        return False
    return abs(math.log(speedup)) < math.log1p(floor)


def fmt_ratio(x: Optional[float]) -> str:
    """'1.31x' (2 decimals, as every SpeedLab speedup), '–' for none."""
    return "–" if x is None else f"{x:.2f}x"


def headline(summary: Optional[dict], floor: Optional[float] = None, in_progress: bool = False) -> dict:
    """The words of a comparison's headline, for every place that shows one
    (Train page, presenter mode, Replay, Runs page, CLI, autopilot).

    Args:
        summary: `summarize` of the measure the headline is about (time to
            accuracy, else end-to-end), or None.
        floor: this machine's noise floor (relative half width of its A/A
            comparison), or None when not measured.
        in_progress: more pairs are coming: the text says so, and holds the interval and
            verdict back until MIN_PAIRS pairs are in.
    Returns: {'text': e.g. '1.31x faster [1.18–1.45], 5 pairs', 'verdict'
        (VERDICTS or None), 'tone' ('good' | 'bad' | 'neutral': green only when
        the interval lies above 1), 'note' (a second line or None: pairs not
        reached, below the noise floor, too few pairs)}.
    """
    if not summary or summary.get("speedup") is None:
        n = (summary or {}).get("not_reached", 0)
        return {"text": "no speedup yet" if in_progress else "no speedup: no complete pair",
                "verdict": None, "tone": "neutral",
                "note": f"{n} pair{'s' if n != 1 else ''} without a ratio (target not reached)" if n else None}
    n, x, ci, v = summary["pairs"], summary["speedup"], summary.get("ci95"), summary.get("verdict")
    pairs = f"{n} pair{'s' if n != 1 else ''}"
    if in_progress and n < MIN_PAIRS:
        # Two pairs give a t interval on 1 degree of freedom (t = 12.7): "±36114%, [0.00–322.90]"
        # was read mid-comparison. The interval and verdict wait for MIN_PAIRS.
        text, v = f"{fmt_ratio(x)} from {pairs} so far: interval from {MIN_PAIRS} pairs", None
    elif ci is None:
        text = f"{fmt_ratio(x)} from {pairs}: no interval yet"
    elif v == "no difference":
        text = f"no difference within noise (±{summary['half_width'] * 100:.0f}%): {fmt_ratio(x)} [{ci[0]:.2f}–{ci[1]:.2f}], {pairs}"
    else:
        text = f"{fmt_ratio(x)} {v} [{ci[0]:.2f}–{ci[1]:.2f}], {pairs}"
    if in_progress and n >= MIN_PAIRS:
        text += " so far"
    notes = []
    if summary.get("not_reached"):
        k = summary["not_reached"]
        sides = sorted({m["side"] for m in summary.get("missing", [])})
        notes.append(f"{k} pair{'s' if k != 1 else ''} without a ratio ({', '.join(sides)} did not reach the target)")
    if below_floor(x, floor):
        notes.append(f"below this machine's noise floor (±{floor * 100:.0f}%)")
    tone = "good" if v == "faster" else "bad" if v == "slower" else "neutral"
    return {"text": text, "verdict": v, "tone": tone, "note": "; ".join(notes) or None}


MEASURE_NAMES = {"time_to_accuracy": "time to accuracy", "end_to_end": "end-to-end samples/s",
                 "steady": "steady samples/s"}


def comparison_headline(result: Optional[dict], floor: Optional[float] = None, in_progress: bool = False) -> dict:
    """`headline` of a stored comparison result (engine.jobs.comparison.evaluate):
    its headline measure ('measure'), plus 'measure' (name in words) and, when the
    time to accuracy could not be the headline, a note saying why. Pure; no I/O."""
    if not result:
        return {**headline(None, in_progress=in_progress), "measure": None}
    measure = result.get("measure") or "time_to_accuracy"
    h = headline(result.get(measure), floor=floor, in_progress=in_progress)
    tta = result.get("time_to_accuracy") or {}
    if measure != "time_to_accuracy" and result.get("target_accuracy") is not None and tta.get("not_reached"):
        k = tta["not_reached"]
        why = (f"time to {result['target_accuracy']:g} accuracy: {k} pair{'s' if k != 1 else ''} without a ratio "
               "(target not reached on both sides); the headline is end-to-end samples/s")
        h["note"] = why if not h["note"] else f"{why}; {h['note']}"
    h["measure"] = MEASURE_NAMES.get(measure, measure)
    return h
