"""``python -m engine run``: train one configuration in a fresh worker, follow it, print its summary."""
from __future__ import annotations

import sys

from engine.cli.flags import add_config_args, config_from_args
from engine.cli.follow import follow
from engine.cli.printing import print_json, print_summary, result_json
from engine.cli.comparison import add_pair_args, check_pair_args, comparison_json, comparison_rows, follow_comparison


def add_parser(sub) -> None:
    s = sub.add_parser("run", help="train one configuration in a fresh worker and measure it",
                       description="Train one configuration in a fresh worker process, show progress, "
                                   "store the run, and print its summary (last stdout line with --json).")
    add_config_args(s)
    add_pair_args(s)
    s.add_argument("--config", metavar="FILE", help="JSON file of settings (flags override it)")
    s.add_argument("--baseline", nargs="?", const="default", choices=("default", "tuned"),
                   help="compare with the float32 single-device baseline: interleaved pairs (AB BA ...), "
                        "seed i for pair i, a 95%% interval and a verdict (see --pairs); 'tuned': its "
                        "schedule, peak learning rate and label smoothing from python -m engine "
                        "tune-baseline (its age is shown)")
    s.add_argument("--reuse-baseline", action="store_true",
                   help="with --baseline: one run against a stored baseline of this machine (its age is "
                        "shown) instead of fresh pairs; no interval")
    s.add_argument("--allow-slow", action="store_true",
                   help="launch a precision this CPU emulates (mixed_bfloat16 without avx512_bf16/amx_bf16, "
                        "mixed_float16 without avx512_fp16/amx_fp16): refused otherwise, with the probe's slowdown")
    s.add_argument("--use-unknown-machine", action="store_true",
                   help="count runs, tuned baselines and noise floors stored before machine fingerprints "
                        "(machine unknown) as this machine's (the setting SPEEDLAB_USE_UNKNOWN_MACHINE=1)")
    s.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    s.add_argument("--quiet", action="store_true", help="no progress line")
    s.set_defaults(func=cmd_run)


def cmd_run(args) -> int:
    """Exit code 0 completed, 1 failed or cancelled, 2 invalid settings or the machine is busy
    (a run, the autopilot between its runs, the quick benchmark, an LR range test or the
    transfer demo: engine.jobs.background.busy, as on the Train page). Only the CLI comes
    here: the autopilot's and the demo's runs go through engine.jobs.runner."""
    from engine.jobs import runner
    from engine.jobs.launch import Busy, SlowHere, launch
    from engine.store import Store

    cfg = config_from_args(args)
    from engine.config import user_model
    from engine.config.preflight import check_runnable, check_user_model

    if args.use_unknown_machine:  # read by every "this machine" lookup (engine.hardware.fingerprint)
        import os

        from engine.hardware.fingerprint import UNKNOWN_SETTING

        os.environ[UNKNOWN_SETTING] = "1"

    if cfg.dataset != "synthetic" and any(getattr(args, k, None) is not None for k in
                                          ("synthetic_shape", "synthetic_classes", "synthetic_samples")):
        print(f"warning: --synthetic-* settings only apply to --dataset synthetic (not {cfg.dataset})",
              file=sys.stderr)
    own = user_model(cfg.model) is not None and not args.quiet
    if own:  # the check below starts Keras in a process of its own: say so before the wait
        print(f"checking your model {cfg.model}: building it for {cfg.dataset} in a fresh process "
              "(starting Keras takes 5-30 s) ...", file=sys.stderr, flush=True)
    for w in check_runnable(cfg):
        print(f"warning: {w}", file=sys.stderr)
    if own:
        params = (check_user_model(cfg) or {}).get("params")  # remembered: not built again
        print(f"your model builds and fits {cfg.dataset}" + (f" ({params:,} parameters)" if params else "")
              + "; queueing the run (its worker starts TensorFlow or JAX again)", file=sys.stderr, flush=True)
    check_pair_args(args)
    if args.baseline == "tuned" and not args.reuse_baseline:
        _say_tuned(cfg, args)
    try:
        launched = launch(cfg, baseline=args.baseline, reuse=args.reuse_baseline, own_baseline="aa",
                          all_epochs=getattr(args, "all_epochs", False), pairs=args.pairs, max_pairs=args.max_pairs,
                          target_half_width=args.within, budget_s=args.budget_s, margin=getattr(args, "margin", None),
                          allow_slow=args.allow_slow)
    except SlowHere as e:
        print(f"error: not launched: {e.reason}; pass --allow-slow to launch it anyway", file=sys.stderr)
        return 2
    except Busy as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if launched.what == "comparison":
        return _run_pairs(launched, args)
    rid, bid, reused = launched.run_id, launched.baseline_id, launched.reused
    if launched.note:
        print(f"note: {launched.note}", file=sys.stderr)
    if launched.what == "pair":
        if not args.quiet:
            print(f"baseline: run {bid}" + (" (reused)" if reused else ""), file=sys.stderr)
        if bid != rid and not reused:
            base = follow(bid, args.quiet)
            if base["status"] != "completed":
                runner.cancel(rid)
    run = follow(rid, args.quiet)
    out = result_json(run)
    from engine.report.pair import backend_speedup, compare

    store = Store()
    try:
        if bid is not None and bid != rid:
            out["comparison"] = compare(store, bid, rid)
            if reused:
                base = store.get_run(bid)
                out["comparison"].update(baseline_reused=True, baseline_measured=base.get("started"), pairs=1,
                                         verdict=None, pair_ratios=[out["comparison"]["time_to_accuracy_speedup"]],
                                         time_to_accuracy_ci95=None)
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


def _say_tuned(cfg, args) -> None:
    """The stored tuned baseline's age and host, before its pairs are queued (as for a reused
    baseline); a missing one is the comparison's ConfigError, one line."""
    from engine.jobs.comparison import baseline_of
    from engine.jobs.noise import age_text

    _, row = baseline_of(cfg, "tuned")
    if not args.quiet:
        from engine.store.tuned_baselines import describe

        print(f"tuned baseline: {row['optimizer']}, {describe(row)} (tune-baseline #{row['id']}, "
              f"{age_text(row.get('created'))}, on {(row.get('fingerprint') or {}).get('name') or 'machine unknown'})",
              file=sys.stderr)


def _run_pairs(launched, args) -> int:
    """--baseline: the comparison of interleaved pairs `launch` queued, followed; the summary
    printed is the last run's of the configuration, plus 'comparison'."""

    from engine.store import Store

    if launched.kind == "aa" and not args.quiet:
        print("note: this configuration is its own baseline: the pairs measure it against itself (A/A)",
              file=sys.stderr)
    comp = follow_comparison(launched.comparison_id, launched.config, launched.kind, args)
    store = Store()
    try:
        ids = (comp.get("result") or {}).get("run_ids") or []
        runs = [store.get_run(i) for i in ids]
        runs = [r for r in runs if r and r["status"] != "queued"]
        run = next((r for r in reversed(runs) if r["status"] == "completed"), runs[-1] if runs else None)
    finally:
        store.close()
    out = result_json(run) if run else {"run_id": None, "status": comp["status"], "error": comp.get("ended_by")}
    out["comparison"] = comparison_json(comp)
    if args.json:
        print_json(out)
    else:
        if run:  # the run's own summary; the comparison's rows follow (not a one-pair compare())
            print_summary({k: v for k, v in out.items() if k != "comparison"})
        width = 20
        for k, v in comparison_rows(out["comparison"]):
            print(f"{k:>{width}}  {v}")
    return 0 if comp["status"] == "completed" and out["comparison"].get("pairs") else 1

