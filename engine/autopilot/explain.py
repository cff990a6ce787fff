"""The autopilot's explanation in words: each technique's leave-one-out factor, its
interval and verdict from the confirming pairs (engine.report.stats), and the line that
lists them. No TF here.
"""
from __future__ import annotations

import statistics
from typing import Optional

from engine.report.headline import ratio_text

def explanation(ablation: list[dict], spread: Optional[tuple] = None) -> str:
    """'bfloat16 1.40x, 8 steps per execution 1.30x, ...' from ablation entries
    ({'label', 'factor' (ablated time / winner's), 'note', 'kind'}), largest factor
    first; a factor under 1 says the winner ran faster without that technique (one run:
    within noise when close to 1); an ablation that did not reach the target reads 'needed to reach it';
    one cut short by Stop ('kind' 'stopped' or 'not_run') is named as not measured.
    spread: (lowest, highest) of the winner's own confirming re-runs / the factors'
    denominator (x): a factor inside it (as printed, to 2 decimals) is marked 'within
    noise' (each ablation is one run), and the line ends with that spread."""
    def inside(f: float) -> bool:  # as printed: 1.0136 beside a spread ending at 1.0081 reads "1.01 ... 1.01x"
        return spread is not None and round(spread[0], 2) <= round(f, 2) <= round(spread[1], 2)

    def factor(a: dict) -> str:
        ci = a.get("ci95")
        if ci:  # judged by its interval (ablation_intervals), as a comparison's verdict
            word = {"inconclusive": " (inconclusive)", "equivalent": " (equivalent)",
                    "slower": " (faster without it)"}.get(a.get("verdict"), "")
            return f"{a['label']} {ratio_text(a['factor'])} [{ci[0]:.2f}–{ci[1]:.2f}]{word}"
        return f"{a['label']} {ratio_text(a['factor'])}" + (" (within noise)" if inside(a["factor"]) else
                                                      " (faster without it)" if a["factor"] < 1 else "")

    cut = [a for a in ablation if a.get("kind") in ("stopped", "not_run")]
    done = [a for a in ablation if a.get("factor")]
    done.sort(key=lambda a: -a["factor"])
    parts = [factor(a) for a in done]
    parts += [f"{a['label']} (needed: {a['note']} without it)" for a in ablation
              if not a.get("factor") and a.get("note") and a not in cut]
    if cut:
        parts.append("stopped before measuring " + ", ".join(a["label"] for a in cut))
    line = ", ".join(parts)
    if len(done) >= 2 and all(a["factor"] < 1 for a in done):
        # Contradicts the winner: each technique alone makes it slower, yet together they won.
        line += ("; every factor is below 1: without any one of its techniques the winner was faster, so "
                 "they help only together, or the winner's edge over the baseline is noise (read its interval)")
    pairs = next((a["interval_pairs"] for a in done if a.get("ci95")), None)
    if pairs and any(a.get("run_ids") for a in done):  # measured in the confirming rounds (explain_from_pairs)
        line += (f"; each factor from {pairs} interleaved pairs with the winner on the confirming seeds, "
                 "geometric mean and 95% t interval (inconclusive: the interval holds 1x); leave-one-out "
                 "factors do not multiply to the total")
    elif pairs:
        line += (f"; each factor is one run against the winner's on the same seed, its 95% interval from "
                 f"the spread of the {pairs} confirming pairs (within noise: the interval holds 1x)")
    elif spread is not None and done:
        line += (f"; the winner's own re-runs ranged {spread[0]:.2f}-{spread[1]:.2f}x of the time compared "
                 "with, so a factor inside that range is within noise")
    return line


def ablation_intervals(ablation: list[dict], pair_ratios: Optional[list]) -> list[dict]:
    """Each ablation entry with a factor gets the comparisons' judgement: 'ci95'
    ([low, high] of the factor, x) and 'verdict' (engine.report.stats.verdict:
    'faster' = the winner is faster with the technique, 'slower' = faster without
    it, 'inconclusive' = the interval holds 1x), and 'interval_pairs'. A factor is one pair
    (the run without the technique, the winner's on the same seed), so its interval
    is `stats.one_pair_interval` with the noise of one pair read off the
    confirming pairs' ratios (`pair_ratios`, baseline / winner; None entries are
    skipped). Entries are returned unchanged with fewer than 2 such ratios."""
    from engine.report import stats

    ref = [r for r in pair_ratios or [] if r]
    out = []
    for a in ablation:
        ci = stats.one_pair_interval(a["factor"], ref) if a.get("factor") and len(ref) >= 2 else None
        out.append({**a, "ci95": list(ci), "verdict": stats.verdict(ci), "interval_pairs": len(ref)} if ci else a)
    return out


def rerun_spread(times: list, ref: Optional[float] = None) -> Optional[tuple]:
    """(lowest, highest) / `ref` (default: their median) of the winner's re-run times
    to target (s); None with fewer than 2 that reached it."""
    done = sorted(t for t in times if t)
    if len(done) < 2:
        return None
    ref = ref or statistics.median(done)
    return done[0] / ref, done[-1] / ref


def same_seed_time(conf: Optional[dict], seed: int) -> Optional[float]:
    """The winner's confirming re-run time to target (s) on `seed` (the ablation's), or None."""
    if not conf or seed not in conf.get("seeds", []):
        return None
    times = conf["times"]["winner"]
    i = conf["seeds"].index(seed)
    return times[i] if i < len(times) else None
