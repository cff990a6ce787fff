"""``python -m engine compare BASELINE_ID RUN_ID``: speedup of a run over its baseline."""
from __future__ import annotations


from engine.cli.printing import get_run, print_json, speedup_rows, time_table
from engine.base.errors import ConfigError


def add_parser(sub) -> None:
    s = sub.add_parser("compare", help="speedup of RUN_ID over BASELINE_ID")
    s.add_argument("baseline_id", type=int)
    s.add_argument("run_id", type=int)
    s.add_argument("--target-accuracy", type=float, metavar="ACC",
                   help="validation accuracy (0-1) for the time-to-accuracy speedup [the run's target]")
    s.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    s.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    from engine.report.pair import compare
    from engine.store import Store

    if args.target_accuracy is not None and not 0 < args.target_accuracy <= 1:
        raise ConfigError("target_accuracy", args.target_accuracy, "is not a validation accuracy",
                          "give a fraction in (0, 1], e.g. 0.95")
    store = Store()
    try:
        for rid in (args.baseline_id, args.run_id):
            if get_run(store, rid) is None:
                return 2
        c = compare(store, args.baseline_id, args.run_id, target=args.target_accuracy)
        from engine.store import comparisons as cstore
        from engine.cli.comparison import comparison_json

        comp = cstore.for_run(store, args.run_id)
        if comp and comp.get("result") and args.baseline_id in comp["result"].get("baseline_ids", []):
            c["comparison"] = comparison_json(comp)  # the stored pairs this one belongs to
    finally:
        store.close()
    if c["machines"]:  # two machines: no verdict, here or in the stored comparison's
        c["verdict"] = "not comparable"
        if c.get("comparison"):
            c["comparison"]["verdict"] = "not comparable"
    if args.json:
        print_json(c)
        return 0
    if c["machines"]:
        print(f"{c['machines']}: not comparable as a speedup")
    print(f"run {c['run_id']} vs baseline run {c['baseline_id']}")
    for k, v in speedup_rows(c):
        print(f"{k:>20}  {v}")
    print(time_table([(f"baseline #{c['baseline_id']}", c["baseline_breakdown"]),
                      (f"run #{c['run_id']}", c["breakdown"])]))
    for line in c["caveats"]:
        if line != c["machines"]:
            print(f"caveat: {line}")
    if c.get("comparison"):
        from engine.cli.comparison import comparison_rows

        print("this pair belongs to a stored comparison of interleaved pairs:")
        for k, v in comparison_rows(c["comparison"]):
            print(f"{k:>20}  {v}")
    return 0
