"""Run bundles: export from one store, import into a second SPEEDLAB_HOME (CLI),
and one line (exit code 2, nothing changed) for a truncated bundle, a bundle
from a newer schema, and a second import of the same bundle."""
from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import pytest

from engine import bundle
from engine.config import RunConfig
from engine.store import SCHEMA_VERSION, Store
from tests.helpers import cli as engine_cli
from tests.helpers import trained_store



def cli_here(home: Path, *args: str) -> engine_cli.Result:
    """`python -m engine ARGS` on the store at `home`, in this process: for a refusal, where the
    process is not the point (in the unit lane the lane guard proves no framework import)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPEEDLAB_HOME", str(home))
        return engine_cli.engine(*args)


def stored(home: Path, table: str, run_id: int) -> list[dict]:
    s = Store(home / "runs.sqlite")
    try:
        return s.metrics(table, run_id)
    finally:
        s.close()


def counts(home: Path) -> dict:
    """Rows per table: 'nothing changed' is checked against these."""
    s = Store(home / "runs.sqlite")
    try:
        return {t: s.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in ("runs", "executions", "epochs", "system", "workers")}
    finally:
        s.close()


def small_pair(store: Store) -> tuple[int, int]:
    """A finished baseline and run as the worker stores them (no training): 3
    executions and 1 epoch each, the run linked to the baseline."""
    ids = []
    for role, prec, rate in (("baseline", "float32", 1000.0), ("run", "mixed_bfloat16", 1500.0)):
        rid = store.create_run(RunConfig(precision=prec, epochs=1).to_json(), role=role, group_id="g7",
                               status="running")
        store.update_run(rid, environment={"hostname": "gpu-box-7", "devices": ["/GPU:0"], "tensorflow": "2.21.0"},
                         plan={"total_steps": 3})
        store.add_metrics(rid, executions=[(i, 0, i + 1, 1, 0.1 * (i + 1), 0.1, rate + 100 * i, 2.0 - i / 3,
                                            1e-3, int(i == 0), 0.01) for i in range(3)],
                          epochs=[(0, 0.35, 3, 1.5, 0.6, 1.4, 0.65, 1e-3)],
                          system=[(0.2, 90.0, 500.0, 10.0, None, 0)])
        store.finish_run(rid, "completed", summary={"samples_per_sec": rate * 1.15, "wall_sec": 0.4})
        ids.append(rid)
    store.update_run(ids[1], baseline_id=ids[0])
    return ids[0], ids[1]


@pytest.mark.worker
def test_real_run_exported_and_imported_into_a_second_home_keeps_metrics_and_provenance(tmp_path, tmp_path_factory):
    a, b = tmp_path / "a", tmp_path / "b"
    # A real run (2 epochs of digits, one step per execution) from the session's trained store
    # (tests/helpers/trained_store.py: built once, its runs trained by real workers), copied to a.
    rid = trained_store.copy_into(a, tmp_path_factory)["baseline"]
    zpath = tmp_path / "talk.zip"
    # Only the run needed processes; the rest reads and writes stores in this one.
    out = cli_here(a, "export", str(rid), "-o", str(zpath))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"wrote 1 run to {zpath}"
    assert not Path(str(zpath) + ".part").exists()

    cli_here(b, "runs")  # b already has a store (empty): the imported run gets b's next id
    out = cli_here(b, "import", str(zpath))
    assert out.returncode == 0, out.stderr
    src = Store(a / "runs.sqlite").get_run(rid)
    host = src["environment"]["hostname"]
    assert out.stdout.strip() == f"run #1: imported from {host} (run #{rid} there), baseline, completed"

    new = Store(b / "runs.sqlite").get_run(1)
    for key in ("config", "environment", "plan", "summary", "status", "role", "group_id", "created",
                "started", "ended"):
        assert new[key] == src[key], key
    assert new["environment"]["tensorflow"].startswith("2.21") and new["environment"]["devices"]
    assert new["origin"]["host"] == host and new["origin"]["run_id"] == rid
    assert new["origin"]["key"] == f"{host}/{rid}/{src['created']:.6f}" and new["origin"]["bundle"] == "talk.zip"
    assert src.get("origin") is None  # the source store is unchanged
    for table in ("executions", "epochs", "system"):
        rows = stored(a, table, rid)
        assert rows and stored(b, table, 1) == rows, table
    assert len(stored(b, "executions", 1)) == 24  # 2 epochs x 12 steps, one execution each

    # The table marks it; compare works on the imported copy as on the original.
    out = cli_here(b, "runs", "--json")
    (row,) = json.loads(out.stdout)
    assert row["origin"] == f"imported from {host}"
    out = cli_here(b, "compare", "1", "1", "--json")
    assert json.loads(out.stdout)["throughput_speedup"] == pytest.approx(1.0)


@pytest.mark.unit
def test_baseline_link_is_kept_inside_the_bundle(tmp_path, monkeypatch):
    a, b = Store(tmp_path / "a.sqlite"), Store(tmp_path / "b.sqlite")
    b.create_run(RunConfig().to_json(), status="completed")  # b's own run #1: the ids move on
    base, run = small_pair(a)
    buf = io.BytesIO()
    manifest = bundle.export_runs(a, [base, run], buf)
    assert manifest["runs"] == [base, run] and manifest["schema_version"] == SCHEMA_VERSION
    buf.seek(0)
    assert bundle.import_bundle(b, buf, "pair.zip") == [(base, 2), (run, 3)]
    assert b.get_run(3)["baseline_id"] == 2 and b.get_run(2)["baseline_id"] is None
    assert b.get_run(3)["group_id"] == b.get_run(2)["group_id"] == "g7"
    assert [e["samples_per_sec"] for e in b.metrics("executions", 3)] == [1500.0, 1600.0, 1700.0]
    assert b.metrics("epochs", 2) == a.metrics("epochs", base)


@pytest.mark.unit
def test_active_or_unknown_runs_are_not_exported(store):
    rid = store.create_run(RunConfig().to_json(), status="running")
    with pytest.raises(bundle.BundleError, match=f"run_id: {rid} is running; export it once it has ended"):
        bundle.export_runs(store, [rid], io.BytesIO())
    with pytest.raises(bundle.BundleError, match="run_id: 99 does not exist"):
        bundle.export_runs(store, [99], io.BytesIO())


@pytest.fixture
def two_homes(tmp_path):
    """(source home with a finished pair exported to pair.zip, empty target home, bundle path)."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    s = Store(a / "runs.sqlite")
    ids = small_pair(s)
    path = tmp_path / "pair.zip"
    bundle.export_runs(s, ids, path)
    s.close()
    Store(b / "runs.sqlite").close()
    return a, b, path


def rewrite(src: Path, dest: Path, edit) -> None:
    """Copy a bundle, passing (member name, bytes) through `edit`."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w") as zout:
        for name in zin.namelist():
            zout.writestr(name, edit(name, zin.read(name)))


def assert_refused(home: Path, path: Path, line: str) -> None:
    before = counts(home)
    out = cli_here(home, "import", str(path))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip() == f"error: {line}"
    assert counts(home) == before


@pytest.mark.unit  # the refusal runs in-process (cli_here)
def test_truncated_bundle_is_one_line_and_changes_nothing(two_homes, tmp_path):
    _, b, path = two_homes
    data = path.read_bytes()
    cut = tmp_path / "cut.zip"
    cut.write_bytes(data[: len(data) // 2])
    assert_refused(b, cut, "cut.zip is corrupt or truncated (File is not a zip file); copy or export it again")


@pytest.mark.unit  # the refusal runs in-process (cli_here)
def test_tampered_member_fails_its_checksum(two_homes, tmp_path):
    _, b, path = two_homes
    bad = tmp_path / "bad.zip"
    last = f"runs/{json.loads(zipfile.ZipFile(path).read('manifest.json'))['runs'][-1]}.json"
    rewrite(path, bad, lambda n, d: d.replace(b'"wall_sec":0.4', b'"wall_sec":0.1') if n == last else d)
    assert b'"wall_sec":0.1' in zipfile.ZipFile(bad).read(last)
    assert_refused(b, bad, f"bad.zip is corrupt: {last} does not match its checksum; export the runs again")


@pytest.mark.unit  # the refusal runs in-process (cli_here)
def test_future_schema_is_one_line_and_changes_nothing(two_homes, tmp_path):
    _, b, path = two_homes
    future = tmp_path / "future.zip"

    def bump(name, data):
        if name != "manifest.json":
            return data
        m = json.loads(data)
        m["schema_version"] = SCHEMA_VERSION + 5
        return json.dumps(m).encode()

    rewrite(path, future, bump)
    assert_refused(b, future, f"future.zip was written by a newer SpeedLab (store schema {SCHEMA_VERSION + 5}; "
                              f"this one reads up to {SCHEMA_VERSION}); upgrade SpeedLab here to import it")


@pytest.mark.unit  # the refusal runs in-process (cli_here)
def test_second_import_of_the_same_bundle_is_one_line_and_changes_nothing(two_homes):
    a, b, path = two_homes
    out = cli_here(b, "import", str(path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["run #1: imported from gpu-box-7 (run #1 there), baseline, completed",
                                       "run #2: imported from gpu-box-7 (run #2 there), run, completed"]
    assert_refused(b, path, "pair.zip is already imported: run(s) #1 (here #1), #2 (here #2) are in this "
                            "store; nothing was added (delete them first to import again)")
    # Back into the store it came from: the same runs are there already, recorded there, never imported.
    assert_refused(a, path, "pair.zip holds runs recorded in this store: run(s) #1 (here #1), #2 (here #2) are "
                            "here already; nothing was added (import it into another store)")


@pytest.mark.unit  # the refusal runs in-process (cli_here)
def test_not_a_bundle(two_homes, tmp_path):
    _, b, _ = two_homes
    other = tmp_path / "photos.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("cat.txt", "meow")
    assert_refused(b, other, "photos.zip is not a SpeedLab run bundle (no manifest.json); "
                             "make one with python -m engine export RUN_ID... -o FILE.zip")


@pytest.mark.page
def test_runs_page_imports_a_bundle_and_says_why_it_refuses_one(two_homes, monkeypatch):
    from tests.helpers.apptest import app_test

    _, b, path = two_homes
    monkeypatch.setenv("SPEEDLAB_HOME", str(b))
    at = app_test()
    at.switch_page("views/runs/runs.py")
    at.run()
    assert not at.exception
    up = [u for u in at.file_uploader if "Import a bundle" in u.label][0]
    up.upload("pair.zip", path.read_bytes(), "application/zip").run()
    at.button(key="bundle_import").click().run()
    assert not at.exception
    assert ("Imported 2 run(s) as #1, #2: imported from gpu-box-7 (run #1 there); imported from gpu-box-7 "
            "(run #2 there). Replay them on the Replay page.") in [shown(s.value) for s in at.success]
    table = at.dataframe[0].value
    assert table["origin"].tolist() == ["imported from gpu-box-7"] * 2
    assert counts(b)["executions"] == 6
    # The same bundle again: the engine's one line, nothing added.
    up = [u for u in at.file_uploader if "Import a bundle" in u.label][0]
    up.upload("pair.zip", path.read_bytes(), "application/zip").run()
    at.button(key="bundle_import").click().run()
    assert [shown(e.value) for e in at.error] == [
        "pair.zip is already imported: run(s) #1 (here #1), #2 (here #2) are in this store; nothing was "
        "added (delete them first to import again)"]
    assert counts(b)["runs"] == 2


def shown(markdown: str) -> str:
    """What a Markdown line reads as: untrusted text is escaped (engine.base.plain.md)."""
    return re.sub(r"\\(.)", r"\1", markdown)
