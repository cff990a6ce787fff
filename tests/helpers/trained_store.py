"""One trained store for the whole test session, for tests that only read what real runs stored
(an export, a stored baseline's reuse, the recorded learning rate): LAUNCHED launched with its
baseline, two real runs in workers, built once per session however many test processes ask
(an exclusive lock on a file in the session's shared temp folder: under xdist the first
process builds, the others wait for it), then copied into each test's home. Tests that prove a
run, a signal or a live update train their own."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from engine.config import RunConfig

from tests.helpers.queue import queue_gone

# A warm-up cosine schedule in executions of 4 steps, 2 epochs of digits; its baseline
# (baseline_config) is float32 with a constant learning rate in executions of 1 step: 24.
LAUNCHED = RunConfig(model="mlp", epochs=2, steps_per_execution=4, target_accuracy=0.5,
                     schedule="warmup_cosine", warmup_epochs=1.0)

_built: dict = {}  # this process's answer, once it has one


def _session_dir(tmp_path_factory) -> Path:
    """A folder every process of this session sees: under xdist each test process's basetemp
    (popen-gwN) sits in the session's own."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "trained-store"


def _build(home: Path) -> dict:
    from engine.jobs import runner

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPEEDLAB_HOME", str(home))
        bid, rid, reused = runner.launch_with_baseline(LAUNCHED)
        runner.wait(rid, timeout_s=180)
        queue_gone(home)  # nothing writes the store while it is copied
    return {"baseline": bid, "run": rid, "reused": reused}


def trained(tmp_path_factory) -> dict:
    """The session's trained store, built on first use: {"path": its runs.sqlite (never open
    it for writing: copy it with `copy_into`), "baseline": the baseline's id, "run": LAUNCHED's
    id, "reused": whether the launch reused a stored baseline (False)}. Raises: as runner.wait
    (TimeoutError after 180 s) or queue_gone while building."""
    if _built:
        return _built
    folder = _session_dir(tmp_path_factory)
    folder.mkdir(exist_ok=True)
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, by a crashed builder too
        done = folder / "ids.json"
        if not done.exists():
            home = folder / f"home-{os.getpid()}"  # a builder that failed left its own
            ids = _build(home)
            frozen = folder / "runs.sqlite"
            src, dst = sqlite3.connect(home / "runs.sqlite"), sqlite3.connect(frozen)
            try:
                src.backup(dst)
                dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                src.close()
                dst.close()
            done.write_text(json.dumps(ids))
        _built.update(json.loads(done.read_text()), path=folder / "runs.sqlite")
    return _built


def copy_into(home: Path, tmp_path_factory) -> dict:
    """Copy the session's trained store to `home`/runs.sqlite (`home` made if missing);
    returns `trained`'s ids."""
    built = trained(tmp_path_factory)
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(built["path"], home / "runs.sqlite")
    return built
