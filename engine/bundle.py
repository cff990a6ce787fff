"""Run bundles: stored runs in one .zip that travels to another machine's store.

A bundle holds, per run, its stored row (config, environment with host,
devices and versions, plan, summary, status, start and end times) and every
metric row (executions: the timeline; epochs; system samples; workers), as
JSON, plus ``manifest.json`` with the format, the store schema it was written
with and a SHA-256 per file. Importing adds the runs under new ids, keeps the
environment untouched (the original host, devices and versions are the
provenance) and marks each run imported in the store's ``origin`` column:
``{"key", "host", "run_id", "exported", "exported_from", "imported", "bundle"}``.

Every refusal is a BundleError with one line that says which problem it is
(not a zip or truncated, a file that fails its checksum, a newer schema,
already imported) and leaves the store unchanged: an import is one transaction.

May import: errors, store (the bottom layer, beside store.py).
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import time
import zipfile
import zlib
from pathlib import Path
from typing import BinaryIO, Iterable, Union

from engine.bundle_checks import BundleRejected, check_headers, check_manifest, check_payload, loads, read_member
from engine.store import FINAL_STATUSES, SCHEMA_VERSION, Store

FORMAT = "speedlab-run-bundle"
BUNDLE_VERSION = 1
MANIFEST = "manifest.json"
METRIC_TABLES = ("executions", "epochs", "system", "workers")
# Columns that belong to this store only (process ids, pending cancels) or are remapped.
_LOCAL_COLUMNS = ("id", "pid", "pid_started", "cancel_requested", "baseline_id", "origin")
_JSON_COLUMNS = ("config", "environment", "plan", "summary", "origin")

Source = Union[str, os.PathLike, BinaryIO]


class BundleError(ValueError):
    """A bundle that cannot be written or imported; `str(err)` is one line."""


def run_key(run: dict) -> str:
    """A run's identity across stores: 'host/original id/created' of the store
    it was first recorded in (an imported run keeps its origin's key)."""
    origin = run.get("origin") or {}
    if origin.get("key"):
        return origin["key"]
    host = (run.get("environment") or {}).get("hostname") or "unknown-host"
    return f"{host}/{run['id']}/{run['created']:.6f}"


def export_runs(store: Store, run_ids: Iterable[int], dest: Union[str, os.PathLike, BinaryIO]) -> dict:
    """Write runs `run_ids` (with all their metrics) to a zip at `dest` (a path or a
    writable binary file). Returns the manifest.

    Raises: BundleError when no id is given, a run does not exist or is still
    queued or running (its figures are not final yet).
    """
    ids = list(dict.fromkeys(int(i) for i in run_ids))
    if not ids:
        raise BundleError("run_ids: none given; name the runs to export (python -m engine runs lists them)")
    files: dict[str, bytes] = {}
    for rid in ids:
        row = store.conn.execute("SELECT * FROM runs WHERE id=?", (rid,)).fetchone()
        if row is None:
            raise BundleError(f"run_id: {rid} does not exist; see python -m engine runs")
        run = dict(row)
        if run["status"] not in FINAL_STATUSES:
            raise BundleError(f"run_id: {rid} is {run['status']}; export it once it has ended "
                              "(its figures are not final yet)")
        try:
            for key in _JSON_COLUMNS:
                if run.get(key):
                    run[key] = json.loads(run[key])
        except (ValueError, RecursionError):
            raise BundleError(f"run_id: {rid} is damaged (its {key} is not valid JSON); it cannot be "
                              "exported (python -m engine delete removes it)") from None
        run.pop("pid", None), run.pop("pid_started", None), run.pop("cancel_requested", None)
        payload = {"run": {**run, "key": run_key(run)}}
        for table in METRIC_TABLES:
            cur = store.conn.execute(f"SELECT * FROM {table} WHERE run_id=?", (rid,))
            cols = [d[0] for d in cur.description if d[0] != "run_id"]
            payload[table] = {"columns": cols,
                              "rows": [[r[c] for c in cols] for r in cur.fetchall()]}
        files[f"runs/{rid}.json"] = json.dumps(payload, separators=(",", ":")).encode()
    from engine import bundle_comparisons

    comparisons = bundle_comparisons.export_files(store, ids)  # comparisons whose runs all travel
    files.update(comparisons)
    manifest = {
        "format": FORMAT, "bundle_version": BUNDLE_VERSION, "schema_version": SCHEMA_VERSION,
        "exported": time.time(), "exported_from": socket.gethostname(), "runs": ids,
        **({"comparisons": list(comparisons)} if comparisons else {}),
        "sha256": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()},
    }
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr(MANIFEST, json.dumps(manifest, indent=1))
        for name, data in files.items():
            z.writestr(name, data)
    return manifest


def read_bundle(src: Source, name: str | None = None) -> tuple[dict, list[dict]]:
    """(manifest, run payloads in manifest order) of a bundle, fully checked.

    Raises: BundleError (one line naming `name`) when the file is not a zip or
    is truncated, is not a SpeedLab bundle, was written by a newer SpeedLab
    (bundle format or store schema), or a file fails its checksum.
    """
    name = name or _name(src)
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
        raise BundleError(f"{name} is corrupt or truncated ({_first_line(e)}); copy or export it again") from None
    except KeyError as e:
        raise BundleError(f"{name} is incomplete ({_first_line(e)} is missing); export the runs again") from None
    except (ValueError, TypeError) as e:  # bad JSON, wrong types in the manifest
        raise BundleError(f"{name} is corrupt ({type(e).__name__}: {_first_line(e)}); "
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
    name = name or _name(src)
    store.writable()  # a read-only store: its one line before the bundle is read
    manifest, payloads = read_bundle(src, name)
    check_runs(store, manifest, payloads, name)
    from engine import bundle_comparisons
    from engine import store_comparisons as cstore

    try:  # read and checked before anything is written, like the runs
        comps = bundle_comparisons.read(src, manifest, name)
    except BundleRejected as e:
        raise BundleError(f"{name}: {e}; nothing was imported") from None
    except (ValueError, TypeError, KeyError, zipfile.BadZipFile) as e:
        raise BundleError(f"{name}: its comparisons cannot be read ({_first_line(e)}); nothing was imported") from None
    present = _present_keys(store)
    dupes = [(p["run"]["id"], present[p["run"]["key"]]) for p in payloads if p["run"]["key"] in present]
    if dupes:
        trashed = {r[0] for r in store.conn.execute(
            f"SELECT id FROM runs WHERE trashed IS NOT NULL AND id IN ({','.join('?' * len(dupes))})",
            [n for _, n in dupes])}
        pairs = ", ".join(f"#{o} (here #{n}{', in the trash' if n in trashed else ''})" for o, n in dupes)
        way = ("empty the trash (python -m engine trash --empty) to import them again, or restore them "
               "(python -m engine trash --restore)" if trashed and len(trashed) == len(dupes) else
               "delete them first to import again")
        raise BundleError(f"{name} is already imported: run(s) {pairs} are in this store; nothing was added ({way})")
    if comps:
        cstore.ensure_table(store)  # before the transaction (a write of its own)
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
        raise BundleError(f"{name}: its rows do not fit the store ({_first_line(e)}); nothing was imported") from None
    except bundle_comparisons.ComparisonRejected as e:
        raise BundleError(f"{name}: {e}; nothing was imported") from None
    return [(p["run"]["id"], mapping[p["run"]["id"]]) for p in payloads]


def check_runs(store: Store, manifest: dict, payloads: list[dict], name: str) -> None:
    """Validate every run file against the schema and this store's columns (engine.bundle_checks).
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
                  "run_id": run["id"], "exported": manifest.get("exported"),
                  "exported_from": manifest.get("exported_from"), "imported": now, "bundle": name,
                  **({"via": run["origin"]} if run.get("origin") else {})}
        cols = {k: v for k, v in run.items() if k in have["runs"] and k not in _LOCAL_COLUMNS}
        cols["origin"] = origin
        cols = {k: json.dumps(v) if k in _JSON_COLUMNS and v is not None else v for k, v in cols.items()}
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


def provenance(run: dict) -> str | None:
    """'imported from HOST (run #N there)' for an imported run, else None."""
    origin = run.get("origin")
    if not origin:
        return None
    return f"imported from {origin.get('host') or 'an unknown host'} (run #{origin.get('run_id')} there)"


# --- helpers ---------------------------------------------------------------------

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
            continue  # a damaged row (engine.run_rows) is no run a bundle can duplicate
    return out


def _name(src: Source) -> str:
    if isinstance(src, (str, os.PathLike)):
        return Path(src).name
    return getattr(src, "name", None) or "the bundle"


def _first_line(e: BaseException) -> str:
    text = str(e).strip("'\"")
    return (text.splitlines() or [type(e).__name__])[0][:200]
