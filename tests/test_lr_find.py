"""LR range test: the suggestion rules on hand-made curves, and one real sweep
on digits (CPU, ~6 s) through the CLI."""
import json
import math

import numpy as np
import pytest

from engine.lr_find import range_test as lr_find
from engine.cli.main import main as cli_main
from engine.config import RunConfig
from engine.lr_find.range_test import Smoother, smoothing_beta, suggest, sweep_lr

DECADES = [10.0 ** e for e in range(-6, 1)]  # 1e-6, 1e-5, ..., 1


def test_suggest_steepest_on_known_curve():
    # ln(lr) is evenly spaced by h = ln 10; np.gradient's central differences
    # per decade (slope * ln 10) at points 0..3 (before the minimum at index 4):
    #   i0 (one-sided): 1.9 - 2.0 = -0.1;   i1: (1.5 - 2.0) / 2 = -0.25
    #   i2: (0.7 - 1.9) / 2 = -0.6  <- steepest;   i3: (0.5 - 1.5) / 2 = -0.5
    # so steepest = lr[2] = 1e-4 at -0.6 per decade; min at lr[4] = 1e-2 -> /10 = 1e-3.
    # 5 points up to the minimum (>= MIN_DESCENT_POINTS), drop (2.0-0.5)/2.0 = 75%.
    losses = [2.0, 1.9, 1.5, 0.7, 0.5, 0.6, 3.0]
    s = suggest(DECADES, losses)
    assert s["method"] == "steepest"
    assert s["suggested"] == pytest.approx(1e-4)
    assert s["steepest"] == pytest.approx(1e-4)
    assert s["steepest_slope"] == pytest.approx(-0.6)
    assert s["min_loss_lr"] == pytest.approx(1e-2)
    assert s["min_loss"] == pytest.approx(0.5)
    assert s["min_over_10"] == pytest.approx(1e-3)
    assert s["points"] == 7


def test_suggest_ignores_non_finite_tail():
    # A diverged sweep ends in None / NaN / inf: dropped, same answer as above.
    lrs = DECADES + [3.0, 5.0, 8.0]
    losses = [2.0, 1.9, 1.5, 0.7, 0.5, 0.6, 3.0, None, math.nan, math.inf]
    s = suggest(lrs, losses)
    assert (s["method"], s["points"]) == ("steepest", 7)
    assert s["suggested"] == pytest.approx(1e-4)


def test_suggest_smooth_curve_still_falling_at_the_end():
    # y = 2 - tanh(ln(lr / 1e-3)) on 61 log-spaced LRs 1e-6..1 (0.1 decade apart):
    # falls everywhere, fastest at lr = 1e-3 (index 30; the central difference there
    # is -tanh(h)/h per unit ln lr, larger than -tanh(2h)/(2h) at its neighbours).
    # Minimum at the last point (lr 1) -> min_over_10 = 0.1.
    lrs = 10.0 ** np.linspace(-6, 0, 61)
    losses = 2.0 - np.tanh(np.log(lrs / 1e-3))
    s = suggest(list(lrs), list(losses))
    assert s["method"] == "steepest"
    assert s["suggested"] == pytest.approx(1e-3)
    assert s["min_over_10"] == pytest.approx(0.1)


def test_suggest_flat_curve_gives_no_suggestion():
    # Falls from 2.30 to 2.28 (first minimum at index 4, lr 1e-2): 0.87% < 2%: no signal.
    s = suggest(DECADES, [2.30, 2.30, 2.29, 2.29, 2.28, 2.28, 2.29])
    assert s["suggested"] is None and s["method"] is None
    assert s["reason"] == "no reliable suggestion: the loss did not decrease; check data and labels"
    assert s["min_loss_lr"] == pytest.approx(1e-2)  # the curve's facts are still reported


def test_suggest_loss_that_only_rises_gives_no_suggestion():
    # Random labels: the loss never falls below its first value (minimum at index 0, drop 0%).
    # Before, this read as "curve too short" and suggested 1e-6 / 10 = 1e-7, "start lower".
    s = suggest(DECADES, [2.31, 2.32, 2.35, 2.40, 2.6, 3.5, 9.0])
    assert s["suggested"] is None and s["min_over_10"] == pytest.approx(1e-7)
    assert s["reason"] == "no reliable suggestion: the loss did not decrease; check data and labels"


def test_suggest_short_curve_falls_back_to_min_over_10():
    # Minimum at index 1 (lr 1e-2): only 2 points up to it (< 5) -> too short.
    # min_over_10 = 1e-2 / 10 = 1e-3; 'steepest' (lr 1e-3, the only point before the
    # minimum) is still reported but not recommended.
    s = suggest([1e-3, 1e-2, 1e-1, 1.0, 10.0], [1.0, 0.9, 1.5, 3.0, 5.0])
    assert s["method"] == "min_over_10"
    assert s["suggested"] == pytest.approx(1e-3)
    assert s["steepest"] == pytest.approx(1e-3)
    assert "short" in s["reason"]


def test_suggest_nothing_finite():
    s = suggest([1e-3, 1e-2], [None, math.nan])
    assert s["suggested"] is None and s["method"] is None and s["points"] == 0


def test_sweep_lr_and_smoothing():
    # 61 steps over 6 decades: step 30 is the geometric middle, 1e-3.
    assert sweep_lr(0, 61, 1e-6, 1.0) == pytest.approx(1e-6)
    assert sweep_lr(30, 61, 1e-6, 1.0) == pytest.approx(1e-3)
    assert sweep_lr(60, 61, 1e-6, 1.0) == pytest.approx(1.0)
    # Time constant max(1, steps/20): 100 -> 1 - 1/5, 1000 -> 1 - 1/50 (fastai's 0.98), 10 -> 0.
    assert smoothing_beta(100) == pytest.approx(0.8)
    assert smoothing_beta(1000) == pytest.approx(0.98)
    assert smoothing_beta(10) == 0.0
    # beta 0.5: avg 1.0 -> 1.0/(1-0.5) = 2; avg 0.5*1 + 0.5*4 = 2.5 -> 2.5/(1-0.25) = 10/3.
    sm = Smoother(0.5)
    assert sm.update(2.0) == pytest.approx(2.0)
    assert sm.update(4.0) == pytest.approx(10 / 3)


def test_sweep_settings_are_checked(store_home, capsys):
    with pytest.raises(lr_find.ConfigError, match="min_lr"):
        lr_find.run(RunConfig(model="mlp"), min_lr=0.0)
    assert cli_main(["lr-find", "--model", "mlp", "--start-lr", "1", "--end-lr", "0.1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: max_lr (--end-lr): 0.1")


def test_refuses_while_a_run_is_active(store):
    rid = store.create_run(RunConfig(model="mlp").to_json())  # queued
    with pytest.raises(lr_find.LRFindBusyError, match=f"run {rid} is queued"):
        lr_find.run(RunConfig(model="mlp"), steps=20)
    assert lr_find.load_latest() is None


@pytest.mark.worker
def test_real_sweep_via_cli_json(store_home, capsys):
    rc = cli_main(["lr-find", "--model", "mlp", "--device-type", "cpu", "--steps", "60", "--json"])
    out = capsys.readouterr().out.strip().splitlines()
    assert rc == 0
    res = json.loads(out[-1])
    lrs, sm = res["lr"], res["smoothed"]
    assert 10 <= len(lrs) <= 60 and len(res["loss"]) == len(lrs) == len(sm)
    assert lrs[0] == pytest.approx(1e-6) and all(b > a for a, b in zip(lrs, lrs[1:]))
    # Loss falls, then rises (Adam on digits diverges well below lr 1).
    finite = [v for v in sm if v is not None]
    i_min = int(np.argmin(finite))
    assert finite[i_min] < 0.8 * finite[0]
    assert max(finite[i_min:]) > 1.5 * finite[i_min]
    s = res["suggestion"]
    assert s["method"] in ("steepest", "min_over_10")
    assert 1e-6 < s["suggested"] < 1.0
    assert s["suggested"] < s["min_loss_lr"]
    assert res["config"]["model"] == "mlp" and res["steps"] == 60
    saved = lr_find.load_latest()
    assert saved["suggestion"] == s and saved["lr"] == lrs


@pytest.mark.worker
def test_real_sweep_on_random_labels_offers_no_max_lr(store_home, tmp_path, capsys):
    # Digits images with labels drawn at random: nothing to learn, so the loss never falls.
    from engine.data.datasets import digits

    x, _ = digits()
    y = np.random.default_rng(0).integers(0, 10, len(x))
    f = tmp_path / "random.npz"
    np.savez(f, x_train=x, y_train=y)
    rc = cli_main(["lr-find", "--dataset", str(f), "--model", "mlp", "--device-type", "cpu", "--steps", "60"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "no reliable suggestion: the loss did not decrease; check data and labels" in out.splitlines()
    assert "suggested max_lr" not in out
    assert lr_find.load_latest()["suggestion"]["suggested"] is None


@pytest.mark.worker
def test_a_stopped_sweep_ends_at_once_and_leaves_no_worker(store_home):
    """The autopilot's Stop (or Ctrl-C) during its LR range test: the worker, still
    importing TensorFlow at 1 s, is killed within a poll instead of running its sweep."""
    import threading

    import psutil

    stop = threading.Event()
    threading.Timer(1.0, stop.set).start()
    with pytest.raises(lr_find.LRFindError, match="^LR range test stopped$"):
        lr_find.run(RunConfig(dataset="digits", model="cnn"), stop=stop)
    workers = []
    for c in psutil.Process().children(recursive=True):  # another test's zombie child may be among them
        try:
            if "engine.lr_find.worker" in " ".join(c.cmdline()):
                workers.append(c)
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            pass  # ended: not a worker that runs
    assert not workers
    assert not (store_home / lr_find.LATEST_FILE).exists()  # nothing saved
