"""One store for a user (engine.store.db.home): the CLI, the dashboard and the callback default to
the per-user folder ($XDG_DATA_HOME/speedlab, ~/.local/share/speedlab) from any working folder,
SPEEDLAB_HOME overrides it, a store at the old default ./.speedlab is said, never lost silently,
and the installed `speedlab` command (speedlab/cli.py) works from any folder."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from engine.store import Store, home, old_store_line
from engine.store.db import default_path, user_home

ROOT = Path(__file__).resolve().parent.parent


def test_the_default_is_the_per_user_folder_whatever_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("SPEEDLAB_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for cwd in (tmp_path, ROOT):
        monkeypatch.chdir(cwd)
        assert home() == (tmp_path / "data" / "speedlab").resolve()
        assert default_path() == (tmp_path / "data" / "speedlab" / "runs.sqlite").resolve()
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")  # invalid by the XDG spec: ignored
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    assert home() == (tmp_path / "me" / ".local" / "share" / "speedlab").resolve()
    monkeypatch.delenv("XDG_DATA_HOME")
    assert user_home() == (tmp_path / "me" / ".local" / "share" / "speedlab").resolve()
    monkeypatch.setenv("SPEEDLAB_HOME", "~/elsewhere")  # the override, ~ expanded
    assert home() == (tmp_path / "me" / "elsewhere").resolve()


def test_no_test_reaches_the_real_per_user_folder(monkeypatch):
    """tests/conftest.py points XDG_DATA_HOME at the session's own folder and drops SPEEDLAB_HOME."""
    monkeypatch.delenv("SPEEDLAB_HOME", raising=False)
    data = Path(os.environ["XDG_DATA_HOME"])
    assert data.parent == Path(tempfile.gettempdir()) and data.name.startswith("speedlab-tests-data-")
    assert home() == (data / "speedlab").resolve()
    real = (Path(os.path.expanduser("~")) / ".local" / "share" / "speedlab").resolve()
    assert home() != real and not str(home()).startswith(str(real))


def test_a_store_at_the_old_default_is_said_with_the_way_to_use_it(tmp_path, monkeypatch, capsys):
    from engine.cli.main import main

    monkeypatch.delenv("SPEEDLAB_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    old = tmp_path / "project" / ".speedlab"
    old.mkdir(parents=True)
    Store(old / "runs.sqlite").close()
    monkeypatch.chdir(tmp_path / "project")
    line = (f"note: runs stored before the per-user default are in {old / 'runs.sqlite'} (this uses "
            f"{tmp_path / 'data' / 'speedlab' / 'runs.sqlite'}); to use them, set SPEEDLAB_HOME={old}")
    assert old_store_line() == line
    assert main(["runs"]) == 0
    assert capsys.readouterr().err.splitlines()[0] == line
    monkeypatch.setenv("SPEEDLAB_HOME", str(old))  # pointed there: it is the store, nothing to say
    assert old_store_line() is None and default_path() == old / "runs.sqlite"
    monkeypatch.setenv("SPEEDLAB_HOME", str(tmp_path / "chosen"))  # another store the user chose
    assert old_store_line() is None
    monkeypatch.delenv("SPEEDLAB_HOME")
    assert old_store_line(tmp_path) is None  # a folder without one


SCRIPT = """
import numpy as np, keras
from speedlab import SpeedLabCallback
rng = np.random.default_rng(0)
x, y = rng.random((96, 8), dtype=np.float32), rng.integers(0, 2, 96)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2, activation="softmax")])
model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[SpeedLabCallback(name="anywhere")])
"""


@pytest.mark.worker
def test_a_script_in_its_own_folder_and_the_speedlab_command_share_the_users_store(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPEEDLAB_")}
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), PYTHONPATH=str(ROOT), SPEEDLAB_WARM_WORKER="0")
    folder = tmp_path / "my-project"
    (folder / ".speedlab").mkdir(parents=True)  # a store this folder had under the old default
    Store(folder / ".speedlab" / "runs.sqlite").close()
    (folder / "train.py").write_text(SCRIPT)
    done = subprocess.run([sys.executable, "train.py"], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    store = tmp_path / "data" / "speedlab" / "runs.sqlite"
    lines = [x for x in done.stderr.splitlines() if x.startswith("SpeedLab:")]
    assert lines == [f"SpeedLab: recording run #1 in {store}; watch it at http://localhost:8501 (the dashboard) "
                     "or with `speedlab show 1`",
                     f"SpeedLab: note: runs stored before the per-user default are in {folder / '.speedlab' / 'runs.sqlite'} "
                     f"(this uses {store}); to use them, set SPEEDLAB_HOME={folder / '.speedlab'}"]
    # the installed command's entry point, from a third folder: the same store, the same run
    (tmp_path / "elsewhere").mkdir()
    shown = subprocess.run([sys.executable, "-c", "import sys; from speedlab.cli import main; sys.exit(main())",
                            "runs", "--json"], cwd=tmp_path / "elsewhere", env=env, capture_output=True, text=True,
                           timeout=120)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert '"id": 1' in shown.stdout and "anywhere" in shown.stdout
    with Store(store) as s:
        assert s.get_run(1)["status"] == "completed" and s.get_run(1)["plan"]["name"] == "anywhere"


@pytest.mark.page
def test_the_runs_page_names_a_store_left_at_the_old_default(tmp_path, monkeypatch):
    from tests.helpers.pages import app, no_errors, texts

    monkeypatch.delenv("SPEEDLAB_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    (tmp_path / "clone" / ".speedlab").mkdir(parents=True)
    Store(tmp_path / "clone" / ".speedlab" / "runs.sqlite").close()
    monkeypatch.chdir(tmp_path / "clone")
    at = app("views/runs/runs.py")
    no_errors(at)
    assert f"runs stored before the per-user default are in {tmp_path / 'clone' / '.speedlab' / 'runs.sqlite'}" \
        in texts(at.info).replace("\\", "")
    monkeypatch.chdir(tmp_path)  # a folder without one: nothing said
    assert "per-user default" not in texts(app("views/runs/runs.py").info)
