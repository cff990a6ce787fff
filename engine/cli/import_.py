"""``python -m engine import FILE.zip``: add a bundle's runs to this store."""
from __future__ import annotations

import sys


def add_parser(sub) -> None:
    s = sub.add_parser("import", help="add the runs of a bundle (from python -m engine export) to this store",
                       description="Add a bundle's runs under new ids, keeping their original host, "
                                   "devices and versions; they are marked imported.")
    s.add_argument("bundle", metavar="FILE.zip")
    s.set_defaults(func=cmd_import)


def cmd_import(args) -> int:
    from engine.bundle import BundleError, import_bundle, provenance
    from engine.store import Store

    store = Store()
    try:
        pairs = import_bundle(store, args.bundle)
        runs = [store.get_run(new) for _, new in pairs]
    except BundleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: bundle: {args.bundle!r} cannot be read ({e.strerror}); "
              "give the path of a .zip from python -m engine export", file=sys.stderr)
        return 2
    finally:
        store.close()
    for (old, new), run in zip(pairs, runs):
        print(f"run #{new}: {provenance(run)}, {run['role']}, {run['status']}")
    return 0
