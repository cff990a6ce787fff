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
- curtailment: an adaptive comparison also stops once no split of the pairs left between
  the lowest and highest ratio seen could change a 'faster', 'slower' or 'equivalent'
  verdict (`verdict_settled`, checked at those corners), nor, for a 'faster', whether test
  accuracy held, with the pairs left within the range of the test accuracy differences seen
  (`accuracy_settled`). An assumption, not a test: its words say so;
- verdict (the wording of Criterion.rs and asv, not "no difference"): 'faster' when
  the interval lies above 1, 'slower' when below, 'equivalent' when it lies inside
  ±margin (symmetric in log space: [1/(1+m), 1+m]; m a fixed DEFAULT_MARGIN = 5% unless
  the user sets it, as Criterion's noise threshold), otherwise 'inconclusive', with the
  pairs that 80% power at the observed effect would need (`pairs_for_power`, a range);
  None with fewer than MIN_PAIRS usable pairs (no interval). A measured noise floor
  only widens 'inconclusive' (`overall_verdict`); it never widens 'equivalent';
- test accuracy: 'faster' needs the held-out test accuracy to hold, i.e. the lower end
  of the interval of (run − baseline) above −TEST_ACCURACY_MARGIN (non-inferiority);
  otherwise the verdict is FASTER_NOT_HELD ('faster, accuracy not held').

Every seed counts, and a bound is not an estimate. Each side of each pair has an
outcome ('reached', 'missed': completed without reaching the target, 'failed': diverged
or crashed, 'not run': dropped after its pair's other side failed). Only pairs whose
two sides have a value give a ratio; the others are counted in 'not_reached' with
the side and why, never dropped. A candidate that missed or failed on any seed rules
out 'faster' (and 'equivalent'), a baseline that did 'slower' (and 'equivalent'): a
claim about every seed cannot rest on the seeds that happened to reach.

This is the one implementation behind the CLI (`run --baseline`, `noise`,
`compare`), the Train page, presenter mode, Replay, the Runs page and the
autopilot's confirmation re-runs (pyperf, hyperfine and Criterion.rs report the
same kind of figure: a central value, an interval and "within noise"). Their words (the
verdict's line, the headline, the ratio format) are engine.report.headline's.
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

# 'faster' on speed whose held-out test accuracy did not hold (see `accuracy_held`).
FASTER_NOT_HELD = "faster, accuracy not held"
# A comparison whose pairs ran on two machines (engine.hardware.fingerprint): no speedup of a configuration.
NOT_COMPARABLE = "not comparable"
VERDICTS = ("faster", "slower", "equivalent", "inconclusive", FASTER_NOT_HELD, NOT_COMPARABLE)
# The equivalence margin unless the user sets one: 'equivalent' needs the whole interval
# inside ±5% (Criterion.rs's noise threshold is a fixed, user-settable number too). A
# measured noise floor never widens it (tests/test_comparison_stats.py simulates why).
DEFAULT_MARGIN = 0.05
# The power that `pairs_for_power` plans for (Cohen's convention), and where it stops counting.
POWER = 0.80
POWER_CAP = 1000
# What a side of a pair can come to: 'reached', 'missed', 'failed' or 'not run' (see the module
# docstring); these two rule out the claims that side would need.
MISSES = ("missed", "failed")
# Modified z-score above which a pair is flagged as an outlier (Iglewicz & Hoaglin 1993).
OUTLIER_Z = 3.5
# Test accuracy holds when the interval's lower end of (run − baseline) is above minus this
# (fraction: 0.005 = 0.5 points); otherwise 'faster' reads FASTER_NOT_HELD and is never green.
TEST_ACCURACY_MARGIN = 0.005
# How every page and the CLI label a ratio from a single pair: a sample, not a result.
ONE_PAIR_LABEL = "one pair: not a result"


def pair_ratio(baseline: Optional[float], run: Optional[float], higher_is_better: bool) -> Optional[float]:
    """One pair's speedup: run / baseline for a rate (samples/s, `higher_is_better`),
    baseline / run for a time (s). None when a side is missing or not positive."""
    if baseline is None or run is None or not baseline > 0 or not run > 0:
        return None
    return run / baseline if higher_is_better else baseline / run


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


def half_width(ci: Optional[Sequence[float]]) -> Optional[float]:
    """The interval's relative half width (0.08 = ±8%): sqrt(high / low) - 1, the
    ± of a symmetric interval in log space; None without an interval."""
    if not ci:
        return None
    return math.sqrt(ci[1] / ci[0]) - 1


def verdict(ci: Optional[Sequence[float]], margin: Optional[float] = None,
            missed_sides: Sequence[str] = ()) -> Optional[str]:
    """The verdict of an interval of speedups: 'faster' if it lies above 1, 'slower' if
    below, 'equivalent' if it lies inside [1 / (1 + margin), 1 + margin], else
    'inconclusive'; None without an interval. An end exactly at 1 counts as including 1.

    missed_sides: the sides that missed the target or failed on some seed ('run',
    'baseline'; see the module docstring). A candidate that missed rules out 'faster', a
    baseline that missed 'slower', and either rules out 'equivalent'.
    """
    if not ci:
        return None
    if ci[0] > 1 and "run" not in missed_sides:
        return "faster"
    if ci[1] < 1 and "baseline" not in missed_sides:
        return "slower"
    if margin and not missed_sides and ci[0] >= 1 / (1 + margin) and ci[1] <= 1 + margin:
        return "equivalent"
    return "inconclusive"


def accuracy_held(delta: Optional[dict], margin: float = TEST_ACCURACY_MARGIN) -> Optional[bool]:
    """Whether held-out test accuracy held (non-inferiority): the lower end of the interval
    of (run − baseline) (`delta`: engine.report.comparison.test_accuracy_delta, fractions)
    lies above −`margin`. False when there is a difference but no interval (fewer than
    MIN_PAIRS pairs with test accuracy); None when no test accuracy was measured."""
    if not delta or delta.get("mean") is None:
        return None
    ci = delta.get("ci95")
    return bool(ci) and bool(ci[0] > -margin)  # bool: a NumPy end gives numpy.bool_, never `is False`


def overall_verdict(speed: Optional[str], speedup: Optional[float] = None, delta: Optional[dict] = None,
                    floor: Optional[float] = None) -> Optional[str]:
    """The verdict every page, command and --json shows, from the speed verdict (`verdict`):
    'faster' or 'slower' whose effect lies within a measured noise floor (`floor`, relative,
    from a matching A/A comparison) reads 'inconclusive' (a floor only widens that zone), and
    'faster' whose test accuracy did not hold (`accuracy_held` is False) reads FASTER_NOT_HELD."""
    v = speed
    if v in ("faster", "slower") and below_floor(speedup, floor):
        v = "inconclusive"
    if v == "faster" and accuracy_held(delta) is False:
        v = FASTER_NOT_HELD
    return v


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


def _power(effect: float, sd: float, n: int, confidence: float = CONFIDENCE) -> float:
    """Power of the two-sided one-sample t test at `effect` (mean log ratio) with per-pair
    sd `sd` of the log ratio and `n` pairs: P(|T| > t crit), T noncentral t (scipy)."""
    from scipy import stats as sps

    crit = float(sps.t.ppf((1 + confidence) / 2, n - 1))
    nc = abs(effect) * math.sqrt(n) / sd
    p = float(sps.nct.sf(crit, n - 1, nc) + sps.nct.cdf(-crit, n - 1, nc))
    # scipy's noncentral t returns nan far in its tail (nc of 20 or more): the normal limit is exact there.
    return p if math.isfinite(p) else float(sps.norm.sf(crit - nc))


def _n_for_power(effect: float, sd: float, power: float, cap: int, confidence: float) -> Optional[int]:
    """The fewest pairs (2 to `cap`) at which `_power` reaches `power`, or None past `cap`.
    Starts from the normal approximation and steps by the exact t power (a few steps)."""
    from scipy import stats as sps

    if sd <= 0 or effect == 0:
        return None
    z = float(sps.norm.ppf((1 + confidence) / 2) + sps.norm.ppf(power))
    n = min(max(2, math.ceil((z * sd / abs(effect)) ** 2)), cap)
    while n > 2 and _power(effect, sd, n - 1, confidence) >= power:
        n -= 1
    while _power(effect, sd, n, confidence) < power:
        if n >= cap:
            return None
        n += 1
    return n


def pairs_for_power(ratios: Sequence[float], power: float = POWER, confidence: float = CONFIDENCE,
                    cap: int = POWER_CAP) -> Optional[list[int]]:
    """How many usable pairs in all a comparison like this one would need for `power` (80%)
    to call the observed effect (the geometric mean of `ratios`) 'faster' or 'slower':
    the fewest n at which a two-sided t test (noncentral t, scipy) at that effect reaches
    it, for the sd of the log ratios at the ends of its 80% interval (chi-square, n − 1
    df): [low, high], each at least n + 1. A range, not a number: with 3-5 pairs the sd itself is uncertain
    by 2-3x. tests/test_comparison_stats.py checks by simulation that the middle of the
    range gives about 80%. None with fewer than MIN_PAIRS ratios, no spread or no effect;
    an end past `cap` is `cap`. Acting on it is a second look at the data (the first
    interval no longer holds its 95% alone): the wording says so."""
    import statistics

    from scipy import stats as sps

    n = len(ratios)
    if n < MIN_PAIRS:
        return None
    logs = [math.log(r) for r in ratios]
    sd, effect = statistics.stdev(logs), sum(logs) / n
    if sd == 0 or effect == 0:
        return None
    df = n - 1
    sd_lo = sd * math.sqrt(df / float(sps.chi2.ppf(0.90, df)))
    sd_hi = sd * math.sqrt(df / float(sps.chi2.ppf(0.10, df)))
    ends = [_n_for_power(effect, x, power, cap, confidence) for x in (sd_lo, sd_hi)]
    return [max(e if e is not None else cap, n + 1) for e in ends]  # inconclusive at n: more than n


def _outcomes(baseline, run, outcomes) -> list[dict]:
    """Per pair {'baseline', 'run'}: each side's outcome ('reached', 'missed', 'failed', 'not run'); a side without a value
    and without a given outcome 'missed'."""
    out = []
    for i, (b, r) in enumerate(zip(baseline, run)):
        given = (outcomes[i] if outcomes is not None and i < len(outcomes) else None) or {}
        out.append({side: given.get(side) or ("reached" if v is not None else "missed")
                    for side, v in (("baseline", b), ("run", r))})
    return out


def pairs_interval(usable: Sequence[float], first_stage: Optional[int] = None, confidence: float = CONFIDENCE
                   ) -> Optional[tuple[float, float]]:
    """The interval `summarize` gives the usable ratios (all > 0, in pair order): None under
    MIN_PAIRS; Stein's (`stein_interval`) from `first_stage` on, widened to the plain t
    interval over all of them when that is wider (a stall after the first stage); the plain
    t interval (`log_ratio_interval`) when `first_stage` is None or not reached yet."""
    if len(usable) < MIN_PAIRS:
        # Two pairs give a t interval on 1 degree of freedom (t = 12.7): no interval, no verdict.
        return None
    if first_stage is None or len(usable) < first_stage:
        return log_ratio_interval(usable, confidence)
    ci = stein_interval(usable, first_stage, confidence)
    plain = log_ratio_interval(usable, confidence) if len(usable) > first_stage else None
    return plain if plain and (ci is None or plain[1] / plain[0] > ci[1] / ci[0]) else ci


def verdict_settled(summary: dict, pairs_done: int, max_pairs: int = MAX_PAIRS, first_stage: int = MIN_PAIRS,
                    floor: Optional[float] = None, confidence: float = CONFIDENCE,
                    delta: Optional[dict] = None) -> bool:
    """Whether the remaining `max_pairs - pairs_done` pairs would not change a 'faster', 'slower',
    'equivalent' or FASTER_NOT_HELD verdict (`overall_verdict` of `summarize`'s, with the noise
    floor `floor` and the test accuracy difference `delta` applied), provided each lands within
    the range of the log ratios seen so far and, for a 'faster' speed verdict, within the range of
    the test accuracy differences seen so far (`accuracy_settled`). A conservative curtailment, not
    a new test: a later pair outside those ranges or a missed target could still change it, so the
    words of such a stop state the assumption (engine.report.headline.settled_text).

    delta: engine.report.comparison.test_accuracy_delta ('per_pair': run − baseline, fractions),
    or None when no test accuracy was measured (the speed verdict is then the verdict).

    Proof by the ends: the interval's low end (mean - t s/sqrt(n), either method) is concave
    and its high end convex in each added log ratio, so over the box [lowest, highest]^m
    both reach their worst at a corner, and by symmetry the corners are j pairs at the lowest
    and m - j at the highest seen ratio; the verdict holds for every j = 0..m or this is
    False. False too with no pair left, under `first_stage` usable pairs, or no such verdict."""
    usable = [r for r in summary.get("pair_ratios") or [] if r is not None]
    left = max_pairs - pairs_done
    speed = overall_verdict(summary.get("verdict"), summary.get("speedup"), None, floor)
    now = overall_verdict(summary.get("verdict"), summary.get("speedup"), delta, floor)
    if now not in ("faster", "slower", "equivalent", FASTER_NOT_HELD) or left <= 0 \
            or len(usable) < max(first_stage, MIN_PAIRS):
        return False
    missed = [side for side in ("run", "baseline") if sum(((summary.get("misses") or {}).get(side) or {}).values())]
    lo, hi = min(usable), max(usable)
    for j in range(left + 1):
        ratios = [*usable, *[lo] * j, *[hi] * (left - j)]
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        ci = pairs_interval(ratios, first_stage, confidence)
        if overall_verdict(verdict(ci, summary.get("margin"), missed), geo, None, floor) != speed:
            return False
    # Test accuracy decides only a 'faster' (faster or FASTER_NOT_HELD): it must be settled too.
    return speed != "faster" or accuracy_settled(delta, left, confidence=confidence)


def accuracy_settled(delta: Optional[dict], left: int, margin: float = TEST_ACCURACY_MARGIN,
                     confidence: float = CONFIDENCE) -> bool:
    """Whether `accuracy_held` of the test accuracy difference `delta` (engine.report.comparison.
    test_accuracy_delta: 'per_pair' run − baseline, fractions; 'ci95' Student's t interval) stays
    as it is for any `left` more pairs whose differences lie within the range of those seen.
    True when no test accuracy was measured (`delta` None: nothing to change); False with no
    interval yet (under MIN_PAIRS differences) or no 'per_pair'.

    The interval's low end L (mean − t s/sqrt(n), n fixed) is concave in the added differences.
    Held (L > −margin) stays held iff L's minimum over the box [lowest, highest]^left is, and a
    concave function's minimum is at a corner: j at the lowest, left − j at the highest. Not held
    stays not held iff L's maximum is at most −margin; L is symmetric in the added values, so the
    average of a maximiser's permutations (all equal to one x) is a maximiser too: the maximum of
    the concave L(x, ..., x) over x in [lowest, highest], found by a bounded scalar search."""
    held = accuracy_held(delta, margin)
    if held is None or left <= 0:
        return True
    seen = list(delta.get("per_pair") or [])
    if not delta.get("ci95") or len(seen) < MIN_PAIRS:
        return False
    lo, hi = min(seen), max(seen)
    n = len(seen) + left
    t = _t(confidence, n - 1)

    def low_end(added: list[float]) -> float:
        import statistics

        xs = [*seen, *added]
        return statistics.fmean(xs) - t * statistics.stdev(xs) / math.sqrt(n)

    if held:
        return all(low_end([lo] * j + [hi] * (left - j)) > -margin for j in range(left + 1))
    from scipy.optimize import minimize_scalar

    best = max(low_end([lo] * left), low_end([hi] * left))
    if hi > lo:
        found = minimize_scalar(lambda x: -low_end([x] * left), bounds=(lo, hi), method="bounded",
                                options={"xatol": 1e-12})
        best = max(best, -found.fun)
    return best <= -margin


def summarize(baseline: Sequence[Optional[float]], run: Sequence[Optional[float]], higher_is_better: bool,
              confidence: float = CONFIDENCE, first_stage: Optional[int] = None,
              outcomes: Optional[Sequence[Optional[dict]]] = None, margin: Optional[float] = None) -> dict:
    """Statistics of one measure over the pairs (baseline[i], run[i]).

    Args:
        baseline, run: per pair, the measure of each side (s, or samples/s), None
            where that side has none (the target accuracy was not reached, the run
            failed or did not run).
        higher_is_better: True for rates (samples/s), False for times (s).
        first_stage: an adaptive comparison's first stage (MIN_PAIRS): once it has
            that many usable pairs, the interval is Stein's (`stein_interval`),
            widened to the plain t interval over all pairs when that is wider (stalls);
            None: the t interval of a fixed number of pairs (`log_ratio_interval`).
        outcomes: per pair {'baseline', 'run'}: each side's outcome ('reached', 'missed', 'failed', 'not run'); None, or a
            side left out: 'reached' where it has a value, else 'missed'.
        margin: the equivalence margin (relative, 0.05 = ±5%); None: no 'equivalent'.
    Returns: {'speedup' (geometric mean of the usable pair ratios), 'median', 'ci95'
        ([low, high] or None), 'half_width' (relative ±, or None), 'verdict'
        (`verdict`, or None), 'pair_ratios' (per pair, None where not usable),
        'pairs' (pairs with a ratio), 'not_reached' (pairs without one; ci95 and
        verdict stay None under MIN_PAIRS usable pairs), 'missing' (per such pair:
        {'pair' (0-based), 'side' ('baseline' | 'run' | 'both'), 'why' (the outcomes,
        e.g. 'run failed')}), 'outcomes' (per pair, as given or derived), 'misses'
        ({'run': {'missed', 'failed'}, 'baseline': {...}}: counts), 'outliers' (0-based
        pairs flagged by `outliers`), 'margin', 'pairs_for_power' (`pairs_for_power` for an
        inconclusive verdict, else None), 'method' ('t' or 'stein')}.
    Raises: ValueError when the lists differ in length.
    """
    import statistics

    if len(baseline) != len(run):
        raise ValueError(f"{len(baseline)} baseline values for {len(run)} run values")
    oc = _outcomes(baseline, run, outcomes)
    ratios, missing = [], []
    for i, (b, r) in enumerate(zip(baseline, run)):
        x = pair_ratio(b, r, higher_is_better)
        if x is None:
            lacking = [side for side, v in (("baseline", b), ("run", r)) if v is None or not v > 0]
            side = "both" if len(lacking) != 1 else lacking[0]
            why = ", ".join(f"{s_} {oc[i][s_]}" for s_ in ("run", "baseline") if oc[i][s_] != "reached")
            missing.append({"pair": i, "side": side, "why": why or "no value"})
        ratios.append(x)
    misses = {side: {k: sum(o[side] == k for o in oc) for k in MISSES} for side in ("run", "baseline")}
    missed_sides = [side for side in ("run", "baseline") if sum(misses[side].values())]
    usable = [x for x in ratios if x is not None]
    stein = first_stage is not None and len(usable) >= first_stage
    ci = pairs_interval(usable, first_stage, confidence)
    v = verdict(ci, margin, missed_sides)
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
        "outcomes": oc,
        "misses": misses,
        "outliers": outliers(ratios),
        "margin": margin,
        "pairs_for_power": pairs_for_power(usable, confidence=confidence) if v == "inconclusive" else None,
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


def result_floor(result: Optional[dict], measure: Optional[str] = None) -> Optional[float]:
    """The noise floor a comparison result was judged with for `measure` (default its
    headline measure): the matching A/A comparison's half width stored in its
    'noise_floor' (engine.report.comparison.evaluate), or None."""
    nf = (result or {}).get("noise_floor") or {}
    return (nf.get("half_width") or {}).get(measure or (result or {}).get("measure") or "time_to_accuracy")


def comparison_interval(result: Optional[dict]) -> Optional[list]:
    """The 95% interval [low, high] of a stored comparison result's headline measure, once
    MIN_PAIRS pairs are in (what its headline shows), else None."""
    summary = (result or {}).get((result or {}).get("measure") or "time_to_accuracy") or {}
    return summary.get("ci95") if summary.get("pairs", 0) >= MIN_PAIRS else None
