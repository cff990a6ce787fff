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
- stalls: a shared machine sometimes slows one run by 1.5-3x. Stein's width comes from
  the first stage only, so a stall in pair 4 or 5 would move the mean without widening
  the interval (9.7% wrong verdicts in A/A simulations). Past the first stage the
  interval is the wider of Stein's and the plain t interval over all pairs (3% in the
  same simulation, tests/test_comparison_stats.py), and a pair whose log ratio has a
  modified z-score above 3.5 (Iglewicz & Hoaglin 1993, as hyperfine flags outliers) is
  named as an outlier;
- verdict (the wording of Criterion.rs and asv, not "no difference"): 'faster' when
  the interval lies above 1, 'slower' when below, 'equivalent' when it lies inside
  ±margin (symmetric in log space: [1/(1+m), 1+m]), otherwise 'inconclusive', with
  Stein's estimate of how many pairs would decide it; None with fewer than 2 usable
  pairs (no interval).

Every seed counts. A pair in which one side did not reach the target accuracy keeps
a **censored** ratio when that side's training time is known (`censored_*`): its time
at its last validation stands in for its time to accuracy, which is longer. For a
candidate that missed, the ratio is then an upper bound of the true one, so such a
comparison is never called 'faster' (nor 'equivalent'); for a baseline that missed it
is a lower bound, and the comparison is never called 'slower' (nor 'equivalent'). A
pair in which both sides missed, or one failed, has no ratio: it is counted in
'not_reached' with the side that missed, never dropped silently.

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

VERDICTS = ("faster", "slower", "equivalent", "inconclusive")
# The narrowest equivalence margin: 'equivalent' needs the interval inside ±2% or
# inside this machine's noise floor, whichever is wider.
MIN_MARGIN = 0.02
# Modified z-score above which a pair is flagged as an outlier (Iglewicz & Hoaglin 1993).
OUTLIER_Z = 3.5
# A speedup whose test accuracy is lower than the baseline's by more than this (fraction:
# 0.005 = 0.5 points) is flagged and never shown green.
TEST_ACCURACY_MARGIN = 0.005
# How every page and the CLI label a ratio from a single pair: a sample, not a result.
ONE_PAIR_LABEL = "one pair: not a result"


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


def verdict(ci: Optional[Sequence[float]], margin: Optional[float] = None,
            censored_sides: Sequence[str] = ()) -> Optional[str]:
    """The verdict of an interval of speedups: 'faster' if it lies above 1, 'slower' if
    below, 'equivalent' if it lies inside [1 / (1 + margin), 1 + margin], else
    'inconclusive'; None without an interval. An end exactly at 1 counts as including 1.

    censored_sides: the sides with a censored ratio ('run', 'baseline'; see the module
    docstring). A censored candidate rules out 'faster', a censored baseline 'slower',
    and either rules out 'equivalent': those claims would rest on a bound.
    """
    if not ci:
        return None
    if ci[0] > 1 and "run" not in censored_sides:
        return "faster"
    if ci[1] < 1 and "baseline" not in censored_sides:
        return "slower"
    if margin and not censored_sides and ci[0] >= 1 / (1 + margin) and ci[1] <= 1 + margin:
        return "equivalent"
    return "inconclusive"


def outliers(ratios: Sequence[Optional[float]], z: float = OUTLIER_Z) -> list[int]:
    """Indices of the ratios whose log has a modified z-score 0.6745 |x - median| / MAD
    above `z` (Iglewicz & Hoaglin 1993; hyperfine's outlier warning). None entries are
    skipped; fewer than 3 ratios, or a MAD of 0, flag nothing."""
    import statistics

    logs = {i: math.log(r) for i, r in enumerate(ratios) if r is not None and r > 0}
    if len(logs) < 3:
        return []
    med = statistics.median(logs.values())
    mad = statistics.median(abs(x - med) for x in logs.values())
    if mad == 0:
        return []
    return [i for i, x in logs.items() if 0.6745 * abs(x - med) / mad > z]


def pairs_to_decide(ratios: Sequence[float], margin: Optional[float] = None, first_stage: int = MIN_PAIRS,
                    confidence: float = CONFIDENCE) -> Optional[int]:
    """Stein's estimate of how many usable pairs in all would decide an inconclusive
    comparison: the fewest N whose interval half width t * s / sqrt(N) (s the larger of
    the first stage's and all pairs' sd of log ratios, t with first_stage - 1 df) puts
    the interval on one side of 1 (|mean log| > half) or inside ±margin
    (|mean log| + half < log(1 + margin)), whichever needs fewer. None before the first
    stage, or when no N can decide (no spread and no effect)."""
    import statistics

    n = len(ratios)
    if n < max(first_stage, 2):
        return None
    logs = [math.log(r) for r in ratios]
    s = statistics.stdev(logs[:first_stage])
    if n > first_stage:
        s = max(s, statistics.stdev(logs))
    m = abs(sum(logs) / n)
    t = _t(confidence, first_stage - 1)
    if s == 0:
        return None
    candidates = []
    if m > 0:
        candidates.append(math.ceil((t * s / m) ** 2))
    if margin and m < math.log1p(margin):
        candidates.append(math.ceil((t * s / (math.log1p(margin) - m)) ** 2))
    return max(min(candidates), n + 1) if candidates else None


def fmt_interval(ci: Optional[Sequence[float]]) -> str:
    """An interval of speedups as its two ends in percent, e.g. '−74% to +286%' for
    [0.26, 3.86] (asymmetric ends, never '±'); '–' for none."""
    if not ci:
        return "–"

    def pct(x: float) -> str:
        v = (x - 1) * 100
        return f"{'+' if v >= 0 else '−'}{abs(v):.0f}%"

    return f"{pct(ci[0])} to {pct(ci[1])}"


def summarize(baseline: Sequence[Optional[float]], run: Sequence[Optional[float]], higher_is_better: bool,
              confidence: float = CONFIDENCE, first_stage: Optional[int] = None,
              censored_baseline: Optional[Sequence[Optional[float]]] = None,
              censored_run: Optional[Sequence[Optional[float]]] = None,
              margin: Optional[float] = None) -> dict:
    """Statistics of one measure over the pairs (baseline[i], run[i]).

    Args:
        baseline, run: per pair, the measure of each side (s, or samples/s), None
            where that side has none (e.g. the target accuracy was not reached).
        higher_is_better: True for rates (samples/s), False for times (s).
        first_stage: an adaptive comparison's first stage (MIN_PAIRS): once it has
            that many usable pairs, the interval is Stein's (`stein_interval`),
            widened to the plain t interval over all pairs when that is wider (stalls);
            None: the t interval of a fixed number of pairs (`log_ratio_interval`).
        censored_baseline, censored_run: per pair, a side's censored value where its
            own is None (for a time to accuracy: its time at its last validation,
            s), else None; see the module docstring.
        margin: the equivalence margin (relative, 0.05 = ±5%); None: no 'equivalent'.
    Returns: {'speedup' (geometric mean of the pair ratios), 'median', 'ci95'
        ([low, high] or None), 'half_width' (relative ±, or None), 'verdict'
        (VERDICTS or None), 'pair_ratios' (per pair, None where not usable),
        'pairs' (pairs with a ratio), 'not_reached' (pairs without one; ci95 and
        verdict stay None under MIN_PAIRS usable pairs),
        'missing' (per such pair: {'pair' (0-based), 'side'}), 'censored' (per pair
        with a censored ratio: {'pair', 'side'}), 'outliers' (0-based pairs flagged by
        `outliers`), 'margin', 'pairs_to_decide' (usable pairs in all that would decide an
        inconclusive verdict, else None), 'method' ('t' or 'stein')}.
    Raises: ValueError when the lists differ in length.
    """
    import statistics

    if len(baseline) != len(run):
        raise ValueError(f"{len(baseline)} baseline values for {len(run)} run values")
    cb = list(censored_baseline) if censored_baseline is not None else [None] * len(baseline)
    cr = list(censored_run) if censored_run is not None else [None] * len(run)
    if len(cb) != len(baseline) or len(cr) != len(run):
        raise ValueError("censored values must have one entry per pair")
    ratios, missing, censored = [], [], []
    for i, (b, r) in enumerate(zip(baseline, run)):
        x = pair_ratio(b, r, higher_is_better)
        if x is None and b is not None and r is None and cr[i] is not None:
            x, side = pair_ratio(b, cr[i], higher_is_better), "run"
        elif x is None and b is None and r is not None and cb[i] is not None:
            x, side = pair_ratio(cb[i], r, higher_is_better), "baseline"
        else:
            side = None
        if x is None:
            missing.append({"pair": i, "side": missing_side(b, r) or "both"})
        elif side:
            censored.append({"pair": i, "side": side})
        ratios.append(x)
    usable = [x for x in ratios if x is not None]
    stein = first_stage is not None and len(usable) >= first_stage
    ci = stein_interval(usable, first_stage, confidence) if stein else log_ratio_interval(usable, confidence)
    if len(usable) < MIN_PAIRS:
        # Two pairs give a t interval on 1 degree of freedom (t = 12.7): no interval, no verdict.
        ci = None
    elif stein and len(usable) > first_stage:
        plain = log_ratio_interval(usable, confidence)
        if plain and plain[1] / plain[0] > ci[1] / ci[0]:  # a stall after the first stage widens it
            ci = plain
    sides = sorted({c["side"] for c in censored})
    v = verdict(ci, margin, sides)
    return {
        "speedup": math.exp(sum(math.log(x) for x in usable) / len(usable)) if usable else None,
        "median": statistics.median(usable) if usable else None,
        "ci95": list(ci) if ci else None,
        "half_width": half_width(ci),
        "verdict": v,
        "pair_ratios": ratios,
        "pairs": len(usable),
        "not_reached": len(missing),
        "missing": missing,
        "censored": censored,
        "outliers": outliers(ratios),
        "margin": margin,
        "pairs_to_decide": pairs_to_decide(usable, margin, first_stage or MIN_PAIRS, confidence)
        if v == "inconclusive" else None,
        "method": "stein" if stein else "t",
    }


def adaptive_stop(summary: dict, pairs_done: int, max_pairs: int = MAX_PAIRS,
                  target_half_width: float = TARGET_HALF_WIDTH, min_pairs: int = MIN_PAIRS) -> Optional[str]:
    """The adaptive rule, after each complete pair (`pairs_done`, with or without a
    ratio): 'precise' once the usable pairs reach Stein's `pairs_needed` for
    ±`target_half_width` (from the first stage's spread, or from all pairs' spread
    when a stall made that larger), 'pair limit' at `max_pairs`, else None (add a
    pair). The decision depends only on spreads, never on where the interval lies,
    so the false-verdict rate stays near 1 - confidence. The time budget is the caller's."""
    usable = [r for r in summary.get("pair_ratios") or [] if r is not None]
    need = pairs_needed(usable, target_half_width, min_pairs)
    if need is not None and len(usable) > min_pairs:
        need = max(need, pairs_needed(usable, target_half_width, len(usable)) or need)
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


def decide_text(summary: dict) -> str:
    """'; about 23 pairs in all would decide' for an inconclusive summary with Stein's
    estimate (`pairs_to_decide`), else ''."""
    more = summary.get("pairs_to_decide") if summary.get("verdict") == "inconclusive" else None
    return f"; about {more} pairs in all would decide" if more else ""


def verdict_text(summary: dict) -> str:
    """The words of a summary with an interval, e.g. '1.31x faster (+18% to +45%)',
    'equivalent within ±5%: 1.01x (−2% to +4%)', 'inconclusive: 0.80x (−79% to +209%)'."""
    x, ci, v = summary.get("speedup"), summary.get("ci95"), summary.get("verdict")
    span = f"{fmt_ratio(x)} ({fmt_interval(ci)})"
    if v == "equivalent":
        return f"equivalent within ±{summary['margin'] * 100:.0f}%: {span}"
    if v == "inconclusive":
        return f"inconclusive: {span}"
    return f"{fmt_ratio(x)} {v} ({fmt_interval(ci)})"


def headline(summary: Optional[dict], floor: Optional[float] = None, in_progress: bool = False,
             baseline_label: Optional[str] = None) -> dict:
    """The words of a comparison's headline, for every place that shows one
    (Train page, presenter mode, Replay, Runs page, CLI, autopilot).

    Args:
        summary: `summarize` of the measure the headline is about (time to
            accuracy, else end-to-end), or None.
        floor: this machine's noise floor for that measure (relative half width of
            its A/A comparison), or None when not measured.
        in_progress: more pairs are coming: the text says so, and holds the interval and
            verdict back until MIN_PAIRS pairs are in.
        baseline_label: what the baseline is, e.g. 'Keras-default Adam 1e-3'; the
            text ends with 'vs <label>'.
    Returns: {'text': e.g. '1.31x faster (+18% to +45%), 5 pairs vs tuned Adam 3e-3', 'main'
        (the verdict and interval: '1.31x faster (+18% to +45%)', for large type) and 'detail'
        (the rest: '5 pairs vs tuned Adam 3e-3'), 'verdict' (VERDICTS or None), 'tone' ('good' | 'bad' | 'neutral': green only for
        'faster'), 'note' (a second line or None: censored or missing pairs, outliers,
        below the noise floor)}.
    """
    vs = f" vs {baseline_label}" if baseline_label else ""
    if not summary or summary.get("speedup") is None:
        n = (summary or {}).get("not_reached", 0)
        main = "no speedup yet" if in_progress else "no speedup: no complete pair"
        return {"text": main + vs, "main": main, "detail": vs.strip() or None,
                "verdict": None, "tone": "neutral",
                "note": f"{n} pair{'s' if n != 1 else ''} without a ratio (target not reached)" if n else None}
    n, x, ci, v = summary["pairs"], summary["speedup"], summary.get("ci95"), summary.get("verdict")
    pairs = f"{n} pair{'s' if n != 1 else ''}"
    if n < MIN_PAIRS:
        # Two pairs give a t interval on 1 degree of freedom (t = 12.7): "±36114%, [0.00–322.90]"
        # was read mid-comparison. No interval or verdict before MIN_PAIRS, on any line.
        v = None
        main = (f"{fmt_ratio(x)} from {pairs} so far: interval from {MIN_PAIRS} pairs" if in_progress else
                f"{fmt_ratio(x)} from {pairs}: {ONE_PAIR_LABEL if n == 1 else 'too few pairs for a result'} "
                f"(an interval needs {MIN_PAIRS})")
        detail = vs.strip()
        text = main + vs
    elif ci is None:
        v = None
        main = f"{fmt_ratio(x)} from {pairs}: no interval yet"
        detail = vs.strip()
        text = main + vs
    else:
        main = verdict_text(summary)
        detail = f"{pairs}{vs}{' so far' if in_progress else ''}{decide_text(summary)}"
        text = f"{main}, {detail}"
    notes = []
    if summary.get("censored"):
        runs = sum(c["side"] == "run" for c in summary["censored"])
        bases = len(summary["censored"]) - runs
        parts = ([f"the candidate missed the target on {runs} seed{'s' if runs != 1 else ''} (its ratio there is an "
                  "upper bound: no 'faster')"] if runs else []) + \
                ([f"the baseline missed on {bases} seed{'s' if bases != 1 else ''} (a lower bound there: no 'slower')"]
                 if bases else [])
        notes.append("; ".join(parts))
    if summary.get("not_reached"):
        k = summary["not_reached"]
        sides = sorted({m["side"] for m in summary.get("missing", [])})
        notes.append(f"{k} pair{'s' if k != 1 else ''} without a ratio ({', '.join(sides)} did not reach the target)")
    if summary.get("outliers") and v is not None:
        idx = ", ".join(str(i + 1) for i in summary["outliers"])
        notes.append(f"pair{'s' if len(summary['outliers']) != 1 else ''} {idx} flagged as outlier "
                     "(modified z-score > 3.5): a stall?")
    if v is not None and below_floor(x, floor):
        notes.append(f"below this machine's noise floor (±{floor * 100:.0f}%)")
    tone = "good" if v == "faster" else "bad" if v == "slower" else "neutral"
    return {"text": text, "main": main, "detail": detail or None, "verdict": v, "tone": tone,
            "note": "; ".join(notes) or None}


MEASURE_NAMES = {"time_to_accuracy": "time to accuracy", "end_to_end": "end-to-end samples/s",
                 "steady": "steady samples/s"}


FACTOR_NAMES = {"throughput": "throughput", "sample_efficiency": "fewer samples",
                "outside_training": "time outside training"}


def factors_text(total: Optional[float], factors: Optional[dict]) -> Optional[str]:
    """The split of a time-to-accuracy speedup into factors that multiply to it, e.g.
    '4.51x = 1.77x throughput × 3.00x fewer samples × 0.85x time outside training';
    None without factors."""
    if not total or not factors or any((factors.get(k) or {}).get("speedup") is None for k in FACTOR_NAMES):
        return None
    parts = []
    for k, name in FACTOR_NAMES.items():
        x = factors[k]["speedup"]
        if k == "sample_efficiency" and x < 1:
            name = "sample efficiency (more samples)"
        parts.append(f"{fmt_ratio(x)} {name}")
    return f"{fmt_ratio(total)} = " + " × ".join(parts)


def reached_text(reached: Optional[dict]) -> Optional[str]:
    """'reached the target on 4 of 5 seeds (baseline 5 of 5)', or None without counts."""
    if not reached or not reached.get("pairs"):
        return None
    n = reached["pairs"]
    return (f"reached the target on {reached['run']} of {n} seed{'s' if n != 1 else ''} "
            f"(baseline {reached['baseline']} of {n})")


def test_accuracy_text(delta: Optional[dict], versus: str = "the baseline") -> Optional[str]:
    """'test accuracy +0.3 points (−0.4 to +1.0) vs the baseline, 5 pairs' (`versus` names the
    other side), or None."""
    if not delta or delta.get("mean") is None:
        return None
    m, ci, n = delta["mean"] * 100, delta.get("ci95"), delta.get("pairs", 0)
    span = f" ({ci[0] * 100:+.1f} to {ci[1] * 100:+.1f})".replace("-", "−") if ci else ""
    return f"test accuracy {m:+.1f} points{span} vs {versus}, {n} pair{'s' if n != 1 else ''}".replace("-", "−")


def made_of_lines(result: Optional[dict], versus: str = "the baseline") -> list[str]:
    """What a paired speedup (`result`: 'speedup', 'factors', 'reached', 'test_accuracy_delta',
    as the autopilot's confirmation stores each) is made of, in words: the split
    (`factors_text`), the seeds reached (`reached_text`) and test accuracy against `versus`
    (`test_accuracy_text`), leaving out what is unknown."""
    r = result or {}
    lines = (factors_text(r.get("speedup"), r.get("factors")), reached_text(r.get("reached")),
             test_accuracy_text(r.get("test_accuracy_delta"), versus))
    return [x for x in lines if x]


def comparison_headline(result: Optional[dict], floor: Optional[float] = None, in_progress: bool = False) -> dict:
    """`headline` of a stored comparison result (engine.report.comparison.evaluate):
    its headline measure ('measure'), plus 'measure' (name in words) and, when the
    time to accuracy could not be the headline, a note saying why; 'factors'
    (`factors_text`), 'reached' (`reached_text`) and 'test' (`test_accuracy_text`),
    each None when unknown. Test accuracy lower than the baseline's by more than
    TEST_ACCURACY_MARGIN turns a green 'faster' neutral and says so. Pure; no I/O."""
    if not result:
        return {**headline(None, in_progress=in_progress), "measure": None, "factors": None, "reached": None,
                "test": None}
    measure = result.get("measure") or "time_to_accuracy"
    h = headline(result.get(measure), floor=floor, in_progress=in_progress,
                 baseline_label=result.get("baseline_label"))
    tta = result.get("time_to_accuracy") or {}
    if measure != "time_to_accuracy" and result.get("target_accuracy") is not None and tta.get("not_reached"):
        k = tta["not_reached"]
        why = (f"time to {result['target_accuracy']:g} accuracy: {k} pair{'s' if k != 1 else ''} without a ratio "
               "(target not reached on both sides); the headline is end-to-end samples/s")
        h["note"] = why if not h["note"] else f"{why}; {h['note']}"
    h["measure"] = MEASURE_NAMES.get(measure, measure)
    enough = (result.get(measure) or {}).get("pairs", 0) >= MIN_PAIRS
    h["factors"] = factors_text(tta.get("speedup"), result.get("factors")) \
        if measure == "time_to_accuracy" and enough else None
    h["reached"] = reached_text(result.get("reached"))
    delta = result.get("test_accuracy_delta")
    h["test"] = test_accuracy_text(delta)
    if delta and delta.get("mean") is not None and delta["mean"] < -TEST_ACCURACY_MARGIN:
        low = (f"test accuracy lower by {-delta['mean'] * 100:.1f} points (more than "
               f"{TEST_ACCURACY_MARGIN * 100:.1f}): not a clean win")
        h["note"] = low if not h["note"] else f"{low}; {h['note']}"
        if h["tone"] == "good":
            h["tone"] = "neutral"
    return h
