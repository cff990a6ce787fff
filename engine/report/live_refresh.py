"""How often the live Train page redraws a plain run (no streamlit here).

The open page shares the machine with the run it measures: each refresh reruns
the live fragment on the server and redraws every Plotly chart in the browser,
which with a 1 s refresh cost about 0.2 CPU-s per second of run, most of it the
headless browser's redraws (benchmarks/live_view.py --open-closed). What a user
watches changes fast only while a run starts: queued, the worker starting,
tracing and compiling, the first executions. In its steady phase the throughput
line is flat and one more second of it tells nothing new, so the page redraws
every STEADY_REFRESH_S then: a third of the redraws, and the progress line
still moves every 3 s (the page must feel live: 2-5 s).

Comparisons of interleaved pairs are quieter still (views/components/live_charts.py
QUIET_REFRESH_S: the store is read every 15 s while pairs are measured, and the browser
moves the progress lines on in between: engine/report/progress_motion.py).
"""
from __future__ import annotations

from typing import Iterable

STARTING_REFRESH_S = 1.0  # queued, starting, warm-up: the first points show at once
STEADY_REFRESH_S = 3.0    # a run past its warm-up
STARTING, STEADY = "starting", "steady"


def phase(store, run_ids: Iterable[int]) -> str:
    """STEADY when every *running* run among `run_ids` has recorded a steady
    (non-warm-up) execution, else STARTING (a run queued, a worker starting, a
    run still tracing or compiling, or none running). One indexed query per run:
    the newest execution's warm-up flag."""
    running = [r for r in (store.get_run(i) for i in run_ids) if r and r["status"] == "running"]
    if not running:
        return STARTING
    for r in running:
        row = store.conn.execute("SELECT warmup FROM executions WHERE run_id=? ORDER BY idx DESC LIMIT 1",
                                 (r["id"],)).fetchone()
        if row is None or row[0]:
            return STARTING
    return STEADY


def refresh_s(current: str) -> float:
    """The live fragment's interval (s) for phase `current`."""
    return STEADY_REFRESH_S if current == STEADY else STARTING_REFRESH_S
