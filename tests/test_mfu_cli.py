"""MFU end to end: a real digits run prints its FLOPs, its theoretical peak with the parts
and MFU in --json, keeps the clock it measured for the next run, and `runs` / `show` read
the same fields."""
from __future__ import annotations

import json

import pytest

from tests.helpers import cli


def _engine(*args) -> str:
    """`python -m engine ARGS` in this process, on this test's store ($SPEEDLAB_HOME): the command
    is not the point (a real run still trains in the worker it queues; the others only read)."""
    p = cli.engine(*args)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


@pytest.mark.worker
def test_digits_mlp_run_reports_mfu_and_later_commands_read_it(store_home):
    # 3 epochs: in 1 (12 executions) every execution can overlap the evaluation step's background
    # trace on a busy machine, all count as warm-up and the run has no steady figure (seen once).
    out = json.loads(_engine("run", "--dataset", "digits", "--model", "mlp", "--epochs", "3", "--json",
                             "--quiet").strip().splitlines()[-1])
    # The first layer costs forward + weight gradient (no gradient for the images), the others 3x.
    assert out["flops_per_sample"] == 2 * (2 * 64 * 256) + 3 * (2 * 256 * 128 + 2 * 128 * 10)
    assert out["model_flops_per_sec"] == out["samples_per_sec"] * out["flops_per_sample"]
    # No hardware check in this store: the worker measured the clock after training and kept it;
    # the denominator is cores x that clock x FLOPs per cycle, and no best matmul is known yet.
    assert out["peak_kind"] == "theoretical" and out["peak_dtype"] == "float32"
    parts = out["peak_parts"]
    assert out["peak_flops_per_sec"] == parts["cores"] * parts["clock_hz"] * parts["flops_per_cycle"]
    assert out["peak_text"].endswith(f"x {parts['flops_per_cycle']} FLOPs/cycle")
    assert 0 < out["mfu"] <= 1 and out["mfu"] == out["model_flops_per_sec"] / out["peak_flops_per_sec"]
    assert out["best_matmul_flops_per_sec"] is None and out["mfu_of_best_matmul"] is None
    assert out["bound_by"].startswith("Bound by ")
    cache = json.loads((store_home / "hardware.json").read_text())
    kept = next(v for k, v in cache.items() if k.startswith("peak|"))
    assert kept["clock"]["clock_hz"] == parts["clock_hz"]

    runs = json.loads(_engine("runs", "--json"))
    assert runs[0]["mfu"] == pytest.approx(out["mfu"]) and runs[0]["peak_source"] == out["peak_source"]
    shown = _engine("show", "1")
    assert f"{out['flops_per_sample']:,} per training sample" in shown
    assert "MFU  " in shown and "bound by  " in shown
    # The column's width follows its values (pandas), so look for the name, not its padding.
    assert "mfu" in _engine("runs").splitlines()[0].split()
