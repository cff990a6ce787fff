"""``python -m engine autopilot --target 0.95 --budget 300 [--json]``: search this
machine for the fastest route to a target validation accuracy, confirm the
winner against the baseline and explain it (engine.autopilot.search).

Exit codes: 0 done, 1 stopped or no trial reached the target, 2 invalid input
or the machine is busy (one line on stderr).
"""
from __future__ import annotations

import json
import sys
import threading
from typing import Optional

from engine.base import process
from engine.cli.printing import print_json, refuse_if_busy

HELP = "search for the fastest route to a target validation accuracy on this machine, and explain it"


def add_parser(sub) -> None:
    p = sub.add_parser(
        "autopilot", help=HELP,
        description=HELP.capitalize() + ". Trials are real stored runs (role 'trial'), proposed by "
                    "Optuna's seeded TPE sampler over what the hardware verdicts allow (precision, steps "
                    "per execution, global batch with the linear scaling rule and warmup, constant or "
                    "one-cycle schedule, label smoothing, XLA, real devices, and the optimizer, weight EMA, "
                    "CutMix, gradient accumulation, test-time augmentation and progressive resizing); "
                    "each ends at the target, or "
                    "as soon as its training runs longer than the best time so far, or than its share of "
                    "the budget. Then the winner and the baseline re-run in --repeats interleaved pairs "
                    "(AB, BA, ...), with the winner without each technique in the same rounds (a "
                    "leave-one-out ablation: what each technique bought); each is a stored comparison "
                    "(geometric mean, 95% interval and verdict), listed on the Runs page.")
    p.add_argument("--target", type=float, default=None, metavar="ACC",
                   help="validation accuracy to reach, 0-1 [the data set's default, e.g. 0.95 on digits]")
    p.add_argument("--budget", type=float, default=300.0, metavar="S",
                   help="wall-clock seconds for the search (the re-runs and the ablation follow) [300]")
    base = p.add_argument_group("what to train (the baseline's settings)")
    base.add_argument("--dataset", default="digits", help="data set [digits]")
    base.add_argument("--model", default="cnn", help="model [cnn]")
    base.add_argument("--batch-size", type=int, default=128, metavar="N",
                      help="the baseline's global batch size; the search scales it 0.5-4x [128]")
    base.add_argument("--epochs", type=int, default=20, metavar="N",
                      help="epoch cap per run (each stops at the target) [20]")
    base.add_argument("--optimizer", default="adam", help="adam, sgd or rmsprop [adam]")
    base.add_argument("--learning-rate", type=float, default=1e-3, metavar="LR",
                      help="base learning rate at the baseline's batch [0.001]")
    base.add_argument("--seed", type=int, default=0,
                      help="seed of the sampler and of the trials; re-runs use the seeds after it [0]")
    base.add_argument("--config", metavar="FILE",
                      help="JSON file of further run settings (e.g. synthetic_shape); the flags above win")
    how = p.add_argument_group("search")
    how.add_argument("--repeats", type=int, default=3, metavar="N",
                     help="rounds of interleaved re-runs of the baseline and the winner (and the winner without "
                          "each technique), each comparison stored as the Train page's; 0 = no re-runs: no "
                          "confirmation and no ablation [3]")
    how.add_argument("--no-explain", action="store_true",
                     help="skip the leave-one-out ablation (the winner without each technique in every round)")
    how.add_argument("--lr-find", choices=("auto", "yes", "no"), default="auto",
                     help="LR range test for one-cycle's max LR: auto = reuse a stored one, else run one "
                          "when the budget is at least 120 s; yes = reuse or run one; no = none, stored or "
                          "new (one-cycle peaks at 5x the base LR) [auto]")
    how.add_argument("--max-lr", type=float, default=None, metavar="LR",
                     help="one-cycle's max LR at the baseline's batch (skips the LR range test)")
    p.add_argument("--json", action="store_true", help="print the final state as one JSON object, last on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--progress-file", metavar="FILE",
                   help="also keep FILE (JSON, replaced atomically) up to date with the live state, besides "
                        "$SPEEDLAB_HOME/autopilot.json, which the dashboard's Autopilot page reads; FILE's "
                        "folder must exist")
    p.set_defaults(func=main)


def base_config(args):
    """The baseline's RunConfig from the flags (and --config). Raises ConfigError."""
    from engine.config import ConfigError, RunConfig

    extra = {}
    if args.config:
        try:
            with open(args.config) as fh:
                extra = json.load(fh)
        except (OSError, ValueError) as e:
            raise ConfigError("config", args.config, f"cannot be read as JSON ({e})",
                              "give a JSON file of run settings") from None
        if not isinstance(extra, dict):
            raise ConfigError("config", args.config, "is not a JSON object", 'write {"dataset": "digits", ...}')
    return RunConfig.from_dict({**extra, "dataset": args.dataset, "model": args.model,
                                "batch_size": args.batch_size, "epochs": args.epochs,
                                "optimizer": args.optimizer, "learning_rate": args.learning_rate,
                                "seed": args.seed})


def runoff_line(ro: dict) -> str:
    """The runoff in one line: each finalist's search time, then its re-runs on the runoff's
    seeds ('missed' where one did not reach the target)."""
    seeds = ro.get("seeds") or []
    on = f"on seed{'s' if len(seeds) != 1 else ''} {', '.join(str(x) for x in seeds)}" if seeds else "again"
    return (f"runoff (the fastest trials re-run {on}; the one that reached the target on the most seeds, then "
            "with the lowest mean time, wins): " + "; ".join(
                f"trial {r['trial']} {_secs(r['time_to_target_sec'])} + "
                + ", ".join("missed" if x is None else _secs(x) for x in r.get("rerun_secs") or [])
                for r in ro["runs"]))


def _secs(v) -> str:
    return "not reached" if v is None else f"{v:.2f} s"


def trial_line(t: dict) -> str:
    """'trial 3 (run #12) bfloat16 · ...: reached 0.95 in 2.31 s of training'."""
    return f"trial {t['trial']} (run #{t['run_id']}) {t['label']}: {t['reason']}"


def summary_lines(state: dict, comps: Optional[dict] = None) -> list[str]:
    """The final report: best trial, the confirmation's speedup, explanation, notes. `comps`: the
    autopilot's stored comparisons (engine.autopilot.confirm.stored), which every figure of the
    confirmation and the ablation comes from."""
    out = []
    target = state["target_accuracy"]
    n = len(state["trials"])
    reached = sum(1 for t in state["trials"] if t["kind"] == "reached")
    pruned = sum(1 for t in state["trials"] if t["kind"] == "pruned")
    out.append(f"search: {n} trial{'s' if n != 1 else ''} in {state.get('search_wall_sec') or 0:.0f} s (budget "
               f"{state['budget_sec']:.0f} s): {reached} reached {target:g}, {pruned} pruned; one-cycle max LR "
               f"{', '.join(f'{x:.3g}' for x in state['max_lr']['choices'])} from {state['max_lr']['source']}" if state.get("max_lr") else
               f"search: {n} trial{'s' if n != 1 else ''}")
    if state.get("tried"):
        from engine.autopilot.space import tried_text

        out.append(f"tried (trials using each technique over the baseline): {tried_text(state['tried'])}")
    ro = state.get("runoff")
    if ro and ro.get("runs"):
        out.append(runoff_line(ro))
    w, best = state.get("winner"), state.get("best")
    if not w and best and best.get("time_to_target_sec") is not None:  # stopped before the runoff chose one
        out.append(f"no winner chosen (stopped); the fastest trial so far: trial {best['trial']} "
                   f"(run #{best['run_id']}): {best['label']}; {_secs(best['time_to_target_sec'])} to {target:g}")
    elif not w:
        out.append(f"no trial reached {target:g}")
    else:
        out.append(f"winner: trial {w['trial']} (run #{w['run_id']}): {w['label']}; "
                   f"{_secs(w['search_time_to_target_sec'])} to {target:g} in the search")
    out += confirmation_lines(state, comps or {})
    for note in state.get("notes") or []:
        out.append(f"note: {note}")
    if state.get("phase") == "stopped":
        out.append(f"{state.get('stopped_by') or 'stopped by the user'}: what is above is what had been "
                   "measured by then")
    return out


def confirmation_lines(state: dict, comps: dict) -> list[str]:
    """The confirmation and the ablation in words, from their stored comparisons (`comps`:
    engine.autopilot.confirm.stored): the headline of each as the Runs page's table says it."""
    from engine.autopilot.confirm import TUNED, ablation_entries
    from engine.autopilot.explain import explanation
    from engine.report.headline import comparison_headline

    out = []
    conf, comp = state.get("confirm") or {}, comps.get("confirmation")
    if comp is not None:
        r = comp.get("result") or {}
        h = comparison_headline(r, in_progress=comp["status"] == "running")
        n, repeats = (r.get("time_to_accuracy") or {}).get("pairs", 0), conf.get("repeats")
        pairs = (f"{repeats} interleaved re-run pairs" if n == repeats else
                 f"{n} of {repeats} interleaved re-run pairs complete")
        # "confirmation", never "confirmed": the verdict that follows may be inconclusive or slower.
        out.append(f"confirmation ({pairs}, seeds {conf.get('seeds')}; comparison #{comp['id']}): {h['text']}")
        out += [f"  {h[k]}" for k in ("factors", "setup", "reached", "test", "note") if h.get(k)]
    for name, pair in (comps.get("extra") or {}).items():
        c = pair.get("winner")
        if c is not None and c.get("result"):
            label = state.get("tuned_label") if name == TUNED and state.get("tuned_label") else name
            out.append(f"winner vs {label} (comparison #{c['id']}): {comparison_headline(c['result'])['text']}")
    entries = ablation_entries(state.get("ablation") or [], comps.get("ablation") or {}, state)
    line = explanation(entries) if entries else ""
    if line:
        out.append(f"why (time to target without each technique / the winner's): {line}")
    return out


def main(args) -> int:
    from engine.cli.bench import check_progress_file, progress_writer
    from engine.data.meta import target_for
    from engine.base.errors import ConfigError
    from engine.jobs import background
    from engine.autopilot import search as autopilot

    if args.progress_file:
        try:
            check_progress_file(args.progress_file, background.AUTOPILOT_FILE)
        except ConfigError as e:  # not written to: it is the file that is wrong
            print(f"error: {e}", file=sys.stderr)
            return 2
    writers = [progress_writer(args.progress_file)]

    def write(**fields):
        for w in writers:
            w(**fields)

    def fail(msg: str, code: int = 2) -> int:
        write(state="failed", error=msg)
        print(f"error: {msg}", file=sys.stderr)
        return code

    try:
        base = base_config(args)
        target = target_for(args.target, base.dataset)
        if target is None:
            raise ConfigError("target", None, f"has no default for {base.dataset}",
                              "give --target, a validation accuracy in (0, 1]")
        stop = threading.Event()
        ap = autopilot.Autopilot(base, target, args.budget, repeats=args.repeats, explain=not args.no_explain,
                                 lr_find=args.lr_find, max_lr=args.max_lr, stop=stop)
    except ConfigError as e:
        return fail(str(e))
    own = background.own_job_file(args.progress_file, background.AUTOPILOT_FILE)
    refused = refuse_if_busy(skip=(background.AUTOPILOT_FILE,) if own else ())  # prints the one line
    if refused:
        write(state="failed", error=refused)  # the progress file says it too
        return 2
    if not own:  # the page and busy() follow a search started here through the page's file too
        writers.append(progress_writer(autopilot.progress_path()))
    def on_signal(_name):  # SIGINT, SIGTERM, SIGHUP: the search stops alike, saying why
        if not stop.is_set():
            stop.why = background.stopped_line(args.progress_file, "autopilot")  # engine.autopilot.watch.stop_why
        stop.set()

    process.on_stop_signals(on_signal)
    printed = set()

    def on_update(state):
        write(state="running", **state)
        if args.quiet:
            return
        for t in state["trials"]:
            if t["trial"] not in printed:
                printed.add(t["trial"])
                print(trial_line(t), file=sys.stderr, flush=True)

    ap.on_update = on_update
    if not args.quiet:
        dims = ", ".join(f"{k} {list(v)}" for k, v in ap.space.choices.items() if len(v) > 1 and k != "max_lr")
        print(f"autopilot {ap.id}: {base.dataset}, {base.model}, target {target:g}, budget {args.budget:.0f} s; "
              f"searching {dims} (steps per execution capped at an epoch's steps for the batch; one-cycle's max "
              "LR comes next)", file=sys.stderr, flush=True)
    try:
        state = ap.run()
    except Exception as e:  # noqa: BLE001 - the progress file must not stay 'running'
        return fail(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}", 1)
    stopped = state["phase"] == "stopped"
    if stopped:
        state = {**state, "stopped_by": autopilot.stop_why(stop)}
    write(state="cancelled" if stopped else "done", **{k: v for k, v in state.items() if k != "state"},
          error=state["stopped_by"] if stopped else None)
    if args.json:
        print_json(state)
    else:
        from engine.autopilot.confirm import stored
        from engine.store import Store

        with Store() as store:
            print("\n".join(summary_lines(state, stored(store, state.get("confirm")))))
    return 1 if stopped or not state.get("winner") else 0
