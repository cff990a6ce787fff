"""``python -m engine cancel RUN_ID``: cancel a queued or running run (its metrics are kept)."""
from __future__ import annotations

from engine.cli.printing import get_run


def add_parser(sub) -> None:
    s = sub.add_parser("cancel", help="cancel a queued or running run (its metrics are kept)")
    s.add_argument("run_id", type=int)
    s.set_defaults(func=cmd_cancel)


def cmd_cancel(args) -> int:
    from engine.jobs import runner
    from engine.store import Store

    store = Store()
    try:
        if get_run(store, args.run_id) is None:
            return 2
    finally:
        store.close()
    print(runner.cancel(args.run_id))
    return 0
