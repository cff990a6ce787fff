"""The autopilot's explanation in words: each technique's leave-one-out factor with its
interval and verdict, read from its stored comparison (engine.autopilot.confirm), in one
line. No TF here.
"""
from __future__ import annotations

from engine.report import stats
from engine.report.headline import ratio_text


def explanation(ablation: list[dict]) -> str:
    """'bfloat16 1.40x [1.21–1.62], 8 steps per execution 1.30x [...], ...' from ablation entries
    (engine.autopilot.confirm.ablation_entries: {'label', 'factor' (the winner's speedup over the
    winner without the technique), 'ci95', 'verdict', 'interval_pairs', 'note', 'kind'}), largest
    factor first; a factor under 1 says the winner ran faster without that technique when its
    interval says so (a factor without one, under 3 pairs, is '(no interval)', no direction); an
    ablation that did not reach the target reads 'needed to reach it'; one cut short by Stop
    ('kind' 'stopped' or 'not_run') is named as not measured, one whose runs are still to come
    while the autopilot runs ('kind' 'pending') as not measured yet."""
    def factor(a: dict) -> str:
        ci = a.get("ci95")
        if ci:  # judged by its interval, as a comparison's verdict
            word = {"inconclusive": " (inconclusive)", "equivalent": " (equivalent)",
                    "slower": " (faster without it)",
                    stats.FASTER_NOT_HELD: f" ({stats.FASTER_NOT_HELD})"}.get(a.get("verdict"), "")
            return f"{a['label']} {ratio_text(a['factor'])} [{ci[0]:.2f}–{ci[1]:.2f}]{word}"
        # No interval (under 3 pairs, or still to come): a sample, never a direction ("faster
        # without it" read from the second pair of the re-run rounds).
        n = a.get("interval_pairs") or a.get("pairs")
        return f"{a['label']} {ratio_text(a['factor'])} (" + (f"{n} pair{'s' if n != 1 else ''}, " if n else "") \
            + "no interval)"

    cut = [a for a in ablation if a.get("kind") in ("stopped", "not_run")]
    pending = [a for a in ablation if a.get("kind") == "pending"]
    done = [a for a in ablation if a.get("factor")]
    done.sort(key=lambda a: -a["factor"])
    parts = [factor(a) for a in done]
    parts += [f"{a['label']} (needed: {a['note']} without it)" for a in ablation
              if not a.get("factor") and a.get("note") and a not in cut and a not in pending]
    if pending:
        parts.append("not measured yet (in the re-run rounds): " + ", ".join(a["label"] for a in pending))
    if cut:
        parts.append("stopped before measuring " + ", ".join(a["label"] for a in cut))
    line = ", ".join(parts)
    judged = [a for a in done if a.get("ci95")]
    if len(judged) >= 2 and all(a["factor"] < 1 for a in judged):
        # Contradicts the winner: each technique alone makes it slower, yet together they won.
        line += ("; every factor is below 1: without any one of its techniques the winner was faster, so "
                 "they help only together, or the winner's edge over the baseline is noise (read its interval)")
    pairs = max((a.get("interval_pairs") or 0 for a in done), default=0)
    if pairs:
        line += (f"; each factor from {pairs} interleaved pair{'s' if pairs != 1 else ''} with the winner on the "
                 "confirming seeds, geometric mean and 95% t interval (inconclusive: the interval holds 1x); "
                 "leave-one-out factors do not multiply to the total")
    return line
