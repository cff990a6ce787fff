"""``python -m engine show RUN_ID``: one run's config, environment, summary and epochs."""
from __future__ import annotations

import json

from engine.cli.printing import get_run, print_json, print_summary, result_json, time_table
from engine.store import from_script_run


def add_parser(sub) -> None:
    s = sub.add_parser("show", help="one run's config, environment, summary and epochs")
    s.add_argument("run_id", type=int)
    s.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    s.set_defaults(func=cmd_show)


def cmd_show(args) -> int:
    from engine.report.pair import breakdown  # here: it imports pandas, which no other command's start needs
    from engine.report.progress import live_summary
    from engine.store import Store

    store = Store()
    try:
        run = get_run(store, args.run_id)
        if run is None:
            return 2
        epochs = store.frame("epochs", args.run_id)
        summ = live_summary(store, run)
    finally:
        store.close()
    if args.json:
        print_json({**run, "summary": summ})
        return 0
    print(f"run {run['id']}  {run['status']}  ({run['role']})")
    plan = run.get("plan") if isinstance(run.get("plan"), dict) else {}
    if from_script_run(plan):  # SpeedLabCallback (engine.training.script_run): config is what it read
        print(f"a script run: {plan.get('script')} (name {plan.get('name')!r}); "
              "dataset and model in the config are placeholders")
    if run.get("error"):  # a cancelled run's line says why it was stopped: not an error
        print(f"{'why it ended' if run['status'] == 'cancelled' else 'error'}: {run['error']}")
    print("config:", json.dumps(run["config"], sort_keys=True))
    print("environment:", json.dumps(run.get("environment"), sort_keys=True))
    # The run's own line (above) replaces the worker's summary line: the autopilot rewrites it
    # ("autopilot: pruned at ...") where the worker only knew "cancelled by the user".
    target = summ.get("target_accuracy")  # a run stopped before its first epoch has none stored: its config's
    print_summary({**result_json(run), **summ, "run_id": run["id"], "status": run["status"], "error": None,
                   "target_accuracy": target if target is not None else run["config"].get("target_accuracy")})
    if breakdown(summ):
        print(time_table([(f"run #{run['id']}", breakdown(summ))]))
    if not epochs.empty:
        print(epochs.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0
