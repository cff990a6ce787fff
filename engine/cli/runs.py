"""``python -m engine runs``: the table of stored runs."""
from __future__ import annotations

from engine.report.table import runs_frame, text_frame


def add_parser(sub) -> None:
    s = sub.add_parser("runs", help="table of stored runs")
    s.add_argument("--json", action="store_true", help="print the runs as one JSON list")
    s.set_defaults(func=cmd_runs)


def cmd_runs(args) -> int:
    from engine.jobs import runner
    from engine.store import Store

    store = Store()
    try:
        runner.reconcile(store)
        df = runs_frame(store)
    finally:
        store.close()
    if args.json:
        print(df.to_json(orient="records"))
    elif df.empty:
        print("no runs yet: python -m engine run --help")
    else:
        print(text_frame(df).drop(columns=["error"]).to_string(index=False))
    return 0
