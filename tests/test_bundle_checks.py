"""Bundles are untrusted input: a zip bomb, a member larger than its header, deep JSON, a
missing field or a wrong type per field, rows that do not fit; each is one line and leaves
the store unchanged (engine.bundle.checks). Generated bundles, no training."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile

import pytest

from engine import bundle
from engine.bundle import checks as bundle_checks
from engine.store import SCHEMA_VERSION, Store

from tests.helpers.faults import ROOT, cli, counts, finished, one_line


# --- 2. bundles are untrusted input ------------------------------------------------

def _bundle(payloads: dict[str, object], manifest: dict | None = None, raw: dict[str, bytes] | None = None) -> bytes:
    """A bundle zip of run files (JSON-dumped, or `raw` bytes) with a correct manifest."""
    files = {name: json.dumps(p).encode() for name, p in payloads.items()}
    files.update(raw or {})
    import hashlib

    man = {"format": bundle.FORMAT, "bundle_version": 1, "schema_version": SCHEMA_VERSION, "exported": 1.0,
           "exported_from": "box-7", "runs": [int(n.split("/")[1].split(".")[0]) for n in files],
           "sha256": {n: hashlib.sha256(d).hexdigest() for n, d in files.items()}, **(manifest or {})}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(man))
        for n, d in files.items():
            z.writestr(n, d)
    return buf.getvalue()


@pytest.fixture
def good_payload(tmp_path):
    """One valid run file, as export_runs writes it (from a store of its own)."""
    s = Store(tmp_path / "src" / "runs.sqlite")
    try:
        rid = finished(s)
        buf = io.BytesIO()
        bundle.export_runs(s, [rid], buf)
    finally:
        s.close()
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        return json.loads(z.read(f"runs/{rid}.json"))


@pytest.mark.worker
def test_a_valid_generated_bundle_imports(store, good_payload, tmp_path):
    path = tmp_path / "ok.zip"
    path.write_bytes(_bundle({"runs/1.json": good_payload}))
    p = cli(store.path.parent, "import", str(path))
    assert p.returncode == 0, p.stderr
    assert counts(store.path)["runs"] == 1 and counts(store.path)["executions"] == 3


@pytest.mark.worker
def test_zip_bomb_is_refused_from_its_headers_under_300_mb(store, tmp_path):
    """400 MB of spaces in a 0.4 MB member: refused before any byte is inflated; the
    importing process's peak RSS (getrusage of a fresh child) stays far below 300 MB."""
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("manifest.json", json.dumps({"format": bundle.FORMAT, "bundle_version": 1,
                                                "schema_version": SCHEMA_VERSION, "runs": [1], "sha256": {}}))
        with z.open("runs/1.json", "w", force_zip64=True) as fh:
            chunk = b" " * (16 << 20)
            for _ in range(25):
                fh.write(chunk)
    assert path.stat().st_size < 1 << 20
    before = counts(store.path)
    code = ("import resource, subprocess, sys; r = subprocess.run([sys.executable, '-m', 'engine', 'import', "
            f"{str(path)!r}], capture_output=True, text=True); sys.stderr.write(r.stderr); "
            "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                       env={**os.environ, "SPEEDLAB_HOME": str(store.path.parent)})
    rc, peak_kb = map(int, p.stdout.split())
    line = one_line(subprocess.CompletedProcess([], rc, "", p.stderr))
    assert line == ("error: bomb.zip: runs/1.json: 400.0 MB uncompressed, more than the 64.0 MB a member may "
                    "hold; nothing was imported")
    print(f"peak RSS of the refused bomb import: {peak_kb / 1024:.0f} MB")
    assert peak_kb < 300 * 1024
    assert counts(store.path) == before


@pytest.mark.worker
def test_high_ratio_member_under_the_size_limit_is_refused(store, tmp_path):
    path = tmp_path / "ratio.zip"
    path.write_bytes(_bundle({}, raw={"runs/1.json": b"[" + b" " * (8 << 20) + b"]"}))
    line = one_line(cli(store.path.parent, "import", str(path)))
    assert "runs/1.json: compressed" in line and "more than the 100:1 of any real bundle" in line


def test_too_many_members_is_refused(store, tmp_path, monkeypatch):
    monkeypatch.setattr(bundle_checks, "MAX_MEMBERS", 3)
    data = _bundle({f"runs/{i}.json": {} for i in range(1, 5)})
    with pytest.raises(bundle.BundleError, match=r"the archive: 5 members, more than the 3 a bundle may hold"):
        bundle.import_bundle(store, io.BytesIO(data), "many.zip")


def test_member_larger_than_its_header_is_not_read_past_it(tmp_path):
    """A header that understates the size: the read ends at the announced size, refused."""
    path = tmp_path / "liar.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("runs/1.json", b"x" * 5000)
    with zipfile.ZipFile(path) as z:
        z.getinfo("runs/1.json").file_size = 100  # as a forged central directory would say
        # zipfile stops at the announced size and then finds the CRC wrong; either way no more is read.
        with pytest.raises((bundle_checks.BundleRejected, zipfile.BadZipFile)):
            bundle_checks.read_member(z, "runs/1.json")


@pytest.mark.worker
def test_deep_json_is_refused_without_recursion(store, tmp_path):
    path = tmp_path / "deep.zip"
    path.write_bytes(_bundle({}, raw={"runs/1.json": b"[" * 100_000 + b"]" * 100_000}))
    line = one_line(cli(store.path.parent, "import", str(path)))
    assert line == ("error: deep.zip: runs/1.json: JSON nested more than 32 levels deep (a run file needs 5); "
                    "nothing was imported")


def test_depth_scan_skips_brackets_inside_strings():
    assert bundle_checks.depth(b'{"a": "[[[[{{{{", "b": [[1], {"c": []}]}') == 4  # { [ [ or { [
    assert bundle_checks.depth(b'["\\"[[["]') == 1


@pytest.mark.parametrize("field", sorted(f for f, (_, req) in bundle_checks.RUN_FIELDS.items() if req))
def test_bundle_missing_a_required_run_field_is_refused(store, good_payload, field):
    p = json.loads(json.dumps(good_payload))
    del p["run"][field]
    with pytest.raises(bundle.BundleError) as e:
        bundle.import_bundle(store, io.BytesIO(_bundle({"runs/1.json": p})), "b.zip")
    assert str(e.value).startswith(f"b.zip: runs/1.json: run.{field}: missing")
    assert counts(store.path)["runs"] == 0


@pytest.mark.parametrize("field", ["model", "dataset", "precision", "batch_size", "epochs"])
def test_bundle_config_missing_a_field_is_refused(store, good_payload, field):
    p = json.loads(json.dumps(good_payload))
    del p["run"]["config"][field]
    with pytest.raises(bundle.BundleError, match=rf"runs/1.json: run.config.{field}: missing"):
        bundle.import_bundle(store, io.BytesIO(_bundle({"runs/1.json": p})), "b.zip")
    assert counts(store.path)["runs"] == 0


@pytest.mark.parametrize("field, value, expect", [
    ("id", "7", "run.id: is a JSON string, not an integer"),
    ("created", None, "run.created: is a JSON null, not an integer or a number"),
    ("config", [1], "run.config: is a JSON array, not an object"),
    ("status", 3, "run.status: is a JSON number, not a string"),
    ("status", "exploded", "run.status: 'exploded' is not one of completed, failed, cancelled"),
    ("summary", "fast", "run.summary: is a JSON string, not an object or null"),
    ("baseline_id", True, "run.baseline_id: is a JSON boolean, not an integer or null"),
])
def test_bundle_run_field_of_the_wrong_type_is_refused(store, good_payload, field, value, expect):
    p = json.loads(json.dumps(good_payload))
    p["run"][field] = value
    with pytest.raises(bundle.BundleError, match=f"runs/1.json: {expect}"):
        bundle.import_bundle(store, io.BytesIO(_bundle({"runs/1.json": p})), "b.zip")


def test_bundle_config_gets_a_new_runs_validation(store, good_payload):
    p = json.loads(json.dumps(good_payload))
    p["run"]["config"]["precision"] = "float8"
    with pytest.raises(bundle.BundleError, match=r"run.config.precision: 'float8' is not supported; use one of"):
        bundle.import_bundle(store, io.BytesIO(_bundle({"runs/1.json": p})), "b.zip")
    p["run"]["config"].update(precision="float32", devices=3, batch_size=128)
    with pytest.raises(bundle.BundleError, match=r"run.config.batch_size: 128 is not divisible by 3 replicas"):
        bundle.import_bundle(store, io.BytesIO(_bundle({"runs/1.json": p})), "b.zip")


def test_bundle_from_a_machine_with_data_this_one_lacks_imports(store, good_payload):
    p = json.loads(json.dumps(good_payload))
    p["run"]["config"]["dataset"] = "user:their_photos"  # registered there, not here
    pairs = bundle.import_bundle(store, io.BytesIO(_bundle({"runs/1.json": p})), "b.zip")
    assert len(pairs) == 1


@pytest.mark.parametrize("payload, expect", [
    ([1, 2], "runs/1.json: is a JSON array, not a run object"),
    ("run", "runs/1.json: is a JSON string, not a run object"),
])
@pytest.mark.worker
def test_payload_of_the_wrong_type_is_one_line(store, tmp_path, payload, expect):
    path = tmp_path / "t.zip"
    path.write_bytes(_bundle({"runs/1.json": payload}))
    assert one_line(cli(store.path.parent, "import", str(path))) == f"error: t.zip: {expect}; nothing was imported"


def test_metric_rows_that_do_not_fit_are_refused_before_writing(store, good_payload):
    for mutate, expect in [
        (lambda p: p["executions"]["rows"][1].pop(), r"executions.rows\[1\]: not a list of \d+ values"),
        (lambda p: p["executions"]["rows"][0].__setitem__(0, None), r"executions.rows\[0\].idx: is null"),
        (lambda p: p["epochs"]["rows"][0].__setitem__(3, {"a": 1}), r"epochs.rows\[0\].loss: is a JSON object"),
        (lambda p: p["executions"]["columns"].remove("t") or [r.pop(4) for r in p["executions"]["rows"]],
         r"executions.columns: lacks t"),
    ]:
        p = json.loads(json.dumps(good_payload))
        mutate(p)
        with pytest.raises(bundle.BundleError, match=expect):
            bundle.import_bundle(store, io.BytesIO(_bundle({"runs/1.json": p})), "b.zip")
    assert counts(store.path) == {"runs": 0, "executions": 0, "epochs": 0, "system": 0, "workers": 0}


def test_one_bad_run_of_two_adds_neither(store, good_payload):
    bad = json.loads(json.dumps(good_payload))
    bad["run"]["key"], bad["run"]["id"] = "other/2/1.0", 2
    del bad["run"]["config"]["model"]
    with pytest.raises(bundle.BundleError, match="runs/2.json"):
        bundle.import_bundle(store, io.BytesIO(_bundle({"runs/1.json": good_payload, "runs/2.json": bad})), "b.zip")
    assert counts(store.path)["runs"] == 0
