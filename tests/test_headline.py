"""engine.report.headline: one pair's time-to-accuracy wording, shared by the Train page,
presenter mode and Replay (hand-written compare() results and epoch rows)."""
from __future__ import annotations

from engine.report import headline

PAIR = {"target_accuracy": 0.95, "time_to_accuracy_speedup": 45.3 / 13.2,
        "baseline_time_to_accuracy_sec": 45.3, "time_to_accuracy_sec": 13.2,
        "baseline_time_to_accuracy_note": None, "time_to_accuracy_note": None}


def test_a_faster_pair_reads_its_ratio_and_both_times():
    h = headline.pair_headline(PAIR)
    assert h == {"label": "time to 0.95 val accuracy", "ratio": 45.3 / 13.2, "value": "3.43× faster",
                 "seconds": "45.3 s → 13.2 s", "notes": [], "missed": None, "machines": None}


def test_a_slower_pair_says_slower():
    h = headline.pair_headline({**PAIR, "time_to_accuracy_speedup": 10.0 / 12.5,
                                "baseline_time_to_accuracy_sec": 10.0, "time_to_accuracy_sec": 12.5})
    assert (h["value"], h["seconds"]) == ("1.25× slower", "10.0 s → 12.5 s")  # 12.5 s / 10.0 s: never "0.80× slower"


def test_no_ratio_names_the_side_that_missed_and_ignores_a_live_miss():
    cmp = {**PAIR, "time_to_accuracy_speedup": None, "time_to_accuracy_sec": None,
           "time_to_accuracy_note": "not reached in 3 epochs"}
    h = headline.pair_headline(cmp)
    assert (h["value"], h["seconds"], h["missed"]) == ("—", None, "run")
    assert h["notes"] == ["run: not reached in 3 epochs"]
    both = headline.pair_headline({**cmp, "baseline_time_to_accuracy_note": "not reached in 2 epochs"})
    assert both["notes"] == ["baseline: not reached in 2 epochs", "run: not reached in 3 epochs"]
    assert both["missed"] == "run"  # the run's miss is named first
    live = headline.pair_headline({**cmp, "time_to_accuracy_note": "not reached yet (2 epochs so far)"})
    assert live["missed"] is None and live["notes"] == ["run: not reached yet (2 epochs so far)"]
    assert headline.pair_headline({**PAIR, "target_accuracy": None, "time_to_accuracy_speedup": None})["label"] \
        == "time to accuracy"


def test_own_baseline_shows_its_own_time_to_target():
    run = {"status": "completed", "config": {"dataset": "digits", "target_accuracy": 0.9}, "summary": {}}
    epochs = [{"epoch": 1, "t": 4.0, "val_accuracy": 0.85}, {"epoch": 2, "t": 7.5, "val_accuracy": 0.91}]
    assert headline.own_time(run, epochs) == {"target": 0.9, "seconds": 7.5, "label": "Time to 0.9 val accuracy",
                                              "value": "7.50 s", "note": ""}
    missed = headline.own_time(run, epochs[:1])
    assert (missed["seconds"], missed["value"], missed["note"]) == (None, "—", "Not reached in 1 epoch. ")


def test_ratio_text():
    assert (headline.ratio_text(2.966, headline.PAGE_SIGN), headline.ratio_text(None)) == ("2.97×", "—")


def test_a_script_run_without_baseline_is_told_to_compare_scripts_with_engine_pairs():
    from views.components.headline import PAIRS_ADVICE, no_baseline_caption

    script = {"id": 3, "role": "run", "group_id": None, "plan": {"source": "callback", "script": "train.py"}}
    assert no_baseline_caption(script) == PAIRS_ADVICE and "python -m engine pairs" in PAIRS_ADVICE
    assert "Compare with baseline" not in PAIRS_ADVICE
    plain = {"id": 4, "role": "run", "group_id": None, "plan": {}}
    assert no_baseline_caption(plain).startswith("No baseline for this run: turn on **Compare with baseline**")
    assert no_baseline_caption({**plain, "group_id": "tune-0a1b2c3d"}).startswith("A run of the tune-baseline sweep")


def test_a_stopped_run_that_missed_the_target_says_stopped():
    """Issue 57 item 8: after Stop, 'baseline: not reached in 25 epochs' read as if it had
    trained all its epochs and missed."""
    from engine.report.target import not_reached

    epochs = [{"epoch": e, "t": 2.0 * (e + 1), "val_accuracy": 0.5 + 0.01 * e} for e in range(25)]
    assert not_reached({"status": "cancelled"}, epochs, 0.95) == "not reached: stopped after 25 epochs"
    assert not_reached({"status": "completed"}, epochs, 0.95) == "not reached in 25 epochs"
    assert not_reached({"status": "cancelled"}, [], 0.95) == "not reached: stopped before its first validation"
    assert not_reached({"status": "failed"}, [], 0.95) == "not reached: failed before its first validation"
    assert not_reached({"status": "cancelled"}, epochs, 0.5) is None           # reached at epoch 1


def test_a_test_accuracy_lower_end_at_the_margin_shows_which_side_it_is_on():
    """'(−0.5 to +6.4) ... not held (needs the lower end above −0.5)' read as a contradiction (an
    autopilot's confirmation, 2026-12-06): a lower end that rounds to the margin gets two decimals."""
    text = headline.test_accuracy_text
    assert text({"mean": 0.03, "ci95": [-0.0052, 0.064], "pairs": 3}) == (
        "test accuracy +3.0 points (−0.52 to +6.40) vs the baseline, 3 pairs: not held (needs the lower end above −0.5)")
    assert text({"mean": 0.03, "ci95": [-0.0048, 0.064], "pairs": 3}).endswith("(−0.48 to +6.40) vs the baseline, "
                                                                               "3 pairs: held")
    assert "(−0.8 to +0.2)" in text({"mean": -0.003, "ci95": [-0.008, 0.002], "pairs": 5})  # clear of it: one decimal
    # One pair: a gain read "not held" in red in presenter mode; there is no interval to hold yet.
    assert text({"mean": 0.004, "ci95": None, "pairs": 1}) == (
        "test accuracy +0.4 points vs the baseline, 1 pair: no interval yet (it needs 3 pairs)")
