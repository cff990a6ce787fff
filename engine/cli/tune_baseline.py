"""``python -m engine tune-baseline``: tune the baseline's constant learning rate for a data
set, model, global batch size and optimizer (engine.autopilot.tune) and store it, so that
``run --baseline tuned`` measures against it. Exit codes: 0 stored, 1 no learning rate
reached the target on every seed, 2 invalid input or the machine is busy."""
from __future__ import annotations

import sys

from engine.cli.common import add_config_args, config_from_args, print_json


def add_parser(sub) -> None:
    s = sub.add_parser("tune-baseline", help="tune the float32 baseline's constant learning rate and store it",
                       description="Sweep 5 log-spaced constant learning rates (x1/4 ... x4) around the LR range "
                                   "test's suggestion for the float32 single-device baseline, train each to the "
                                   "target accuracy on 2 seeds (stopping there), keep the fastest that reaches "
                                   "it on both, and store it for run --baseline tuned.")
    add_config_args(s)
    s.add_argument("--center-lr", type=float, metavar="LR",
                   help="centre of the sweep [the LR range test's suggestion]")
    s.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    s.add_argument("--quiet", action="store_true", help="no line per run")
    s.set_defaults(func=cmd_tune)


def cmd_tune(args) -> int:
    from engine.autopilot import tune
    from engine.base.errors import ConfigError
    from engine.jobs import background

    cfg = config_from_args(args)
    if args.center_lr is not None and not args.center_lr > 0:
        raise ConfigError("center_lr", args.center_lr, "is not positive", "give e.g. 0.001")
    why = background.busy()
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2

    def line(r):
        if not args.quiet:
            t = r["time_to_accuracy_sec"]
            print(f"lr {r['learning_rate']:g}, seed {r['seed']}: run {r['run_id']} "
                  + (f"reached the target in {t:.1f} s" if t is not None else f"did not reach the target ({r['status']})"),
                  file=sys.stderr)

    try:
        out = tune.tune(cfg, center=args.center_lr, on_run=line)
    except tune.TuneError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.json:
        print_json(out)
    else:
        print(f"tuned learning rate {out['learning_rate']:g} for {cfg.dataset}/{cfg.model}, global batch "
              f"{cfg.batch_size}, {cfg.optimizer}: {out['mean_time_to_accuracy_sec']:.1f} s to "
              f"{out['target_accuracy']:g} on average over seeds {out['seeds_reached']} (stored as #{out['tuned_id']}; "
              f"sweep {', '.join(f'{x:g}' for x in out['learning_rates'])} around {out['center']:.3g} "
              f"from the {out['center_from']})")
    return 0
