"""``python -m engine pairs``: two commands as interleaved pairs (engine.jobs.command_pairs).

It prints the comparison as `run --baseline` and `noise` do (engine.cli.comparison)."""
from __future__ import annotations

import argparse
import sys

from engine.cli.printing import print_json, refuse_if_busy
from engine.cli.comparison import comparison_json, comparison_rows


def add_parser(sub) -> None:
    from engine.jobs.command_pairs import DEFAULT_TIMEOUT_S

    s = sub.add_parser("pairs", help="compare two training commands in interleaved pairs (AB BA ...)",
                       description="Run --baseline-cmd and --cmd as interleaved pairs (AB, BA, ...), one process "
                                   "at a time, pair i with SPEEDLAB_SEED=seed+i on both sides. Commands run "
                                   "WITHOUT a shell: shell syntax (> | ; & $ ` * ? ~ # ( ), VAR=1 cmd) is refused "
                                   "before anything trains (use env VAR=1 cmd, or a script: bash run.sh), and "
                                   "both programs must exist before the first pair. Each "
                                   "side's run is recorded by SpeedLabCallback (SPEEDLAB_GROUP, SPEEDLAB_ROLE, "
                                   "SPEEDLAB_RUN_FILE). Prints the same comparison as run --baseline.")
    s.add_argument("--baseline-cmd", required=True, metavar="CMD", help='the baseline, e.g. "python train.py"')
    s.add_argument("--cmd", required=True, metavar="CMD", help='the candidate, e.g. "python train.py --bf16"')
    s.add_argument("--pairs", type=int, default=3, metavar="N", help="number of pairs (2 or more for an interval) [3]")
    s.add_argument("--seed", type=int, default=0, help="pair i gets SPEEDLAB_SEED = seed + i [0]")
    s.add_argument("--timeout-s", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"stop a side after S s; its pair fails [{DEFAULT_TIMEOUT_S:.0f}]")
    s.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    s.add_argument("--quiet", action="store_true", help="no progress lines")
    s.add_argument("--progress-file", default=None, help=argparse.SUPPRESS)  # the dashboard's job file
    s.set_defaults(func=cmd_pairs)


def cmd_pairs(args) -> int:
    """Exit code 0: every pair complete; 1: a pair failed; 2: invalid input; 128 + the signal
    (130 for Ctrl-C, 143 for SIGTERM): stopped by a stop signal, its complete pairs kept."""
    from engine.jobs import command_pairs

    from engine.jobs import background

    command_pairs.check(args.baseline_cmd, args.cmd, args.pairs, args.timeout_s)
    own = background.own_job_file(args.progress_file, background.PAIRS_FILE)  # the page wrote it: ours
    if refuse_if_busy(skip=(background.PAIRS_FILE,) if own else ()):
        return 2

    def started(cid):
        if not args.quiet:
            print(f"comparison {cid} (your baseline command vs your command; {args.pairs} pairs; "
                  f"pair i on seed {args.seed}+i, order AB BA ...)", file=sys.stderr)

    def on_side(s):
        if not args.quiet and not s.get("refused"):  # a refusal is said once, at the end
            what = f"run #{s['run_id']}" if s["run_id"] is not None else "no run"
            print(f"pair {s['pair'] + 1} ({s['order']}) {s['role']}: {what}" +
                  (f"; failed: {s['error']}" if s["error"] else ""), file=sys.stderr)

    comp = command_pairs.run(args.baseline_cmd, args.cmd, args.pairs, seed=args.seed, timeout_s=args.timeout_s,
                             on_side=on_side, comparison_id=started)
    if comp.get("refused"):  # the comparison ended there: one line, nothing else to show
        print(f"error: {comp['refused']}", file=sys.stderr)
        return 1
    out = {"commands": (comp.get("settings") or {}).get("commands"), "comparison": comparison_json(comp)}
    if args.json:
        print_json(out)
    else:
        print(f"{'baseline command':>20}  {out['commands']['baseline']}")
        print(f"{'command':>20}  {out['commands']['run']}")
        for k, v in comparison_rows(out["comparison"]):
            print(f"{k:>20}  {v}")
        for p in comp.get("plan") or []:
            if p.get("error"):
                print(f"{'pair ' + str(p['pair'] + 1):>20}  failed: {p['error']}")
    from engine.base.process import RECEIVED

    if comp["status"] == "stopped" and RECEIVED["signal"]:  # 128 + the signal, as a shell reports it
        import signal

        return 128 + int(getattr(signal, RECEIVED["signal"]))
    return 0 if comp["status"] == "completed" else 1
