"""``python -m engine delete RUN_ID...`` and ``python -m engine trash``: deleting is recoverable.

`delete` moves finished runs to the trash (metrics and files kept); `trash` lists it,
`trash --restore ID...` brings runs back, `trash --empty` deletes them for good. Runs
trashed longer than $SPEEDLAB_TRASH_DAYS days (default 30) are emptied on the next
delete or trash listing.
"""
from __future__ import annotations

import sys
import time

from engine.cli.printing import print_json


def add_parser(sub) -> None:
    d = sub.add_parser("delete", help="move runs to the trash (restore them with: trash --restore ID)")
    d.add_argument("run_ids", type=int, nargs="+", metavar="RUN_ID")
    d.add_argument("--for-good", action="store_true", help="delete at once, without the trash")
    d.set_defaults(func=cmd_delete)
    t = sub.add_parser("trash", help="runs in the trash: list, --restore ID..., --empty")
    g = t.add_mutually_exclusive_group()
    g.add_argument("--restore", type=int, nargs="+", metavar="RUN_ID", help="bring these runs back")
    g.add_argument("--empty", action="store_true", help="delete every trashed run for good")
    t.add_argument("--json", action="store_true", help="print the trash as one JSON list")
    t.set_defaults(func=cmd_trash)


def _ids(ids) -> str:
    return ", ".join(f"#{i}" for i in ids)


def cmd_delete(args) -> int:
    from engine.store import ACTIVE_STATUSES, Store

    store = Store()
    try:
        ids = list(dict.fromkeys(args.run_ids))
        rows = {r[0]: r[1] for r in store.conn.execute(
            f"SELECT id, status FROM runs WHERE id IN ({','.join('?' * len(ids))})", ids)}
        unknown = [i for i in ids if i not in rows]
        if unknown:
            print(f"error: run_id: {_ids(unknown)} not in this store; see python -m engine runs", file=sys.stderr)
            return 2
        damaged = {d["id"] for d in store.damaged_runs()}
        active = [i for i in ids if rows[i] in ACTIVE_STATUSES and i not in damaged]
        if active:
            print(f"error: run_id: {_ids(active)} {'is' if len(active) == 1 else 'are'} still queued or "
                  f"running; cancel first (python -m engine cancel {active[0]})", file=sys.stderr)
            return 2
        if args.for_good:
            for i in ids:
                store.delete_run(i, reclaim=False)
            store.reclaim()  # their pages back to the disk
            print(f"deleted {len(ids)} run{'s' if len(ids) > 1 else ''} for good: {_ids(ids)}")
            return 0
        moved = store.trash_runs(ids)
    finally:
        store.close()
    already = [i for i in ids if i not in moved]
    print(f"moved {len(moved)} run{'s' if len(moved) != 1 else ''} to the trash: {_ids(moved) or 'none'}"
          + (f" ({_ids(already)} already there)" if already else "")
          + (f"; restore with python -m engine trash --restore {' '.join(map(str, moved))}" if moved else ""))
    return 0


def cmd_trash(args) -> int:
    from engine.store import Store, trash_retention_s

    store = Store()
    try:
        if args.restore:
            have = {r["id"] for r in store.trashed_runs()}
            missing = [i for i in args.restore if i not in have]
            if missing:
                print(f"error: run_id: {_ids(missing)} not in the trash; see python -m engine trash", file=sys.stderr)
                return 2
            done = store.restore_runs(args.restore)
            print(f"restored {len(done)} run{'s' if len(done) != 1 else ''}: {_ids(done)}")
            return 0
        if args.empty:
            gone = store.empty_trash()
            print(f"deleted {len(gone)} trashed run{'s' if len(gone) != 1 else ''} for good"
                  + (f": {_ids(gone)}" if gone else ""))
            return 0
        store.purge_expired()
        runs = store.trashed_runs()
    finally:
        store.close()
    days = trash_retention_s() / 86400
    if args.json:
        print_json([{**r, "expires": r["trashed"] + trash_retention_s()} for r in runs])
        return 0
    if not runs:
        print("the trash is empty")
        return 0
    for r in runs:
        cfg = r["config"] or {}
        what = (f"{cfg.get('dataset')} {cfg.get('model')} {cfg.get('precision')}" if r["config"]
                else f"damaged: {r['reason']}")
        left = max(0.0, (r["trashed"] + trash_retention_s() - time.time()) / 86400)
        print(f"#{r['id']:<5} {r['status']:<10} {r['role']:<9} {what}  "
              f"(trashed {time.strftime('%Y-%m-%d %H:%M', time.localtime(r['trashed']))}, "
              f"emptied in {left:.1f} of {days:g} days)")
    return 0
