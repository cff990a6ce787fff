"""How long does a user wait? Launch -> first live point, Stop -> cancelled, and more.

Goes through the same path as the dashboard: `runner.prewarm()` when the page
opens (a queue with a warm spare worker), `runner.launch_with_baseline` on
Launch, the store for everything the page shows, `runner.cancel` on Stop.
Prints, median of REPEATS with min-max, seconds from Launch to:

    queue pick-up, worker clock start (process start, or a warm worker's claim),
    imports done, devices ready, data ready, model compiled, input pipelines started,
    first execution stored (the page reads the store every LIVE_REFRESH_S = 1 s,
    so the first point is on screen at most 1 s later),

and from Stop to the run's status reading `cancelled` (with the executions kept);
for a Launch with a fresh baseline, to the steady-speedup number; and the wall
time of `python -m engine bench --quick`. Goals (issue "On stage in seconds"),
on a 2-core machine with nothing else running: first point <= 5 s with a stored
baseline, speedup number <= 20 s with a fresh one, Stop <= 2 s, bench <= 90 s.

    python benchmarks/latency.py [--repeats 5] [--no-bench] [--cold]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
POLL_S = 0.02
LIVE_REFRESH_S = 1.0  # views/train/live.py


def wait_until(fn, timeout_s=300.0):
    t_end = time.monotonic() + timeout_s
    while time.monotonic() < t_end:
        v = fn()
        if v:
            return v
        time.sleep(POLL_S)
    raise SystemExit("timed out")


def spare_ready(home: Path) -> bool:
    return any((home / "spares").glob("*.ready"))


def first_point(home: Path, cfg, warm: bool) -> dict:
    """One Launch with a matching baseline stored: seconds to each stage."""
    from engine.jobs import runner
    from engine.store import Store

    if warm:
        runner.prewarm()
        wait_until(lambda: spare_ready(home), 120)  # the page was open a while before Launch
    t0 = time.time()
    bid, rid, reused = runner.launch_with_baseline(cfg)
    assert reused, "the baseline should be stored already"
    st = Store()
    try:
        wait_until(lambda: st.metrics("executions", rid))
        t_first = time.time()
        run = wait_until(lambda: (r := st.get_run(rid)) and r.get("plan") and r)
        runner.wait(rid, poll_s=0.1)
    finally:
        st.close()
    plan = run["plan"]
    origin, marks = plan["clock_origin"], plan["setup_marks"]
    out = {"queue pick-up": run["started"] - t0, "worker clock start": origin - t0}
    for name, label in (("imports", "imports done"), ("devices", "devices ready"), ("data", "data ready"),
                        ("model", "model compiled"), ("input", "input pipelines started")):
        if name in marks:  # 'input' only where the run starts its iterators in setup
            out[label] = origin + marks[name] - t0
    out["first execution stored"] = t_first - t0
    return out


def stop_latency(cfg) -> float:
    from engine.jobs import runner
    from engine.store import Store

    (rid,) = runner.submit([cfg.replace(epochs=200)])
    st = Store()
    try:
        wait_until(lambda: len(st.metrics("executions", rid)) >= 20)
        t0 = time.time()
        runner.cancel(rid)
        wait_until(lambda: st.get_run(rid)["status"] == "cancelled", 60)
        took = time.time() - t0
        assert st.metrics("executions", rid), "executions before the stop are kept"
    finally:
        st.close()
    runner.wait(rid)
    return took


def speedup_latency(home: Path, cfg, warm: bool) -> float:
    """Launch with no stored baseline -> compare() has a steady speedup number."""
    from engine.jobs import runner
    from engine.report.pair import compare
    from engine.store import Store

    if warm:
        runner.prewarm()
        wait_until(lambda: spare_ready(home), 120)
    t0 = time.time()
    bid, rid, reused = runner.launch_with_baseline(cfg)
    assert not reused
    st = Store()
    try:
        wait_until(lambda: compare(st, bid, rid)["steady_speedup"] is not None)
        took = time.time() - t0
    finally:
        st.close()
    runner.wait(rid)
    return took


def show(name: str, xs: list[float], goal: float | None = None) -> None:
    med = statistics.median(xs)
    verdict = "" if goal is None else f"   goal <= {goal:g} s: {'met' if med <= goal else 'NOT met'}"
    print(f"{name:<44}{med:>8.2f} s  ({min(xs):.2f}-{max(xs):.2f}){verdict}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--no-bench", action="store_true", help="skip timing bench --quick (about 65 s)")
    p.add_argument("--cold", action="store_true", help="no warm spare worker (SPEEDLAB_WARM_WORKER=0)")
    a = p.parse_args()
    home = Path(tempfile.mkdtemp(prefix="speedlab-latency-"))
    os.environ["SPEEDLAB_HOME"] = str(home)
    os.environ["SPEEDLAB_WARM_WORKER"] = "0" if a.cold else "1"
    from engine.config import RunConfig
    from engine.hardware.machine import cpu_model
    from engine.jobs import runner

    warm = not a.cold
    cfg = RunConfig(precision="mixed_bfloat16", steps_per_execution=2)  # digits, cnn, 10 epochs
    print(f"machine: {cpu_model()}, {os.cpu_count()} logical cores; digits cnn; "
          f"{'warm spare worker' if warm else 'cold workers'}; median of {a.repeats} (min-max)")
    (bid,) = runner.submit([RunConfig(precision="float32")], roles=["baseline"])  # the stored baseline
    runner.wait(bid)
    stages: dict[str, list[float]] = {}
    for _ in range(a.repeats):
        for k, v in first_point(home, cfg, warm).items():
            stages.setdefault(k, []).append(v)
    for k, xs in stages.items():
        show(f"Launch -> {k}", xs, 5.0 - LIVE_REFRESH_S if k == "first execution stored" else None)
    show("Launch -> first point on the page (+1 s refresh)", [x + LIVE_REFRESH_S for x in
                                                                stages["first execution stored"]], 5.0)
    show("Stop -> status 'cancelled'", [stop_latency(cfg) for _ in range(a.repeats)], 2.0)
    fresh = []
    for i in range(a.repeats):
        fresh.append(speedup_latency(home, cfg.replace(seed=100 + i), warm))  # a new seed: no stored baseline
    show("Launch (fresh baseline) -> speedup number", fresh, 20.0)
    if not a.no_bench:
        t0 = time.time()
        subprocess.run([sys.executable, "-m", "engine", "bench", "--quick", "--json"], cwd=ROOT,
                       capture_output=True, check=True, env=os.environ)
        show("python -m engine bench --quick (wall)", [time.time() - t0], 90.0)


if __name__ == "__main__":
    main()
