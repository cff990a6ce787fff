"""Does SpeedLab stay fast with 10,000 (and 100,000) stored runs? (issue 42, item 1)

Builds stores of N finished runs by copying one realistic run (a baseline/run pair of
digits runs: 24 executions, 3 epochs, 10 system samples and a summary each, the shape
of the 10,000-run store of mlflow#1517's replay: about 240k execution rows), then times,
for each N, the median of REPEATS of:

    `python -m engine runs` (a subprocess: what a user waits for, imports included),
    `python -m engine show <newest>`,
    one script run of the Runs page, and one of the Train page (streamlit AppTest,
    the page's own code with this store; the first run of each is a warm-up, dropped).

Prints a table and the ratio to N = 10 (goal: within 1.5x at 10,000). The machine may be
shared: say so with the results.

    python benchmarks/many_runs.py [--sizes 10,10000,100000] [--repeats 3] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build(path: Path, n: int) -> float:
    """A store at `path` with `n` completed runs (alternately baseline and run, pairs by
    group). Returns the build time (s)."""
    from engine.config import RunConfig
    from engine.store import EPOCH_COLS, EXEC_COLS, SYSTEM_COLS, Store

    t0 = time.perf_counter()
    base = RunConfig(epochs=3, target_accuracy=0.9)
    fast = RunConfig(epochs=3, target_accuracy=0.9, precision="mixed_bfloat16")
    env = json.dumps({"hostname": "bench-host", "logical_cores": 2, "devices": ["CPU:0"]})
    plan = json.dumps({"steps_per_epoch": 8, "total_steps": 24, "epochs": 3, "replicas": 1,
                       "per_replica_batch_size": 128, "device_kind": "CPU"})
    execs = [(i, i // 8, i + 1, 1, 0.05 * (i + 1) + 1.0, 1.0 if i == 0 else 0.05, 128 / 0.05, 2.3 * 0.9 ** i,
              1e-3, int(i == 0), 0.002, i + 1, 0, None) for i in range(24)]
    epochs = [(e, 1.0 + 0.4 * (e + 1), 8 * (e + 1), 1.0 / (e + 1), 0.8 + 0.05 * e, 0.9 / (e + 1),
               0.85 + 0.04 * e, 1e-3, 0.9 / (e + 1)) for e in range(3)]
    system = [(float(t), 95.0, 800.0, 20.0, None, 0) for t in range(10)]
    with Store(path) as store:
        now = time.time() - n
        with store.tx() as conn:
            for k in range(n):
                cfg, role = (base, "baseline") if k % 2 == 0 else (fast, "run")
                rate = 2560.0 if role == "baseline" else 3400.0
                summary = {"samples_per_sec": rate, "end_to_end_samples_per_sec": rate * 0.8, "wall_sec": 2.2,
                           "warmup_sec": 1.0, "setup_sec": 1.5, "validation_sec": 0.1, "other_sec": 0.05,
                           "final_val_accuracy": 0.93, "time_to_target_sec": 1.8 if role == "run" else 2.2,
                           "replicas": 1, "replicas_simulated": False, "warnings": []}
                rid = conn.execute(
                    "INSERT INTO runs (created, group_id, role, config, environment, status, started, ended, plan, "
                    "summary) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (now + k, f"g{k // 2}", role, cfg.to_json(), env, "completed", now + k, now + k + 2.2, plan,
                     json.dumps(summary))).lastrowid
                if role == "run":
                    conn.execute("UPDATE runs SET baseline_id=? WHERE id=?", (rid - 1, rid))
                else:
                    conn.execute("UPDATE runs SET baseline_id=? WHERE id=?", (rid, rid))
                conn.executemany(f"INSERT INTO executions (run_id, {', '.join(EXEC_COLS)}) VALUES "
                                 f"({','.join('?' * (len(EXEC_COLS) + 1))})", [(rid, *r) for r in execs])
                conn.executemany(f"INSERT INTO epochs (run_id, {', '.join(EPOCH_COLS)}) VALUES "
                                 f"({','.join('?' * (len(EPOCH_COLS) + 1))})", [(rid, *r) for r in epochs])
                conn.executemany(f"INSERT INTO system (run_id, {', '.join(SYSTEM_COLS)}) VALUES "
                                 f"({','.join('?' * (len(SYSTEM_COLS) + 1))})", [(rid, *r) for r in system])
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return time.perf_counter() - t0


def _cli(home: Path, *args: str) -> tuple[float, float]:
    """(wall s, CPU s of the child) of one `python -m engine ARGS`."""
    env = {**os.environ, "SPEEDLAB_HOME": str(home)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        raise RuntimeError(f"engine {' '.join(args)}: exit {p.returncode}: {p.stderr[-500:]}")
    return dt, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _page(home: Path, page: str) -> tuple[float, float]:
    """(wall s, CPU s of this process) of one script run of `page` (after a warm-up run
    in the same AppTest)."""
    os.environ["SPEEDLAB_HOME"] = str(home)
    os.environ["SPEEDLAB_WARM_WORKER"] = "0"  # the Train page would start a queue with a spare
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.switch_page(page)
    at.run()
    if at.exception:
        e = at.exception[0]
        raise RuntimeError(f"{page}: {e.message} {list(e.stack_trace)[-3:]}")
    t0, c0 = time.perf_counter(), time.process_time()
    at.run()
    return time.perf_counter() - t0, time.process_time() - c0


def measure(home: Path, repeats: int) -> dict:
    newest = str(_newest(home))
    out = {}
    for name, fn in (("runs", lambda: _cli(home, "runs")), ("show", lambda: _cli(home, "show", newest)),
                     ("Runs page", lambda: _page(home, "views/runs/runs.py")),
                     ("Train page", lambda: _page(home, "views/train/train.py"))):
        got = [fn() for _ in range(repeats)]
        out[name] = statistics.median(w for w, _ in got)
        out[name + " CPU"] = statistics.median(c for _, c in got)
    return out


def _newest(home: Path) -> int:
    from engine.store import Store

    with Store(home / "runs.sqlite") as s:
        return s.conn.execute("SELECT MAX(id) FROM runs").fetchone()[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,10000,100000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", help="build the stores under this folder and keep them")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="speedlab-many-"))
    rows = []
    for n in sizes:
        home = root / f"runs-{n}"
        home.mkdir(parents=True, exist_ok=True)
        built = None
        if not (home / "runs.sqlite").exists():
            built = build(home / "runs.sqlite", n)
        size_mb = (home / "runs.sqlite").stat().st_size / 2**20
        m = measure(home, args.repeats)
        rows.append((n, size_mb, built, m))
        print(f"N={n:>7,}: {size_mb:6.1f} MB" + (f", built in {built:.1f} s" if built else "") + "; "
              + ", ".join(f"{k} {v:.2f} s" for k, v in m.items()), file=sys.stderr, flush=True)
    ref = rows[0][3]
    for label, keys in (("wall", [k for k in ref if not k.endswith(" CPU")]),
                        ("CPU", [k for k in ref if k.endswith(" CPU")])):
        print(f"\n{label} time, median of {args.repeats}, and the ratio to N = {rows[0][0]:,}:\n")
        print("| runs | store (MB) | " + " | ".join(f"{k} (s)" for k in keys) + " | "
              + " | ".join(f"{k} ×" for k in keys) + " |")
        print("|" + "---|" * (2 + 2 * len(keys)))
        for n, mb, _b, m in rows:
            print(f"| {n:,} | {mb:.1f} | " + " | ".join(f"{m[k]:.2f}" for k in keys) + " | "
                  + " | ".join(f"{m[k] / ref[k]:.2f}" for k in keys) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
