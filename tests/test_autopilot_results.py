"""benchmarks/autopilot_results.py: the dated Markdown record of an autopilot invocation (no TF, no runs)."""
import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import autopilot_results as ar  # noqa: E402


def state(baseline, winner, ablated):
    """A finished autopilot's state and its stored comparisons: the rounds planted in the store at
    $SPEEDLAB_HOME (tests.helpers.autopilot.plant_confirmation), the winner without bfloat16 taking
    `ablated` s."""
    from engine.autopilot import confirm
    from engine.store import Store
    from tests.helpers.autopilot import plant_confirmation

    with Store() as store:
        conf = plant_confirmation(store, "autopilot-x", {"baseline": baseline, "winner": winner,
                                                        "without bfloat16": ablated},
                                  ablations={"without bfloat16": {"technique": "precision"}})
        comps = confirm.stored(store, conf)
    return {"id": "autopilot-x", "dataset": "mnist5k", "model": "cnn", "target_accuracy": 0.965,
            "budget_sec": 900.0, "search_wall_sec": 890.0, "seed": 0, "trials": [], "notes": [],
            "winner": {"trial": 2, "run_id": 2, "label": "bfloat16 · one_cycle", "changes": {"precision": "mixed_bfloat16"}},
            "confirm": conf, "ablation": [{"technique": "precision", "label": "bfloat16", "note": None}]}, comps


def test_render_states_the_confirmed_speedup_its_interval_the_goal_and_the_ablation(store_home):
    # Pairs 30/10, 33/11, 27/10: ratios 3.0, 3.0, 2.7; logs' mean 1.063492 (x 2.8965), sd 0.060830,
    # sem 0.035120, half 4.302653 * 0.035120 = 0.151109: [2.4903, 3.3690]. Without bfloat16 14, 15.4,
    # 14 s: 1.4x the winner's every round, a zero-width interval above 1: it helps.
    st, comps = state([30.0, 33.0, 27.0], [10.0, 11.0, 10.0], [14.0, 15.4, 14.0])
    md = ar.render(st, "python -m engine autopilot --dataset mnist5k",
                   ["07:39:50 1.24 1.11 2.87", "07:50:00 9.0 8.0 5.0", "08:00:00 4.0 5.0 5.0"], wall_s=1200.0,
                   with_store=False, comps=comps)
    assert "python -m engine autopilot --dataset mnist5k" in md
    assert "at start 07:39:50 1.24 1.11 2.87; middle 07:50:00 9.0 8.0 5.0; end 08:00:00 4.0 5.0 5.0" in md
    assert "| 2 | WB | 2 | 33.00 s | 11.00 s | 3.00x |" in md   # the second pair ran winner first
    cid = st["confirm"]["comparisons"]
    assert (f"**confirmed speedup: 2.90x faster (+149% to +237%), 3 pairs vs Keras-default Adam 1e-3** "
            f"(comparison #{cid['confirmation']}: ") in md
    assert "goal (2.5x, interval's lower end >= 2.0x): met: 2.90x with the lower end at 2.49x" in md
    assert f"| bfloat16 | #{cid['ablation']['precision']} | 14.00 s | 1.40x | [1.40–1.40] | it helps |" in md
    assert "wall time of the whole invocation: 1200 s (20.0 min)" in md


def test_goal_not_met_and_the_file_is_appended_to(tmp_path, store_home):
    from engine.autopilot import confirm
    from engine.store import Store
    from tests.helpers.autopilot import plant_confirmation

    def goal(baseline, winner):
        with Store() as store:
            conf = plant_confirmation(store, f"autopilot-{len(baseline)}", {"baseline": baseline, "winner": winner})
            return ar.goal_line(ar.paired(confirm.stored(store, conf)["confirmation"]))

    assert goal([30.0, 20.0, 25.0], [10.0, 10.0, 12.0]).startswith("goal (2.5x, interval's lower end >= 2.0x): not met: ")
    assert goal([30.0], [10.0]) == "goal not checked: no interval (fewer than 2 complete pairs)"
    path = tmp_path / "r.md"
    ar.write("one\n", path, "Autopilot on mnist5k")
    ar.write("two\n", path, "Autopilot on mnist5k")
    from engine.hardware.fingerprint import fingerprint

    m = f"Machine: {fingerprint()['name']} · fingerprint {fingerprint()['id']}"  # each section's machine
    assert path.read_text() == f"# Autopilot on mnist5k\n\n{m}\n\none\n\n{m}\n\ntwo\n\n"
    assert ar.default_path("mnist5k", ar.dt.datetime(2026, 12, 3)).name == "2026-12-03-autopilot-mnist5k.md"


def test_floor_lines_take_parts_of_the_winners_time_away():
    # Confirmed 2.5x, winner 12 s = 3 warm-up + 8 training + 1 validation, MFU 40%: 2.5 x 12/9, x 12/8,
    # x 12/(3 + 1 + 8 x 0.4), x 12/(8 x 0.4).
    # At the best matmul (the steps reach 60% of it): 2.5 x 12/(3 + 1 + 8 x 0.6).
    lines = ar.floor_lines(2.5, 12.0, {"warmup_sec": 3.0, "validation_sec": 1.0, "train_sec": 8.0, "mfu": 0.4,
                                       "mfu_of_best_matmul": 0.6})
    assert lines[-6:] == ["| as measured | 12.00 | 2.50x |", "| without the winner's warm-up | 9.00 | 3.33x |",
                          "| without its warm-up and validation | 8.00 | 3.75x |",
                          "| its training at the best matmul measured here, warm-up and validation kept | 8.80 | 3.41x |",
                          "| its training at the theoretical peak (MFU 100%), warm-up and validation kept | 7.20 | 4.17x |",
                          "| only its training, at the theoretical peak | 3.20 | 9.38x |"]
    assert ar.floor_lines(2.5, None, {}) == []
