"""``python -m engine run``: train one configuration in a fresh worker, follow it, print its summary."""
from __future__ import annotations

import sys

from engine.cli.common import add_config_args, config_from_args, follow, print_json, print_summary, result_json


def add_parser(sub) -> None:
    s = sub.add_parser("run", help="train one configuration in a fresh worker and measure it",
                       description="Train one configuration in a fresh worker process, show progress, "
                                   "store the run, and print its summary (last stdout line with --json).")
    add_config_args(s)
    s.add_argument("--config", metavar="FILE", help="JSON file of settings (flags override it)")
    s.add_argument("--baseline", action="store_true",
                   help="first run (or reuse) the float32 single-device baseline and report the speedup")
    s.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    s.add_argument("--quiet", action="store_true", help="no progress line")
    s.set_defaults(func=cmd_run)


def cmd_run(args) -> int:
    """Exit code 0 completed, 1 failed or cancelled, 2 invalid settings or the machine is busy
    (a run, the autopilot between its runs, the quick benchmark, an LR range test or the
    transfer demo: engine.jobs.background.busy, as on the Train page). Only the CLI comes
    here: the autopilot's and the demo's runs go through engine.jobs.runner."""
    from engine.jobs import background, runner
    from engine.store import Store

    cfg = config_from_args(args)
    why = background.busy()
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    from engine.preflight import check_runnable

    if cfg.dataset != "synthetic" and any(getattr(args, k, None) is not None for k in
                                          ("synthetic_shape", "synthetic_classes", "synthetic_samples")):
        print(f"warning: --synthetic-* settings only apply to --dataset synthetic (not {cfg.dataset})",
              file=sys.stderr)
    for w in check_runnable(cfg):
        print(f"warning: {w}", file=sys.stderr)
    if args.baseline:
        bid, rid, reused = runner.launch_with_baseline(cfg)
        if not args.quiet:
            print(f"baseline: run {bid}" + (" (reused)" if reused else ""), file=sys.stderr)
        if bid != rid and not reused:
            base = follow(bid, args.quiet)
            if base["status"] != "completed":
                runner.cancel(rid)
    else:
        (rid,) = runner.submit([cfg])
        bid = None
    run = follow(rid, args.quiet)
    out = result_json(run)
    from engine.report.compare import backend_speedup, compare

    store = Store()
    try:
        if bid is not None and bid != rid:
            out["comparison"] = compare(store, bid, rid)
        backend = backend_speedup(store, rid) if run["status"] == "completed" else None
        if backend is not None:  # the same configuration stored on the other backend
            out["backend_comparison"] = backend
    finally:
        store.close()
    if args.json:
        print_json(out)
    else:
        print_summary(out)
    return 0 if run["status"] == "completed" else 1
