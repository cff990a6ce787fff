"""Import: a bundle read and checked whole, then added to the store in one transaction
(engine.bundle)."""
from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import zipfile
import zlib

from engine.hardware import fingerprint
from engine.bundle import comparisons as bundle_comparisons
from engine.bundle.checks import BundleRejected, check_headers, check_manifest, check_payload, loads, read_member
from engine.bundle.format import (BUNDLE_VERSION, FORMAT, JSON_COLUMNS, LOCAL_COLUMNS, MANIFEST, METRIC_TABLES,
                                  BundleError, Source, first_line, run_key, source_name)
from engine.store import SCHEMA_VERSION, Store


def read_bundle(src: Source, name: str | None = None) -> tuple[dict, list[dict]]:
    """(manifest, run payloads in manifest order) of a bundle, fully checked.

    Raises: BundleError (one line naming `name`) when the file is not a zip or
    is truncated, is not a SpeedLab bundle, was written by a newer SpeedLab
    (bundle format or store schema), or a file fails its checksum.
    """
    name = name or source_name(src)
    try:
        with zipfile.ZipFile(src) as z:
            check_headers(z)  # sizes and ratios from the central directory: nothing inflated yet
            if MANIFEST not in z.namelist():
                raise BundleError(f"{name} is not a SpeedLab run bundle (no {MANIFEST}); "
                                  "make one with python -m engine export RUN_ID... -o FILE.zip")
            manifest = loads(MANIFEST, read_member(z, MANIFEST))
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
                raise BundleError(f"{name} is not a SpeedLab run bundle ({MANIFEST} is of another format); "
                                  "make one with python -m engine export RUN_ID... -o FILE.zip")
            _check_versions(name, manifest)
            check_manifest(manifest)
            runs = []
            for rid in manifest["runs"]:
                member = f"runs/{rid}.json"
                data = read_member(z, member)
                if hashlib.sha256(data).hexdigest() != manifest["sha256"].get(member):
                    raise BundleError(f"{name} is corrupt: {member} does not match its checksum; "
                                      "export the runs again")
                runs.append(loads(member, data))
    except BundleError:
        raise
    except BundleRejected as e:
        raise BundleError(f"{name}: {e}; nothing was imported") from None
    except (zipfile.BadZipFile, EOFError, zlib.error) as e:
        raise BundleError(f"{name} is corrupt or truncated ({first_line(e)}); copy or export it again") from None
    except KeyError as e:
        raise BundleError(f"{name} is incomplete ({first_line(e)} is missing); export the runs again") from None
    except (ValueError, TypeError) as e:  # bad JSON, wrong types in the manifest
        raise BundleError(f"{name} is corrupt ({type(e).__name__}: {first_line(e)}); "
                          "export the runs again") from None
    return manifest, runs


def import_bundle(store: Store, src: Source, name: str | None = None) -> list[tuple[int, int]]:
    """Add a bundle's runs to `store`, in one transaction.

    New local ids are given; a run's baseline link is kept when its baseline is
    in the same bundle; `origin` records where each run came from. Returns
    [(original run id, new local id)] in bundle order.
    Raises: BundleError as `read_bundle`, or when any of its runs is already
    in this store (imported before, or recorded here): nothing is changed.
    """
    name = name or source_name(src)
    store.writable()  # a read-only store: its one line before the bundle is read
    manifest, payloads = read_bundle(src, name)
    check_runs(store, manifest, payloads, name)
    try:  # read and checked before anything is written, like the runs
        comps = bundle_comparisons.read(src, manifest, name)
    except BundleRejected as e:
        raise BundleError(f"{name}: {e}; nothing was imported") from None
    except (ValueError, TypeError, KeyError, zipfile.BadZipFile) as e:
        raise BundleError(f"{name}: its comparisons cannot be read ({first_line(e)}); nothing was imported") from None
    present = _present_keys(store)
    dupes = [(p["run"]["id"], present[p["run"]["key"]]) for p in payloads if p["run"]["key"] in present]
    if dupes:
        rows = {r[0]: (r[1] is not None, r[2] is None) for r in store.conn.execute(
            f"SELECT id, trashed, origin FROM runs WHERE id IN ({','.join('?' * len(dupes))})",
            [n for _, n in dupes])}
        trashed = {n for n, (t, _) in rows.items() if t}
        here = {n for n, (_, h) in rows.items() if h}  # recorded in this store, never imported
        pairs = ", ".join(f"#{o} (here #{n}{', in the trash' if n in trashed else ''})" for o, n in dupes)
        way = ("empty the trash (python -m engine trash --empty) to import them again, or restore them "
               "(python -m engine trash --restore)" if trashed and len(trashed) == len(dupes) else
               "delete them first to import again")
        if len(here) == len(dupes) and not trashed:  # this store's own export: its runs were never imported
            raise BundleError(f"{name} holds runs recorded in this store: run(s) {pairs} are here already; "
                              "nothing was added (import it into another store)")
        raise BundleError(f"{name} is already imported: run(s) {pairs} are in this store; nothing was added ({way})")
    if comps:
        try:
            bundle_comparisons.check_groups(store, comps)
        except bundle_comparisons.ComparisonRejected as e:
            raise BundleError(f"{name}: {e}; nothing was imported") from None
    have = {t: {r[1] for r in store.conn.execute(f"PRAGMA table_info({t})")} for t in ("runs", *METRIC_TABLES)}
    now = time.time()
    mapping: dict[int, int] = {}
    try:
        with store.tx() as conn:  # runs, metrics and comparisons: all or nothing
            _insert(conn, manifest, payloads, name, have, now, mapping)
            bundle_comparisons.import_rows(store, comps, mapping)
    except sqlite3.IntegrityError as e:  # e.g. two rows of one execution: the transaction rolled back
        raise BundleError(f"{name}: its rows do not fit the store ({first_line(e)}); nothing was imported") from None
    except bundle_comparisons.ComparisonRejected as e:
        raise BundleError(f"{name}: {e}; nothing was imported") from None
    return [(p["run"]["id"], mapping[p["run"]["id"]]) for p in payloads]


def check_runs(store: Store, manifest: dict, payloads: list[dict], name: str) -> None:
    """Validate every run file against the schema and this store's columns (engine.bundle.checks).
    Raises: BundleError '<bundle>: <member>: <problem>; nothing was imported'."""
    columns = {t: {r[1]: bool(r[3]) for r in store.conn.execute(f"PRAGMA table_info({t})")}
               for t in ("runs", *METRIC_TABLES)}
    try:
        for rid, p in zip(manifest["runs"], payloads):
            check_payload(f"runs/{rid}.json", p, columns)
    except BundleRejected as e:
        raise BundleError(f"{name}: {e}; nothing was imported") from None


def _insert(conn, manifest: dict, payloads: list[dict], name: str, have: dict, now: float,
            mapping: dict) -> None:
    """Insert the runs and their metrics on `conn`, inside the caller's transaction."""
    for p in payloads:
        run = p["run"]
        origin = {"key": run["key"], "host": (run.get("environment") or {}).get("hostname"),
                  # the machine it was measured on (its environment keeps the whole fingerprint): an
                  # imported run is another machine's unless its id is this one's
                  "machine": fingerprint.name_of(run.get("environment")),
                  "run_id": run["id"], "exported": manifest.get("exported"),
                  "exported_from": manifest.get("exported_from"), "imported": now, "bundle": name,
                  **({"via": run["origin"]} if run.get("origin") else {})}
        cols = {k: v for k, v in run.items() if k in have["runs"] and k not in LOCAL_COLUMNS}
        cols["origin"] = origin
        cols = {k: json.dumps(v) if k in JSON_COLUMNS and v is not None else v for k, v in cols.items()}
        cur = conn.execute(f"INSERT INTO runs ({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                           tuple(cols.values()))
        mapping[run["id"]] = int(cur.lastrowid)
    for p in payloads:
        new = mapping[p["run"]["id"]]
        base = p["run"].get("baseline_id")
        if base in mapping:
            conn.execute("UPDATE runs SET baseline_id=? WHERE id=?", (mapping[base], new))
        for table in METRIC_TABLES:
            t = p.get(table) or {"columns": [], "rows": []}
            keep = [i for i, c in enumerate(t["columns"]) if c in have[table]]
            if not t["rows"] or not keep:
                continue
            cols = ["run_id", *(t["columns"][i] for i in keep)]
            conn.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                             [(new, *(row[i] for i in keep)) for row in t["rows"]])


def _check_versions(name: str, manifest: dict) -> None:
    bv, sv = manifest.get("bundle_version"), manifest.get("schema_version")
    if not isinstance(bv, int) or not isinstance(sv, int):
        raise BundleError(f"{name} is corrupt ({MANIFEST} has no bundle_version or schema_version); "
                          "export the runs again")
    if sv > SCHEMA_VERSION or bv > BUNDLE_VERSION:
        what = f"store schema {sv}" if sv > SCHEMA_VERSION else f"bundle format {bv}"
        mine = SCHEMA_VERSION if sv > SCHEMA_VERSION else BUNDLE_VERSION
        raise BundleError(f"{name} was written by a newer SpeedLab ({what}; this one reads up to {mine}); "
                          "upgrade SpeedLab here to import it")


def _present_keys(store: Store) -> dict[str, int]:
    """{run_key: local id} of every run in the store."""
    out = {}
    for row in store.conn.execute("SELECT id, created, environment, origin FROM runs"):
        try:
            run = {"id": row["id"], "created": float(row["created"]),
                   "environment": json.loads(row["environment"]) if row["environment"] else None,
                   "origin": json.loads(row["origin"]) if row["origin"] else None}
            out[run_key(run)] = row["id"]
        except (TypeError, ValueError, AttributeError, RecursionError):
            continue  # a damaged row (engine.store.rows) is no run a bundle can duplicate
    return out
