"""A read-only store is readable (issue 42, item 6): with SPEEDLAB_HOME on a read-only
mount, `runs`, `show`, `export` and the Runs page read it (SQLite `mode=ro`, else
`immutable=1`); a delete, a run or an import is one line naming the read-only path."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from engine.report import replay
from engine.store import Store, StoreReadOnlyError
from tests.helpers import cli as engine_cli


@pytest.fixture
def ro_home(tmp_path):
    """A tmpfs holding a store with a baseline and a run, remounted read-only."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a read-only tmpfs needs root")
    home = tmp_path / "ro"
    home.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(home)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        from tests.helpers.pages import finished_pair

        with Store(home / "runs.sqlite") as store:
            finished_pair(store)
        subprocess.run(["mount", "-o", "remount,ro", str(home)], check=True)
        yield home
    finally:
        subprocess.run(["umount", "-l", str(home)], capture_output=True)


def cli(home: Path, *args: str) -> engine_cli.Result:
    """`python -m engine ARGS` on the store at `home`, in this process (the process is not the point)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPEEDLAB_HOME", str(home))
        return engine_cli.engine(*args)


@pytest.mark.worker
def test_a_read_only_home_is_read_and_refuses_writes_in_one_line(ro_home, tmp_path, monkeypatch):
    with pytest.raises(OSError):
        (ro_home / "probe").write_text("x")  # really read-only
    with Store(ro_home / "runs.sqlite") as store:
        assert store.readonly and len(store.list_runs()) == 2
        with pytest.raises(StoreReadOnlyError, match=f"the store {ro_home / 'runs.sqlite'} is read-only"):
            store.update_run(1, error="x")
    runs = cli(ro_home, "runs")
    assert runs.returncode == 0, runs.stderr
    assert "#1" in runs.stdout or " 1 " in runs.stdout
    assert cli(ro_home, "show", "1").returncode == 0
    out = tmp_path / "b.zip"
    exp = cli(ro_home, "export", "1", "2", "-o", str(out))
    assert exp.returncode == 0, exp.stderr
    assert out.stat().st_size > 1000
    for args in (("delete", "1"), ("import", str(out)), ("run", "--epochs", "1")):
        p = cli(ro_home, *args)
        assert p.returncode == 2 and "Traceback" not in p.stderr, (args, p.stderr)
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "is read-only" in lines[0] and str(ro_home) in lines[0], (args, p.stderr)
    # The Runs page lists them.
    from tests.helpers.pages import app

    monkeypatch.setenv("SPEEDLAB_HOME", str(ro_home))
    import tempfile

    temp = tmp_path / "temp"  # the replay's clock goes to the system's temp folder: this test's
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    at = app("views/runs/runs.py")
    assert not at.exception
    assert sorted(at.dataframe[0].value["id"]) == [1, 2]
    at = app("views/replay.py")
    assert not at.exception
    assert not [e.value for e in at.error], [e.value for e in at.error]
    assert at.get("plotly_chart")  # the pair plays from the read-only store
    assert [f.name for f in temp.iterdir()] == [Path(replay.state_path()).name]  # the replay clock alone
