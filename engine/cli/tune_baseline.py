"""``python -m engine tune-baseline``: tune the baseline's schedule, peak learning rate and label
smoothing for a data set, model, global batch size and optimizer (engine.autopilot.tune) and store
them, so that ``run --baseline tuned`` measures against them. Exit codes: 0 stored, 1 no
configuration reached the target on enough tuning seeds, 2 invalid input or the machine is busy."""
from __future__ import annotations

import sys

from engine.cli.flags import add_config_args, config_from_args
from engine.cli.printing import print_json, refuse_if_busy


def add_parser(sub) -> None:
    s = sub.add_parser("tune-baseline",
                       help="tune the float32 baseline's schedule, peak learning rate and label smoothing; store it",
                       description="Tune the float32 single-device baseline within its epoch budget (--epochs): "
                                   "schedules constant, warmup_cosine (warmup 10% of the epochs) and one_cycle "
                                   "(the decaying two over the whole budget and a third of it), "
                                   "each at 4 peak learning rates (x1/2 ... x4 the LR range test's suggestion) "
                                   "and label smoothing 0 and 0.1, trained to the target accuracy (stopping "
                                   "there) on reserved tuning seeds 900000-900003 by successive halving: every "
                                   "configuration on one seed, the best tenth on the other three. Keeps the best "
                                   "median time to accuracy among those that reached it on at least 3 of 4 "
                                   "seeds, and stores it for run --baseline tuned. About 52 runs: an estimate is "
                                   "printed first, progress after each run.")
    add_config_args(s)
    s.add_argument("--center-lr", type=float, metavar="LR",
                   help="centre of the peak learning rates [the LR range test's suggestion]")
    s.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    s.add_argument("--quiet", action="store_true", help="no estimate and no line per run")
    s.set_defaults(func=cmd_tune)


def _minutes(sec: float) -> str:
    return f"about {sec / 60:.0f} min" if sec >= 90 else f"about {sec:.0f} s"


def config_text(r: dict) -> str:
    """'warmup_cosine over 5 epochs, peak lr 0.004, label smoothing 0.1' of a tune result or run (a
    constant rate has no length)."""
    over = f" over {r['epochs']} epochs" if r.get("epochs") and r["schedule"] != "constant" else ""
    return (f"{r['schedule']}{over}, peak lr {r['learning_rate']:g}"
            + (f", label smoothing {r['label_smoothing']:g}" if r.get("label_smoothing") else ""))


def cmd_tune(args) -> int:
    from engine.autopilot import tune
    from engine.base.errors import ConfigError

    cfg = config_from_args(args)
    if args.center_lr is not None and not args.center_lr > 0:
        raise ConfigError("center_lr", args.center_lr, "is not positive", "give e.g. 0.001")
    if refuse_if_busy():
        return 2

    def plan(p):
        if not args.quiet:
            print(f"tune-baseline: about {p['runs']} runs ({p['configs']} configurations on 1 seed, the best tenth "
                  f"on 3 more), {_minutes(p['estimate_sec'])} (at {p['run_sec']:.0f} s a run, "
                  f"{p['run_sec_from']})", file=sys.stderr)

    def line(r):
        if not args.quiet:
            t = r["time_to_accuracy_sec"]
            print(f"run {r['index']} of {r['of']}, {_minutes(r['left_sec'])} left: {config_text(r)}, seed "
                  f"{r['seed']}: run {r['run_id']} "
                  + (f"reached the target in {t:.1f} s" if t is not None else f"did not reach the target ({r['status']})"),
                  file=sys.stderr)

    try:
        out = tune.tune(cfg, center=args.center_lr, on_run=line, on_plan=plan)
    except tune.TuneError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.json:
        print_json(out)
    else:
        sp = out["spread"]
        print(f"tuned baseline for {cfg.dataset}/{cfg.model}, global batch {cfg.batch_size}, {cfg.optimizer}: "
              f"{config_text(out)}"
              + (f", warmup {out['warmup_epochs']:g} epochs" if out.get("warmup_epochs") else "")
              + f"; median {out['median_time_to_accuracy_sec']:.1f} s to {out['target_accuracy']:g}, reached on "
              f"{out['reached']['seeds']} of {out['reached']['of']} tuning seeds ({sp['min_sec']:.1f}-"
              f"{sp['max_sec']:.1f} s); stored as #{out['tuned_id']} after {len(out['runs'])} runs in "
              f"{out['wall_sec'] / 60:.1f} min (peak rates {', '.join(f'{x:g}' for x in out['learning_rates'])} "
              f"around {out['center']:.3g} from the {out['center_from']})")
    return 0
