"""``python -m engine export RUN_ID... -o FILE.zip``: runs as a bundle for another machine."""
from __future__ import annotations

import os
import sys


def add_parser(sub) -> None:
    s = sub.add_parser("export", help="write runs (config, environment, summary, metrics) to a .zip bundle",
                       description="Write finished runs with all their metrics to a .zip that "
                                   "`python -m engine import` (or the Runs page) adds to another store.")
    s.add_argument("run_ids", type=int, nargs="+", metavar="RUN_ID")
    s.add_argument("-o", "--output", required=True, metavar="FILE.zip", help="the bundle to write")
    s.set_defaults(func=cmd_export)


def cmd_export(args) -> int:
    from engine.bundle import BundleError, export_runs
    from engine.store import Store

    store = Store()
    tmp = args.output + ".part"  # a refused or failed export leaves no half-written bundle
    try:
        export_runs(store, args.run_ids, tmp)
        os.replace(tmp, args.output)
    except BundleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # e.g. a folder that does not exist: one line, not a FileNotFoundError
        print(f"error: output: {args.output!r} cannot be written ({e.strerror}); "
              "give a path in an existing, writable folder", file=sys.stderr)
        return 2
    finally:
        store.close()
        if os.path.exists(tmp):
            os.remove(tmp)
    n = len(set(args.run_ids))
    print(f"wrote {n} run{'s' if n > 1 else ''} to {args.output}")
    return 0
