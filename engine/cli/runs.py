"""``python -m engine runs``: the table of stored runs, newest first.

A screenful by default (`--limit`, 0 for all), filtered in SQL (`--status`, `--dataset`,
`--model`, `--precision`, `--devices`, `--backend`, `--role`, `--group`): only the rows
shown are read, so a 100,000-run store lists as fast as a small one.
"""
from __future__ import annotations

import sys

from engine.cli.printing import print_json

SCREENFUL = 20


def add_parser(sub) -> None:
    s = sub.add_parser("runs", help="table of stored runs (newest first; --limit, filters)")
    s.add_argument("--json", action="store_true", help="print the runs as one JSON list (every match "
                                                         "unless --limit is given)")
    s.add_argument("--limit", type=int, default=None, metavar="N",
                   help=f"show the newest N matching runs [{SCREENFUL}; 0 = all]")
    s.add_argument("--offset", type=int, default=0, metavar="N", help="skip the newest N matching runs [0]")
    for flag, help_ in (("status", "queued, running, completed, failed or cancelled"), ("dataset", "data set"),
                        ("model", "model"), ("precision", "precision"), ("backend", "tensorflow or jax"),
                        ("role", "run or baseline"), ("group", "group id (a launch, a comparison)")):
        s.add_argument(f"--{flag}", action="append", metavar=flag.upper(), help=f"only runs of this {help_} "
                                                                               "(repeat for several)")
    s.add_argument("--devices", action="append", type=int, metavar="N", help="only runs on N devices (repeatable)")
    s.set_defaults(func=cmd_runs)


def cmd_runs(args) -> int:
    from engine.jobs import runner
    from engine.report.table import runs_frame
    from engine.store import Store, filter_sql

    limit = args.limit if args.limit is not None else (None if args.json else SCREENFUL)
    limit = None if limit == 0 else limit
    where, params = filter_sql({"status": args.status, "dataset": args.dataset, "model": args.model,
                                "precision": args.precision, "backend": args.backend, "devices": args.devices,
                                "role": args.role, "group_id": args.group})
    store = Store()
    try:
        runner.reconcile(store)
        runs = store.query_runs(where, params, limit=limit, offset=max(args.offset, 0))
        total = store.count_runs(where, params)
        df = runs_frame(store, runs)  # with its backend: a JAX run's 'xla yes' reads otherwise as TF's
        # All of them with every run listed; else those among the runs read (older ones:
        # python -m engine doctor, the Runs page), so that a screenful costs a screenful.
        damaged = store.damaged_runs() if limit is None else store.skipped_damaged
    finally:
        store.close()
    if args.json:
        # Missing figures are NaN in the frame: null, as pandas writes them; inf is named.
        records = df.astype(object).where(df.notna(), None).to_dict(orient="records")
        print_json(records + [{"id": d["id"], "status": d["status"], "damaged": d["reason"]} for d in damaged])
        return 0
    from engine.report.table import text_frame

    if df.empty and not damaged:
        print("no runs yet: python -m engine run --help" if not total and not where else
              f"no run matches ({total:,} do, from the {max(args.offset, 0):,}th newest)" if total else
              "no run matches these filters")
    elif not df.empty:
        # The terminal table keeps MFU; FLOP figures, the peak and the verdict are in --json and show.
        from engine.report.mfu import MFU_KEYS
        from engine.report.table import mfu_caption

        extra = [k for k in (*MFU_KEYS, "mfu_stored", "mfu_denominator") if k != "mfu" and k in df.columns]
        # The reproduction columns (optimizer, seed, group, machine) are in --json and the CSV.
        print(text_frame(df).drop(columns=["error", *extra, "bound_by", "optimizer", "seed", "group", "machine",
                                           "machine_id"]).to_string(index=False))
        if mfu_caption(df):
            print(mfu_caption(df))
        if len(df) < total:
            first = max(args.offset, 0) + 1
            print(f"runs {first:,}-{first + len(df) - 1:,} of {total:,}{' matching' if where else ''} (newest first); "
                  f"more with --limit N (0 for all) and --offset N", file=sys.stderr)
    for d in damaged:  # listed apart: a row that cannot be read whole breaks no table
        print(f"run #{d['id']} is damaged ({d['reason']}): delete it with python -m engine delete {d['id']}")
    return 0
