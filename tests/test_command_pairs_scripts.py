"""Real user scripts (tests/user_scripts/) through SpeedLabCallback and `engine pairs` (issue 55,
item 9): the stored figures are held against what each script measured itself.

One module fixture runs them (each script's `import keras` is most of its 8 CPU-s): `engine pairs`
on two pairs, and a fifth script trained alone while pair 1's baseline trains, for the overlap: it
starts as soon as pairs has stored its comparison, so that its import overlaps the baseline's."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from engine.store import Store
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.worker

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = f"{shlex.quote(sys.executable)} tests/user_scripts/train_digits.py"


def _env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPEEDLAB_")}
    return {**env, "SPEEDLAB_HOME": str(home), "PYTHONPATH": str(ROOT), "SPEEDLAB_WARM_WORKER": "0"}


def _runs(home: Path) -> list[dict]:
    if not (home / "runs.sqlite").exists():
        return []
    with Store(home / "runs.sqlite") as store:
        return store.list_runs()


def _training(home: Path, procs: list, which) -> int | None:
    """The id of a running run `which` picks in `home`'s store, or None; fails when one of `procs`
    ended."""
    ended = [p.args for p in procs if p.poll() is not None]
    assert not ended, f"ended early: {ended} (their output: {home})"
    return next((r["id"] for r in _runs(home) if r["status"] == "running" and which(r)), None)


def _compared(home: Path, procs: list) -> bool:
    """Whether `engine pairs` stored its comparison in `home` (so it passed its busy check);
    fails when one of `procs` ended."""
    ended = [p.args for p in procs if p.poll() is not None]
    assert not ended, f"ended early: {ended} (their output: {home})"
    if not (home / "runs.sqlite").exists():
        return False
    from engine.store import comparisons as cstore

    with Store(home / "runs.sqlite") as store:
        return bool(cstore.list_all(store))


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    """`engine pairs` on two pairs of train_digits.py (the baseline at 64, the candidate at 128
    samples a batch), and one more train_digits.py started alone once pairs has stored its
    comparison (after its busy check, which refuses a running run): the lone script imports Keras
    while pair 1's baseline does. Both wait at their first epoch's end until both have begun
    training, then sleep 0.5 s at each of their three epochs' ends: they train at once for at
    least 1.5 s whatever the machine's load. Returns {'home', 'own', 'pairs': (code, stdout,
    stderr), 'alone': (code, stderr), 'held_id': that baseline's run id, 'alone_id': the lone
    script's}."""
    home = tmp_path_factory.mktemp("scripts")
    own, alone_out, go = home / "own", home / "alone", home / "go"
    own.mkdir()
    alone_out.mkdir()
    env = _env(home)
    # files, not pipes: nothing reads a pipe while the fixture waits on the other process
    out, err, alone_err = (open(home / name, "w+") for name in ("pairs.out", "pairs.err", "alone.err"))
    pairs = subprocess.Popen(
        [sys.executable, "-m", "engine", "pairs", "--baseline-cmd", f"{SCRIPT} --out {own} --sleep 0.5 --hold {go}",
         "--cmd", f"{SCRIPT} --out {own} --batch-size 128", "--pairs", "2", "--json"],
        cwd=ROOT, env=env, stdout=out, stderr=err, text=True)
    alone = None
    try:
        wait_for(lambda: _compared(home, [pairs]), 300, "the pairs' comparison")
        alone = subprocess.Popen([sys.executable, "tests/user_scripts/train_digits.py", "--out", str(alone_out),
                                  "--sleep", "0.5", "--hold", str(go)], cwd=ROOT, env=env, stderr=alone_err, text=True)
        # polled every 0.5 s: both hold until `go`, so a later look shortens no overlap
        held_id = wait_for(lambda: _training(home, [pairs, alone], lambda r: r["role"] == "baseline"), 300,
                           "pair 1's baseline")
        alone_id = wait_for(lambda: _training(home, [pairs, alone], lambda r: r["group_id"] is None), 300,
                            "the lone script")
        go.touch()
        alone.wait(timeout=300)
        pairs.wait(timeout=600)
    finally:
        for p in (pairs, alone):
            if p is not None and p.poll() is None:
                p.kill()
        texts = []
        for f in (out, err, alone_err):
            f.seek(0)
            texts.append(f.read())
            f.close()
    return {"home": home, "own": own, "pairs": (pairs.returncode, *texts[:2]), "alone": (alone.returncode, texts[2]),
            "held_id": held_id, "alone_id": alone_id}


def test_two_scripts_compared_get_the_split_and_the_test_accuracy_they_measured(scripts):
    tmp_path, out = scripts["home"], scripts["own"]
    code, stdout, stderr = scripts["pairs"]
    assert code == 0, stderr[-3000:]
    c = json.loads(stdout.strip().splitlines()[-1])["comparison"]
    own = {(role, seed): json.loads((out / f"{role}-{seed}.json").read_text())
           for role in ("baseline", "run") for seed in (0, 1)}
    with Store(tmp_path / "runs.sqlite") as store:
        for role, ids in (("baseline", c["baseline_ids"]), ("run", c["run_ids"])):
            for rid in ids:
                run = store.get_run(rid)
                mine = own[(role, run["config"]["seed"])]
                assert run["plan"]["n_train"] == mine["n_train"] == 1200
                assert run["summary"]["test_accuracy"] == pytest.approx(mine["test_accuracy"], abs=1e-6)
                stored = [e["val_accuracy"] for e in store.metrics("epochs", rid)]
                assert stored == pytest.approx(mine["val_acc"], abs=1e-6)
    # the comparison's test accuracy is the scripts' own: run minus baseline per seed, averaged
    diffs = [own[("run", s)]["test_accuracy"] - own[("baseline", s)]["test_accuracy"] for s in (0, 1)]
    assert c["test_accuracy_delta"]["per_pair"] == pytest.approx(diffs, abs=1e-6)
    assert c["test_accuracy_delta"]["mean"] == pytest.approx(sum(diffs) / 2, abs=1e-6)
    # the split's sample efficiency is the scripts' own: epochs to 0.7 validation accuracy x 1,200 samples
    def samples(mine):
        return (next(i for i, a in enumerate(mine["val_acc"]) if a >= 0.7 - 1e-6) + 1) * mine["n_train"]
    ratios = [samples(own[("baseline", s)]) / samples(own[("run", s)]) for s in (0, 1)]
    assert c["factors"]["sample_efficiency"]["pair_ratios"] == pytest.approx(ratios)
    assert c["overlap"] is None  # the pairs ran one process at a time


def test_two_scripts_at_once_are_flagged_when_compared(scripts, monkeypatch):
    code, err = scripts["alone"]
    assert code == 0, err
    with Store(scripts["home"] / "runs.sqlite") as store:
        a, b = store.get_run(scripts["held_id"]), store.get_run(scripts["alone_id"])
    shared = min(a["ended"], b["ended"]) - max(a["started"], b["started"])
    assert shared > 0.5  # both waited for the other to train, then each slept 1.5 s or more
    from tests.helpers import cli

    monkeypatch.setenv("SPEEDLAB_HOME", str(scripts["home"]))
    cmp = cli.engine("compare", str(a["id"]), str(b["id"]), "--json")  # reads the store: in this process
    got = json.loads(cmp.stdout.strip().splitlines()[-1])
    line = (f"these runs overlapped for {max(1, round(shared)):,} s on this machine: their times are not "
            "independent")
    assert got["overlap"] == line and got["caveats"][0] == line
