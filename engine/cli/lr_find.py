"""`python -m engine lr-find`: the LR range test (Smith 2017, sec. 3.3) from the
command line; no TF in this process (the sweep runs in engine.lr_find.worker).

Wired up by engine.cli.main via ``add_parser(subparsers)``; the parser's default
``func`` is `main`.  Exit codes: 0 ok, 1 the sweep failed, 2 invalid input or
a training run is active (one line on stderr).
"""
from __future__ import annotations

import argparse
import sys

from engine.cli.printing import print_json, refuse_if_busy
from engine.config import ConfigError

HELP = "LR range test: short sweep with exponentially increasing learning rate; suggests a max LR"


def add_parser(subparsers) -> None:
    """Register the `lr-find` subcommand: RunConfig flags plus the sweep's own."""
    from engine.cli.flags import add_config_args

    p = subparsers.add_parser(
        "lr-find", help=HELP,
        description=HELP + ". Trains the configured model for up to --steps batches with the LR "
                    "rising exponentially from --start-lr to --end-lr (constant schedule, no warmup "
                    "or LR scaling, steps_per_execution 1), stops once the smoothed loss exceeds 4x "
                    "its minimum, and suggests the LR of the steepest loss descent (fallback: the LR "
                    "of the minimum loss / 10) as max_lr for cyclic / one_cycle or as learning_rate "
                    "(Smith 2017, 'Cyclical Learning Rates', sec. 3.3; fastai's lr_find). "
                    "The result is kept in $SPEEDLAB_HOME/lr-find-latest.json.")
    add_config_args(p)
    p.add_argument("--config", metavar="FILE", help="JSON file of settings (flags override it)")
    g = p.add_argument_group("sweep (--max-lr above is the run's peak LR, not the sweep's end)")
    g.add_argument("--start-lr", type=float, default=1e-6, metavar="LR",
                   help="learning rate of the first step [1e-06]")
    g.add_argument("--end-lr", type=float, default=1.0, metavar="LR",
                   help="learning rate of the last step (reached only if the loss has not diverged) [1.0]")
    g.add_argument("--steps", type=int, default=100, metavar="N",
                   help="sweep length in batches (the training data repeats as needed) [100]")
    g.add_argument("--timeout", type=float, default=300.0, metavar="S",
                   help="give up after this many seconds [300]")
    p.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    p.add_argument("--progress-file", default=None, help=argparse.SUPPRESS)  # the dashboard's job file
    p.set_defaults(func=main)


def _g(v, digits=4) -> str:
    return "-" if v is None else f"{v:.{digits}g}"


def format_table(result: dict) -> str:
    """About every 10th point of the sweep (plus the minimum, the suggestion and
    the last point) and the suggestion line."""
    lrs, losses, sm = result["lr"], result["loss"], result["smoothed"]
    s = result["suggestion"]
    n = len(lrs)
    stride = max(1, n // 10)
    rows = set(range(0, n, stride)) | ({n - 1} if n else set())
    marks = {}
    for key, label in (("min_loss_lr", "min smoothed loss"), ("steepest", "steepest descent")):
        if s.get(key) is not None and s[key] in lrs:
            i = lrs.index(s[key])
            rows.add(i)
            marks[i] = marks.get(i, []) + [label]
    lines = [f"{'step':>5}  {'lr':>10}  {'loss':>8}  {'smoothed':>8}"]
    for i in sorted(rows):
        note = ("  <- " + ", ".join(marks[i])) if i in marks else ""
        lines.append(f"{i:>5}  {lrs[i]:>10.3e}  {_g(losses[i]):>8}  {_g(sm[i]):>8}{note}")
    stop = {"end": f"reached --end-lr after {n} steps",
            "diverged": f"stopped after {n} steps: smoothed loss above 4x its minimum",
            "nan": f"stopped after {n} steps: loss not finite"}.get(result.get("stopped"), "")
    lines.append(f"sweep {result['min_lr']:g} -> {result['max_lr']:g}: {stop} "
                 f"({result.get('device_kind')}, {result.get('sweep_sec', 0):.1f} s)")
    if s.get("suggested") is None:
        why = s.get("reason") or ""
        lines.append(why if why.startswith("no ") else f"no suggestion: {why}")
    else:
        lines.append(f"steepest: {_g(s.get('steepest'), 3)}, min loss at {_g(s.get('min_loss_lr'), 3)} "
                     f"(/10 = {_g(s.get('min_over_10'), 3)})")
        if s["method"] != "steepest":
            lines.append(f"note: {s['reason']}")
        lines.append(f"suggested max_lr: {s['suggested']:.3g} ({s['method']})")
    return "\n".join(lines)


def main(args) -> int:
    """Run the sweep, then print the table (or one JSON object with --json)."""
    from engine.lr_find import range_test as lr_find
    from engine.cli.flags import config_from_args
    from engine.jobs.runner import ActiveRunError

    from engine.jobs import background

    try:
        cfg = config_from_args(args)
        lr_find.check_sweep(args.start_lr, args.end_lr, args.steps)
        # The autopilot between its runs, a benchmark, the demo, a run. Not the LR range
        # test's own file: the page starts this command after writing it.
        if refuse_if_busy(skip=(background.LR_FIND_FILE,)):
            return 2
        if not args.json:
            print(f"lr-find: {cfg.model} on {cfg.dataset}, {cfg.optimizer}, batch {cfg.batch_size}: "
                  f"LR {args.start_lr:g} -> {args.end_lr:g} over up to {args.steps} steps ...",
                  file=sys.stderr)
        result = lr_find.run(cfg, min_lr=args.start_lr, max_lr=args.end_lr, steps=args.steps,
                             timeout_s=args.timeout)
    except KeyboardInterrupt:  # SIGINT, SIGTERM or SIGHUP (engine.cli.main): the job says which
        background.end_by_signal(args.progress_file, "LR range test")
        raise
    except (ConfigError, ActiveRunError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except lr_find.LRFindError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for w in result.get("warnings") or []:
        print(f"warning: {w}", file=sys.stderr)
    if args.json:
        print_json(result)
    else:
        print(format_table(result))
    return 0
