"""Imports all or nothing (issue 42, item 5): export, delete for good, import gives the same
runs and comparison back; a comparison that cannot be recomputed leaves nothing written;
a refusal describes the store as it is (runs in the trash are said to be there)."""
from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest

from engine import bundle
from engine.store import comparisons as cstore
from engine.config import RunConfig
from engine.jobs import comparison
from engine.store import Store
from tests.helpers import cli
from tests.test_comparisons import _play, no_queue  # noqa: F401 (fixture)


def one_pair(store: Store) -> tuple[int, list[int], bytes]:
    """A finished 1-pair comparison (run 1.25x faster to the target) and its bundle."""
    cid = comparison.start(RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2), pairs=1)
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else (8.0, 100.0))
    comp = cstore.get(store, cid)
    ids = comp["result"]["baseline_ids"] + comp["result"]["run_ids"]
    buf = io.BytesIO()
    bundle.export_runs(store, ids, buf)
    return cid, ids, buf.getvalue()


def tampered(data: bytes, member: str, change) -> bytes:
    """`data` with `member`'s JSON changed by `change` and its checksum updated (a valid bundle)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    manifest = json.loads(src.read("manifest.json"))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name in src.namelist():
            body = src.read(name)
            if name == member:
                body = json.dumps(change(json.loads(body))).encode()
                manifest["sha256"][name] = hashlib.sha256(body).hexdigest()
            if name != "manifest.json":
                z.writestr(name, body)
        z.writestr("manifest.json", json.dumps(manifest))
    return out.getvalue()


def counts(store: Store) -> tuple[int, int, int]:
    q = lambda t: store.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]  # noqa: E731
    return q("runs"), q("epochs"), q("comparisons")


def test_export_delete_for_good_import_gives_the_same_runs_and_comparison_back(no_queue, store):  # noqa: F811
    cid, ids, data = one_pair(store)
    before = cstore.get(store, cid)["result"]
    for rid in ids:
        store.delete_run(rid)
    assert counts(store)[:2] == (0, 0)
    pairs = bundle.import_bundle(store, io.BytesIO(data), "b.zip")
    assert [old for old, _ in pairs] == ids and counts(store) == (2, 2, 1)  # the stale comparison row replaced
    (comp,) = cstore.list_all(store)
    assert comp["result"]["time_to_accuracy_speedup"] == pytest.approx(1.25)
    for key in ("time_to_accuracy_speedup", "verdict", "pairs", "pair_ratios"):
        assert comp["result"][key] == pytest.approx(before[key])
    assert [p["run_id"] for p in comp["plan"]] == [dict(pairs)[ids[1]]]


def test_a_comparison_that_cannot_be_recomputed_writes_nothing(no_queue, store, tmp_path):  # noqa: F811
    cid, _ids, data = one_pair(store)
    bad = tampered(data, f"comparisons/{cid}.json",
                   lambda c: {**c, "settings": {**c["settings"], "margin": "wide"}})
    with Store(tmp_path / "other" / "runs.sqlite") as other:
        with pytest.raises(bundle.BundleError) as e:
            bundle.import_bundle(other, io.BytesIO(bad), "bad.zip")
        assert str(e.value).startswith("bad.zip: comparisons: ") and str(e.value).endswith("; nothing was imported")
        assert counts(other) == (0, 0, 0)


def test_the_cli_exits_2_and_writes_nothing_for_a_broken_comparison(no_queue, store, tmp_path, monkeypatch):  # noqa: F811
    # `python -m engine import` in this process (tests/helpers/cli.py): the refusal, not the process, is the point.
    cid, _ids, data = one_pair(store)
    (tmp_path / "bad.zip").write_bytes(tampered(data, f"comparisons/{cid}.json",
                                                lambda c: {**c, "settings": "not settings"}))
    home = tmp_path / "other"
    monkeypatch.setenv("SPEEDLAB_HOME", str(home))
    p = cli.engine("import", str(tmp_path / "bad.zip"))
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "nothing was imported" in p.stderr
    with Store(home / "runs.sqlite") as other:
        assert other.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


def test_runs_in_the_trash_are_said_to_be_there(no_queue, store):  # noqa: F811
    _cid, ids, data = one_pair(store)
    store.trash_runs(ids)
    with pytest.raises(bundle.BundleError) as e:
        bundle.import_bundle(store, io.BytesIO(data), "b.zip")
    assert f"#{ids[0]} (here #{ids[0]}, in the trash)" in str(e.value)
    assert "empty the trash (python -m engine trash --empty)" in str(e.value)
    assert "delete them first" not in str(e.value)
    store.empty_trash()
    assert len(bundle.import_bundle(store, io.BytesIO(data), "b.zip")) == 2
