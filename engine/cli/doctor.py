"""``python -m engine doctor``: check the store's integrity; salvage a damaged one.

Runs SQLite's integrity check. A damaged store is moved aside (kept as
runs.sqlite.damaged-<time>) and what SQLite can still read is copied into a new
store in its place (engine.store.doctor). Exit codes: 0 the store is sound, 1 it was
damaged and has been salvaged, 2 it cannot be salvaged now (e.g. a run is writing).
"""
from __future__ import annotations

import sys

from engine.cli.printing import print_json


def add_parser(sub) -> None:
    s = sub.add_parser("doctor", help="check the store's integrity; salvage a damaged one into a new store")
    s.add_argument("--check-only", action="store_true", help="report, change nothing")
    s.add_argument("--compact", action="store_true",
                   help="give the store's free pages (deleted runs) back to the disk (VACUUM)")
    s.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    s.set_defaults(func=cmd_doctor)


def cmd_doctor(args) -> int:
    from engine.store import doctor
    from engine.store import default_path

    path = default_path()
    result = doctor.check(path)
    if result.ok:
        damaged = _damaged_rows(path)
        compacted = None
        if args.compact and not args.check_only:
            if _writing(path):
                print(f"error: a queue or worker is writing to {path}; compact once its run has ended",
                      file=sys.stderr)
                return 2
            compacted = _compact(path)
        space = _space(path)
        machines = _machines(path)
        if args.json:
            print_json({"store": str(path), "ok": True, "runs": result.runs, "damaged_runs": damaged,
                        "machines": machines,
                        "space": space, **({"compacted_pages": compacted} if compacted is not None else {})})
            return 0
        print(f"{path}: integrity check ok, {result.runs or 0} runs")
        if space:
            mb = 2**20
            print(f"{space['file_bytes'] / mb:,.1f} MB on disk; {space['free_pages']:,} of {space['pages']:,} pages "
                  f"free ({space['free_bytes'] / mb:,.1f} MB held by deleted rows)"
                  + (f"; compacted: {compacted:,} pages given back" if compacted is not None else "")
                  + ("; give them back with python -m engine doctor --compact"
                     if space["free_pages"] and compacted is None else ""))
        for m in machines:  # the CPU behind one hostname changes: say which runs came from which
            print(f"{m['runs']} run{'s' if m['runs'] != 1 else ''} measured on {m['name']}"
                  + (f" (fingerprint {m['id']})" if m["id"] else ""))
        for d in damaged:
            print(f"run #{d['id']} is damaged ({d['reason']}): delete it with python -m engine delete {d['id']}")
        return 0
    print(f"{path}: damaged: {'; '.join(result.problems[:3])}", file=sys.stderr)
    if args.check_only:
        if args.json:
            print_json({"store": str(path), "ok": False, "problems": result.problems})
        return 1
    if _writing(path):
        print(f"error: a queue or worker is writing to {path}; cancel its run or wait for it to end, "
              "then run python -m engine doctor again", file=sys.stderr)
        return 2
    try:
        s = doctor.salvage(path)
    except OSError as e:
        print(f"error: {path} cannot be moved aside ({e.strerror}); check the folder's permissions", file=sys.stderr)
        return 2
    lost = sum(s.unreadable.values())  # rowids probed in vain
    if args.json:
        print_json({"store": str(path), "ok": False, "problems": result.problems, "kept_as": str(s.kept_as),
                    "copied": s.copied, "failed_lookups": s.unreadable, "header_rebuilt": s.header_rebuilt,
                    "new_store_problems": s.new_problems})
        return 1
    print(f"salvaged into a new {path}: {s.copied['runs']} runs, "
          f"{sum(v for k, v in s.copied.items() if k != 'runs'):,} metric rows"
          + (" (header rebuilt)" if s.header_rebuilt else "")
          + (f"; {lost:,} row lookups failed (rows lost with their pages, or never there)" if lost else ""))
    print(f"the damaged file is kept as {s.kept_as}")
    if s.new_problems:  # not seen: a fresh store that fails its own check means a failing disk
        print(f"warning: the new store fails its integrity check too ({'; '.join(s.new_problems[:3])}): "
              "check the disk, then run python -m engine doctor again", file=sys.stderr)
    return 1


def _space(path) -> dict | None:
    from engine.store import Store

    if not path.exists():
        return None
    store = Store(path)
    try:
        return store.space()
    finally:
        store.close()


def _compact(path) -> int:
    from engine.store import Store

    store = Store(path)
    try:
        return store.reclaim(full=True)
    finally:
        store.close()


def _machines(path) -> list[dict]:
    from engine.store import Store, doctor

    store = Store(path)
    try:
        return doctor.machines(store)
    finally:
        store.close()


def _damaged_rows(path) -> list[dict]:
    from engine.store import Store

    store = Store(path)
    try:
        return store.damaged_runs()
    finally:
        store.close()


def _writing(path) -> bool:
    """Whether a queue process holds the store's queue lock (its worker writes)."""
    import fcntl

    lock = path.parent / "queue.lock"
    if not lock.exists():
        return False
    with open(lock, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
    return False
