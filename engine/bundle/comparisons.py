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

from engine.store import comparisons as cstore
from engine.bundle.checks import check_headers, loads, read_member
from engine.store import Store


def _run_ids(comp: dict) -> list[int]:
    """The ids of the runs a comparison's pairs hold. A failed pair of two commands may lack one
    (its side recorded no run, or never ran: engine.jobs.command_pairs): None is left out."""
    from engine.report.comparison import dropped_keys

    return [p[k] for p in comp.get("plan") or [] for k in ("baseline_id", "run_id")
            if k not in dropped_keys(p) and p.get(k) is not None]


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
            # A pair's ids are integers; only a failed pair (its 'error' said) may lack one.
            bad = [p for p in comp["plan"] if not p.get("dropped") and not all(
                (isinstance(p.get(k), int) and not isinstance(p.get(k), bool)) or (p.get(k) is None and p.get("error"))
                for k in ("baseline_id", "run_id"))]
            if bad:
                raise ValueError(f"{member}: a pair without integer baseline_id and run_id ({str(bad[0])[:80]})")
            out.append(comp)
    return out


class ComparisonRejected(ValueError):
    """A bundle's comparison that cannot be imported; `str(err)` is one line naming it."""


def _runs_here(store: Store, run_ids: list[int]) -> list[int]:
    if not run_ids:
        return []
    q = f"SELECT id FROM runs WHERE id IN ({','.join('?' * len(run_ids))})"
    return [r[0] for r in store.conn.execute(q, run_ids)]


def check_groups(store: Store, comps: list[dict]) -> None:
    """Before anything is written: a comparison whose group is already stored here must be
    one whose runs are all gone (deleted for good: `import_rows` replaces that row);
    one whose runs are still here is another comparison, and the import is refused.
    Raises: ComparisonRejected (one line)."""
    for comp in comps:
        old = cstore.by_group(store, comp.get("group_id"))
        if old is None:
            continue
        left = _runs_here(store, _run_ids(old))
        if left:
            raise ComparisonRejected(f"its comparison {comp.get('group_id')!r} is already in this store, with "
                                     f"run(s) {', '.join(f'#{i}' for i in left)}")


def import_rows(store: Store, comps: list[dict], mapping: dict[int, int]) -> list[int]:
    """Add `comps` with run ids mapped by `mapping` (original id -> new id) and their
    result recomputed from the imported runs; returns the new comparison ids.

    Runs inside the caller's transaction on `store.conn` (engine.bundle.import_bundle),
    so that a comparison that cannot be evaluated leaves nothing written. A stored
    comparison of the same group whose runs are all gone (checked by `check_groups`) is
    replaced. Raises: ComparisonRejected naming the comparison and the problem."""
    from engine.report import comparison

    conn = store.conn
    cols = ("created", "ended", "kind", "group_id", "status", "hostname", "settings", "plan", "result", "ended_by")
    new_ids = []
    for comp in comps:
        if not set(_run_ids(comp)) <= set(mapping):
            continue  # a comparison of runs not in this bundle: nothing to show it with
        plan = [{**p, **{k: mapping.get(p.get(k), p.get(k)) for k in ("baseline_id", "run_id")}} for p in comp["plan"]]
        row = {**comp, "plan": plan, "result": None}
        conn.execute("DELETE FROM comparisons WHERE group_id=?", (comp.get("group_id"),))  # stale (check_groups)
        vals = [json.dumps(row.get(c)) if c in ("settings", "plan", "result") and row.get(c) is not None
                else row.get(c) for c in cols]
        try:
            cid = int(conn.execute(f"INSERT INTO comparisons ({', '.join(cols)}) VALUES "
                                   f"({','.join('?' * len(cols))})", vals).lastrowid)
            result = comparison.evaluate(store, {**row, "id": cid})
        except (TypeError, KeyError, ValueError, IndexError, AttributeError, ZeroDivisionError) as e:
            raise ComparisonRejected(f"comparisons: {comp.get('group_id')!r} cannot be recomputed from its runs "
                                     f"({type(e).__name__}: {str(e)[:120]})") from None
        conn.execute("UPDATE comparisons SET result=? WHERE id=?", (json.dumps(result), cid))
        new_ids.append(cid)
    return new_ids
