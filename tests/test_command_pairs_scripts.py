"""Real user scripts (tests/user_scripts/) through SpeedLabCallback and `engine pairs` (issue 55,
item 9): the stored figures are held against what each script measured itself."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from engine.store import Store

pytestmark = pytest.mark.worker

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = f"{shlex.quote(sys.executable)} tests/user_scripts/train_digits.py"


def _env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPEEDLAB_")}
    return {**env, "SPEEDLAB_HOME": str(home), "PYTHONPATH": str(ROOT), "SPEEDLAB_WARM_WORKER": "0"}


def test_two_scripts_compared_get_the_split_and_the_test_accuracy_they_measured(tmp_path):
    out = tmp_path / "own"
    out.mkdir()
    proc = subprocess.run([sys.executable, "-m", "engine", "pairs", "--baseline-cmd", f"{SCRIPT} --out {out}",
                           "--cmd", f"{SCRIPT} --out {out} --batch-size 128", "--pairs", "2", "--json"],
                          cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    c = json.loads(proc.stdout.strip().splitlines()[-1])["comparison"]
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


def test_two_scripts_at_once_are_flagged_when_compared(tmp_path, monkeypatch):
    out = tmp_path / "own"
    out.mkdir()
    env = _env(tmp_path)
    argv = [sys.executable, "tests/user_scripts/train_digits.py", "--out", str(out), "--sleep", "1"]
    procs = [subprocess.Popen(argv, cwd=ROOT, env={**env, "SPEEDLAB_SEED": str(s)}, stderr=subprocess.PIPE,
                              text=True) for s in (0, 1)]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    with Store(tmp_path / "runs.sqlite") as store:
        a, b = store.get_run(1), store.get_run(2)
    shared = min(a["ended"], b["ended"]) - max(a["started"], b["started"])
    assert shared > 0.5  # both slept 3 s inside fit, started together
    from tests.helpers import cli

    monkeypatch.setenv("SPEEDLAB_HOME", str(tmp_path))
    cmp = cli.engine("compare", "1", "2", "--json")  # reads the store: in this process
    got = json.loads(cmp.stdout.strip().splitlines()[-1])
    line = (f"these runs overlapped for {max(1, round(shared)):,} s on this machine: their times are not "
            "independent")
    assert got["overlap"] == line and got["caveats"][0] == line
