"""``python -m engine runs``: the table of stored runs."""
from __future__ import annotations

from engine.cli.common import print_json
from engine.report.table import runs_frame, text_frame


def add_parser(sub) -> None:
    s = sub.add_parser("runs", help="table of stored runs")
    s.add_argument("--json", action="store_true", help="print the runs as one JSON list")
    s.set_defaults(func=cmd_runs)


def with_backend(df, runs: list[dict]):
    """`runs_frame`'s table with a 'backend' column (tensorflow / jax, as --backend spells
    it) before 'precision': a JAX run's 'xla yes' reads otherwise as a TensorFlow run's.
    `runs`: the store's run rows; a run missing there (or stored before backends) is tensorflow."""
    by_id = {r["id"]: r["config"].get("backend") or "tensorflow" for r in runs}
    df.insert(df.columns.get_loc("precision"), "backend", [by_id.get(i, "tensorflow") for i in df["id"]])
    return df


def cmd_runs(args) -> int:
    from engine.jobs import runner
    from engine.store import Store

    store = Store()
    try:
        runner.reconcile(store)
        df = with_backend(runs_frame(store), store.list_runs())
        damaged = store.damaged_runs()
    finally:
        store.close()
    if args.json:
        # Missing figures are NaN in the frame: null, as pandas writes them; inf is named.
        records = df.astype(object).where(df.notna(), None).to_dict(orient="records")
        print_json(records + [{"id": d["id"], "status": d["status"], "damaged": d["reason"]} for d in damaged])
        return 0
    if df.empty and not damaged:
        print("no runs yet: python -m engine run --help")
    elif not df.empty:
        # The terminal table keeps MFU; FLOP figures, the peak's source and the verdict are in --json and show.
        print(text_frame(df).drop(columns=["error", "flops_per_sample", "model_flops_per_sec",
                                           "peak_flops_per_sec", "peak_source", "bound_by"]).to_string(index=False))
    for d in damaged:  # listed apart: a row that cannot be read whole breaks no table
        print(f"run #{d['id']} is damaged ({d['reason']}): delete it with python -m engine delete {d['id']}")
    return 0
