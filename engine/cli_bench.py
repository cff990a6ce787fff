"""``python -m engine bench --quick``: the quick speedup benchmark (engine.bench)."""
from __future__ import annotations

import json
import sys


def add_parser(sub) -> None:
    p = sub.add_parser("bench", help="quick speedup benchmark of the options on this machine",
                       description="Short runs on synthetic data (precision x steps per execution x XLA "
                                   "x replicas), each against a float32 single-device baseline measured in "
                                   "the same invocation. About 90 s on a 2-core CPU with --quick.")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", default=True, help="small matrix (default)")
    size.add_argument("--full", action="store_true",
                      help="larger matrix: ResNet-style model on 32x32x3, float16 and simulated replicas too")
    p.add_argument("--repeats", type=int, default=2, choices=range(1, 11), metavar="N",
                   help="measurements per cell, interleaved (1-10) [2]")
    p.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    p.set_defaults(func=main)


def format_table(result: dict) -> str:
    """Speedup table: one row per cell, best marked with '*'."""
    lines = [f"{'precision':<15} {'spe':>4} {'xla':>5} {'dev':>4} {'samples/s':>11} {'speedup':>8} "
             f"{'spread':>13}"]
    best = result.get("best")
    for c in result["cells"]:
        dev = f"{c['devices']}{'s' if c['simulated'] else ''}"
        sp = f"{c['speedup']:.2f}x" if c["speedup"] is not None else "-"
        spread = (f"{c['speedup_min']:.2f}-{c['speedup_max']:.2f}" if c["speedup"] is not None else "-")
        mark = " *" if best and all(c[k] == best[k] for k in ("precision", "steps_per_execution",
                                                                 "jit_compile", "devices")) else ""
        rate = f"{c['samples_per_sec']:,.0f}" if c["samples_per_sec"] else "-"
        lines.append(f"{c['precision']:<15} {c['steps_per_execution']:>4} {str(c['jit_compile']):>5} "
                     f"{dev:>4} {rate:>11} {sp:>8} {spread:>13}{mark}")
    w = result["workload"]
    lines.append(f"workload: {w['model']} on synthetic {'x'.join(map(str, w['synthetic_shape']))}, global batch "
                 f"{w['batch_size']}, {w['steps']} steps x {w['epochs']} epochs per cell; {result['repeats']} "
                 f"repeats; {result['wall_sec']:.0f} s in all. 's' = simulated logical devices.")
    return "\n".join(lines)


def main(args) -> int:
    from engine import bench
    from engine.runner import active_run
    from engine.store import Store

    store = Store()
    try:
        run = active_run(store)
    finally:
        store.close()
    if run:
        print(f"error: run {run['id']} is {run['status']}: a benchmark now would spoil both measurements; "
              f"wait or cancel it", file=sys.stderr)
        return 2

    def progress(done, total, sample):
        if not args.json or sys.stderr.isatty():
            print(f"\r  measured {done}/{total} cells", end="", file=sys.stderr, flush=True)

    try:
        result = bench.run(full=args.full, repeats=args.repeats, on_progress=progress)
    except bench.BenchError as e:
        print(f"\nerror: {e}", file=sys.stderr)
        return 1
    print(file=sys.stderr)
    bench.save(result)
    if args.json:
        print(json.dumps(result))
    else:
        print(format_table(result))
        b = result["best"]
        print(f"best: {b['precision']}, steps_per_execution {b['steps_per_execution']}, "
              f"XLA {'on' if b['jit_compile'] else 'off'}, {b['devices']} device(s): {b['speedup']:.2f}x")
    return 0
