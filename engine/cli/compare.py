"""``python -m engine compare BASELINE_ID RUN_ID``: speedup of a run over its baseline."""
from __future__ import annotations

import json

from engine.cli.common import fmt, get_run


def add_parser(sub) -> None:
    s = sub.add_parser("compare", help="speedup of RUN_ID over BASELINE_ID")
    s.add_argument("baseline_id", type=int)
    s.add_argument("run_id", type=int)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    from engine.report.compare import compare
    from engine.store import Store

    store = Store()
    try:
        for rid in (args.baseline_id, args.run_id):
            if get_run(store, rid) is None:
                return 2
        c = compare(store, args.baseline_id, args.run_id)
    finally:
        store.close()
    if args.json:
        print(json.dumps(c))
        return 0
    print(f"baseline run {c['baseline_id']}: {fmt(c['baseline_samples_per_sec'])} samples/s")
    print(f"run {c['run_id']}: {fmt(c['samples_per_sec'])} samples/s")
    print(f"throughput speedup: {fmt(c['throughput_speedup'], 3)}x")
    if c["time_to_target_speedup"] is not None:
        print(f"time-to-target speedup: {c['time_to_target_speedup']:.3f}x "
              f"({c['baseline_time_to_target_sec']:.2f} s vs {c['time_to_target_sec']:.2f} s)")
    for line in c["caveats"]:
        print(f"caveat: {line}")
    return 0
