"""How a progress line moves on between two reads of the store (no streamlit here).

While a comparison measures, every rerun of the live Train page costs the browser a
restyle and layout of the whole page: about 0.1 CPU-s a rerun on the 2-core dev machine,
most of what the open page cost the run it measures (benchmarks/live_view.py
--open-closed). So the page reads the store only every views.components.live_charts
QUIET_REFRESH_S, and in between the browser moves the bar and the clocks on at the rate
just measured, once a second, from frames computed here (a small script plays them: no
rerun). CSS animations were tried first and cost more than the reruns they replaced
(Chromium restyles every frame, ~0.04-0.08 CPU-s/s); a text and width change once a second
is ~0.006. Step and epoch move on with the bar (the bar is steps done / total steps), so
the line never reads "step 60/720 · 1 s left".
"""
from __future__ import annotations


def projection(p: dict, horizon_s: float) -> dict:
    """Where a running run's progress line goes in the next `horizon_s` seconds.

    `p`: engine.report.progress.progress of a running run ('fraction' 0..1,
    'elapsed_sec' s, 'time_left_sec' s or None while the steady rate is unknown).
    Returns {'fraction': (from, to), 'elapsed_sec': (from, to), 'time_left_sec':
    (from, to) or None, 'elapsed_s': seconds the elapsed clock runs, 'left_s': seconds
    the bar and the time-left clock run}. The bar spreads what is left of it over
    the time left, so both end together (at 1 and 0 s) when the run is due to end, and
    then hold; 'elapsed_sec' spans the whole horizon (`frames` holds that clock too once
    the run is due to end). Raises ValueError if
    `horizon_s` <= 0.
    """
    if horizon_s <= 0:
        raise ValueError(f"horizon_s must be > 0 s, got {horizon_s}")
    f0, e0, left = float(p.get("fraction") or 0.0), float(p.get("elapsed_sec") or 0.0), p.get("time_left_sec")
    out = {"elapsed_sec": (e0, e0 + horizon_s), "elapsed_s": horizon_s}
    if left is None:  # warming up: no rate yet, the bar waits for the store
        return {**out, "fraction": (f0, f0), "time_left_sec": None, "left_s": 0.0}
    left = max(float(left), 0.0)
    run_s = min(horizon_s, left)
    f1 = 1.0 if left == 0 else f0 + (1.0 - f0) * run_s / left
    return {**out, "fraction": (f0, min(f1, 1.0)), "time_left_sec": (left, left - run_s), "left_s": run_s}


def counts(p: dict, fraction: float) -> tuple[int, int]:
    """(epoch 1-based, step) at `fraction` of the run's total steps: the step the bar stands
    at, and the epoch that step is in, never before the epoch read (`p`: as for projection,
    with 'step', 'total_steps', 'epoch', 'epochs'; a run with no plan yet stays as read)."""
    total, epochs = int(p.get("total_steps") or 0), int(p.get("epochs") or 0)
    read = int(p.get("step") or 0), int(p.get("epoch") or 0)
    if total <= 0 or epochs <= 0:
        return read[1], read[0]
    step = min(max(read[0], int(fraction * total + 1e-9)), total)
    return min(max(read[1], -(-step * epochs // total)), epochs), step


def frames(p: dict, horizon_s: int) -> list[tuple[float, int, int | None, int, int]]:
    """The progress line second by second: [(fraction 0..1, elapsed s, time left s or None,
    epoch, step)] for t = 0, 1, ..., `horizon_s` s after the read, from `projection` and
    `counts` (whole seconds, as the page prints them). Once the run is due to end, the bar,
    counts and both clocks hold until the next read; while warming up (no rate yet) only the
    elapsed clock moves. Raises ValueError if `horizon_s` < 1."""
    if horizon_s < 1:
        raise ValueError(f"horizon_s must be >= 1 s, got {horizon_s}")
    m = projection(p, float(horizon_s))
    (f0, f1), (e0, _), run_s = m["fraction"], m["elapsed_sec"], m["left_s"]
    out = []
    for t in range(horizon_s + 1):
        moved = min(t, run_s)
        f = f0 + (f1 - f0) * (moved / run_s) if run_s > 0 else f0
        left = None if m["time_left_sec"] is None else round(m["time_left_sec"][0] - moved)
        # At the projected end the clocks hold: a run that has ended kept counting its elapsed
        # seconds up to the next read (a 2-s run read "13 s elapsed").
        elapsed = e0 + (moved if m["time_left_sec"] is not None else t)
        out.append((round(f, 4), round(elapsed), left, *counts(p, f)))
    return out
