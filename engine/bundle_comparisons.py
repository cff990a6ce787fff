"""Comparisons in run bundles (engine.bundle): a bundle that holds every run of a
comparison (engine.jobs.comparison) also holds the comparison, as
``comparisons/<id>.json`` (its stored row) listed in the manifest's
``comparisons`` with a SHA-256 like the runs. Importing adds it with its runs'
new ids and recomputes its result from the imported runs, so the Runs page,
``engine compare`` and the Train page show the same figures on the other machine.
Kept apart from engine.bundle (additive: a bundle without comparisons reads as before).
"""
from __future__ import annotations

import hashlib
import json
import zipfile

from engine import store_comparisons as cstore
from engine.bundle_checks import check_headers, loads, read_member
from engine.store import Store


def _run_ids(comp: dict) -> list[int]:
    return [p[k] for p in comp.get("plan") or [] if not p.get("dropped") for k in ("baseline_id", "run_id")]


def export_files(store: Store, run_ids: list[int]) -> dict[str, bytes]:
    """{'comparisons/<id>.json': bytes} for every stored comparison whose runs are all in `run_ids`."""
    ids = set(run_ids)
    out = {}
    for comp in cstore.list_all(store):
        runs = _run_ids(comp)
        if runs and set(runs) <= ids and comp["status"] != "running":
            out[f"comparisons/{comp['id']}.json"] = json.dumps(comp, separators=(",", ":")).encode()
    return out


def read(src, manifest: dict, name: str) -> list[dict]:
    """The comparisons a bundle lists (none for older bundles), checksums checked.
    Raises: ValueError (one line) for a member that fails its checksum."""
    members = manifest.get("comparisons") or []
    if not members:
        return []
    if hasattr(src, "seek"):
        src.seek(0)
    out = []
    if not isinstance(members, list) or not all(isinstance(m, str) and m.startswith("comparisons/") for m in members):
        raise ValueError("the manifest's comparisons are not a list of comparisons/ members")
    with zipfile.ZipFile(src) as z:
        check_headers(z)  # sizes and ratio from the headers, before any member is read
        for member in members:
            data = read_member(z, member)
            if hashlib.sha256(data).hexdigest() != manifest["sha256"].get(member):
                raise ValueError(f"{name} is corrupt: {member} does not match its checksum; export the runs again")
            comp = loads(member, data)  # depth-limited
            if not isinstance(comp, dict) or not isinstance(comp.get("plan"), list) \
                    or not all(isinstance(p, dict) for p in comp["plan"]):
                raise ValueError(f"{member} is not a comparison (no list of pairs under 'plan')")
            bad = [p for p in comp["plan"] if not p.get("dropped") and not all(
                isinstance(p.get(k), int) and not isinstance(p.get(k), bool) for k in ("baseline_id", "run_id"))]
            if bad:
                raise ValueError(f"{member}: a pair without integer baseline_id and run_id ({str(bad[0])[:80]})")
            out.append(comp)
    return out


def import_rows(store: Store, comps: list[dict], mapping: dict[int, int]) -> list[int]:
    """Add `comps` with run ids mapped by `mapping` (original id -> new id) and their
    result recomputed from the imported runs; returns the new comparison ids."""
    from engine.jobs import comparison

    new_ids = []
    for comp in comps:
        if not set(_run_ids(comp)) <= set(mapping):
            continue
        plan = [{**p, **{k: mapping.get(p[k], p[k]) for k in ("baseline_id", "run_id")}} for p in comp["plan"]]
        cid = cstore.insert_row(store, {**comp, "plan": plan, "result": None})
        if not cid:
            continue
        row = cstore.get(store, cid)
        cstore.update(store, cid, result=comparison.evaluate(store, row))
        new_ids.append(cid)
    return new_ids
