"""What does the live Train page cost the server while a long run is live?

Builds a store with a finished baseline and a *running* run of EXECUTIONS
stored executions (as a long run has after a while; the run's pid is this
process, so it reads as live), then renders the Train page with Streamlit's
AppTest (in this process, as the server would) and prints:

- server CPU per refresh (process CPU seconds per page run, median), goal <= 0.2 s;
- refreshes per second the server could sustain (1 / wall per refresh);
- a widget change (batch size) shown: wall seconds of that rerun, goal <= 1 s;
- memory growth (RSS, MB) over REFRESHES refreshes once warm, goal <= 50 MB.

    python benchmarks/live_view.py [--executions 50000] [--refreshes 1000]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build_store(n: int) -> None:
    import psutil

    from engine.config import RunConfig
    from engine.store import SYSTEM_COLS, Store

    me = psutil.Process()
    st = Store()
    for role, count, status in (("baseline", 2000, "completed"), ("run", n, "running")):
        cfg = RunConfig(epochs=100) if role == "baseline" else RunConfig(epochs=100, precision="mixed_bfloat16")
        rid = st.create_run(cfg.to_json(), role=role, group_id="g", status="running")
        per_epoch = max(count // 100, 1)
        st.update_run(rid, plan={"steps_per_epoch": per_epoch, "total_steps": per_epoch * 120, "epochs": 100,
                                 "replicas": 1, "device_kind": "CPU", "train_started_at": time.time() - 60},
                      environment={"hostname": os.uname().nodename}, pid=me.pid, pid_started=me.create_time())
        rows, t = [], 0.0
        for i in range(count):
            d = 0.01 * (1.0, 0.95, 1.05)[i % 3]
            t += d
            rows.append((i, i // per_epoch, i + 1, 1, t, d, 128 / d, 2.3 * math.exp(-3 * i / count), 1e-3,
                         int(i == 0), 0.0001))
        epochs = [(e, t * (e + 1) / 100, (e + 1) * per_epoch, 1.0 / (e + 1), 0.5, 0.9 / (e + 1), 0.9, 1e-3, 0.9 / (e + 1))
                  for e in range(count // per_epoch)]
        system = [tuple({"t": float(s), "cpu_percent": 95.0, "rss_mb": 800.0, "mem_percent": 20.0,
                         "gpu_mem_mb": None, "worker": 0}[c] for c in SYSTEM_COLS) for s in range(int(t) + 1)]
        st.add_metrics(rid, rows, epochs, system)
        if status == "completed":
            st.finish_run(rid, "completed", summary={"samples_per_sec": 12800.0, "wall_sec": t})
    st.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--executions", type=int, default=50_000)
    p.add_argument("--refreshes", type=int, default=1000)
    a = p.parse_args()
    os.environ["SPEEDLAB_HOME"] = tempfile.mkdtemp(prefix="speedlab-live-")
    os.environ["SPEEDLAB_WARM_WORKER"] = "0"  # measure the page, not a spare worker's start
    import psutil
    from streamlit.testing.v1 import AppTest

    build_store(a.executions)
    proc = psutil.Process()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    for _ in range(5):  # warm: imports, caches
        at.run()
    cpu, wall = [], []
    rss0 = proc.memory_info().rss
    for _ in range(a.refreshes):
        c0, w0 = proc.cpu_times(), time.perf_counter()
        at.run()
        c1 = proc.cpu_times()
        cpu.append((c1.user + c1.system) - (c0.user + c0.system))
        wall.append(time.perf_counter() - w0)
    growth = (proc.memory_info().rss - rss0) / 2**20
    w0 = time.perf_counter()
    at.number_input(key="batch_size").set_value(256).run()
    change = time.perf_counter() - w0
    errors = [e.value for e in at.exception]
    print(f"store: a running run with {a.executions:,} executions (+ a 2,000-execution baseline); "
          f"{a.refreshes} refreshes of the Train page (AppTest, one process)")
    print(f"server CPU per refresh: {statistics.median(cpu):.3f} s median (max {max(cpu):.3f}); goal <= 0.2 s: "
          f"{'met' if statistics.median(cpu) <= 0.2 else 'NOT met'}")
    print(f"wall per refresh: {statistics.median(wall):.3f} s -> {1 / statistics.median(wall):.1f} refreshes/s")
    print(f"widget change (batch size) shown after {change:.2f} s; goal <= 1 s: {'met' if change <= 1 else 'NOT met'}")
    print(f"memory growth over {a.refreshes} refreshes once warm: {growth:+.1f} MB; goal <= 50 MB: "
          f"{'met' if growth <= 50 else 'NOT met'}")
    if errors:
        print("page errors:", errors)


if __name__ == "__main__":
    main()
