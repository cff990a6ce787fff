"""Export: stored runs, their metrics and their comparisons into one bundle (engine.bundle)."""
from __future__ import annotations

import hashlib
import json
import os
import socket
import time
import zipfile
from typing import BinaryIO, Iterable, Union

from engine.hardware.fingerprint import short as fingerprint_short
from engine.bundle.format import (BUNDLE_VERSION, FORMAT, JSON_COLUMNS, MANIFEST, METRIC_TABLES, BundleError,
                                  run_key)
from engine.bundle import comparisons as bundle_comparisons
from engine.store import FINAL_STATUSES, SCHEMA_VERSION, Store


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
            for key in JSON_COLUMNS:
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
    comparisons = bundle_comparisons.export_files(store, ids)  # comparisons whose runs all travel
    files.update(comparisons)
    manifest = {
        "format": FORMAT, "bundle_version": BUNDLE_VERSION, "schema_version": SCHEMA_VERSION,
        "exported": time.time(), "exported_from": socket.gethostname(),
        "exported_from_machine": fingerprint_short(), "runs": ids,
        **({"comparisons": list(comparisons)} if comparisons else {}),
        "sha256": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()},
    }
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr(MANIFEST, json.dumps(manifest, indent=1))
        for name, data in files.items():
            z.writestr(name, data)
    return manifest


