"""The Autopilot page under streamlit.testing.v1.AppTest, from written state
files (no search runs here): the empty page, a finished search (trials chart,
confirmed speedup, ablation chart, 'Use this configuration'), a running one
(progress, Stop, the Train page refusing to launch), and a bad setting."""
from __future__ import annotations

import pytest
import os
import time

import psutil

from engine.config import RunConfig
from engine.hardware.fingerprint import short
from engine.jobs import background
from engine.autopilot import search as autopilot
from engine.autopilot import space as sp
from tests.helpers.pages import app, no_errors, plotly_specs, texts, values


PAGE = "views/autopilot.py"
BASE = RunConfig(dataset="digits", model="cnn", batch_size=128, epochs=20, target_accuracy=0.95,
                 stop_at_target=True)
WINNER = sp.trial_config(BASE, {"precision": "mixed_bfloat16", "steps_per_execution": 8, "batch_size": 256,
                                "schedule": "one_cycle", "cycle_epochs": 10, "label_smoothing": 0.1,
                                "jit_compile": False, "devices": 1}, max_lr=0.005)


def trial(n, kind, ttt=None, elapsed=None, best=None, run_id=None):
    return {"trial": n, "run_id": run_id or n, "label": f"config {n}", "kind": kind, "reason": f"{kind} {n}",
            "time_to_target_sec": ttt, "elapsed_sec": elapsed if elapsed is not None else ttt,
            "best_so_far_sec": best, "planted": False, "params": {}, "changes": {}}


TRIALS = [trial(1, "reached", 3.0, best=3.0), trial(2, "pruned", None, 3.4, best=3.0),
          trial(3, "reached", 2.5, best=2.5), trial(4, "share", None, 15.2, best=2.5)]


def done_state() -> dict:
    conf = {"repeats": 3, "seeds": [1, 2, 3], "runs": [], "times": {"baseline": [4.0, 5.0, 6.0],
                                                                    "winner": [2.0, 2.0, 4.0]},
            "speedup": autopilot.paired_speedup([4.0, 5.0, 6.0], [2.0, 2.0, 4.0]), "extra": {}}
    ablation = [{"technique": "precision", "label": "bfloat16", "run_id": 20, "time_to_target_sec": 2.8,
                 "factor": 1.4, "note": None},
                {"technique": "schedule", "label": "one_cycle (max LR 0.005, 10 epochs)", "run_id": 21,
                 "time_to_target_sec": None, "factor": None, "note": "not reached in 20 epochs"}]
    return {"state": "done", "pid": None, "started": time.time() - 400, "finished": time.time() - 5,
            "phase": "done", "id": "autopilot-abc123", "target_accuracy": 0.95, "budget_sec": 300.0,
            "baseline_label": "Keras-default Adam 1e-3", "fingerprint": short(),  # measured on this machine
            "trials": TRIALS, "best": {**TRIALS[2], "config": WINNER.to_dict()}, "current": None,
            "notes": ["search ended with 4 s of the budget left"], "confirm": conf, "ablation": ablation,
            "explanation": autopilot.explanation(ablation, autopilot.rerun_spread(conf["times"]["winner"])),
            "ablation_spread": list(autopilot.rerun_spread(conf["times"]["winner"])),
            "runoff": {"finalists": [3, 1], "seeds": [4, 5], "choice": 3, "mean_sec": 2.6, "missed": 0,
                       "runs": [{"trial": 3, "run_ids": [5, 7], "label": "config 3", "time_to_target_sec": 2.5,
                                 "rerun_secs": [2.7, 2.6], "reasons": ["reached 0.95 in 2.70 s of training"] * 2},
                                {"trial": 1, "run_ids": [6, 8], "label": "config 1", "time_to_target_sec": 3.0,
                                 "rerun_secs": [2.1, None], "reasons": ["reached 0.95", "not reached"]}]},
            # Trial 3 is the winner; trial 2 tried Muon and was pruned.
            "tried": sp.techniques_tried([{**TRIALS[1], "config": BASE.replace(optimizer="muon").to_dict()},
                                          {**TRIALS[2], "config": WINNER.to_dict()}], BASE),
            "winner": {"trial": 3, "run_id": 3, "label": sp.describe(WINNER, BASE), "config": WINNER.to_dict(),
                       "changes": {}, "search_time_to_target_sec": 2.5, "runoff_secs": [2.7, 2.6], "runoff_missed": 0,
                       "runoff_mean_sec": 2.6}}


@pytest.mark.page
def test_empty_page_explains_and_can_start(store_home):
    at = app(PAGE)
    no_errors(at)
    assert "No search yet" in texts(at.info)
    start = at.button(key="ap_start")
    assert start.label == "Start autopilot" and not start.disabled


@pytest.mark.page
def test_slower_winner_is_said_and_not_pushed(store_home):
    state = done_state()
    state["confirm"]["speedup"] = autopilot.paired_speedup([2.0, 2.0, 2.0], [3.0, 3.1, 2.9])
    background.write_json(autopilot.progress_path(), state)
    at = app(PAGE)
    no_errors(at)
    # Logs of 2/3, 2/3.1, 2/2.9: mean -0.405095 (0.6669x), sd 0.033347, half 4.302653 x 0.033347 / sqrt(3)
    # = 0.082839: [0.6139, 0.7245], i.e. -39% to -28%: one central value, its interval and verdict.
    metric = {m.label: m for m in at.metric}["Time to 0.95: vs Keras-default Adam 1e-3"]
    assert metric.value == "0.67×" and metric.proto.delta == "−39% to −28% · slower"
    assert metric.proto.direction == metric.proto.MetricDirection.Value("NONE")  # a range: no up arrow beside a loss
    assert ("Re-run, the winner was slower than the baseline (1.50× as long): its time in the search did not "
            "hold up. Keep the baseline's settings, or search longer.") in texts(at.warning)
    assert at.button(key="ap_use_btn").proto.type == "secondary"


@pytest.mark.page
def test_use_this_configuration_waits_for_the_end(store_home):
    me = psutil.Process()  # a live process stands in for the autopilot's, now in its ablation
    background.write_json(autopilot.progress_path(), {
        **done_state(), "state": "running", "phase": "ablation", "pid": os.getpid(),
        "pid_started": me.create_time(), "current": {"phase": "ablation", "run_id": 20, "label": "bfloat16"}})
    at = app(PAGE)
    no_errors(at)
    assert at.button(key="ap_use_btn").disabled
    background.write_json(autopilot.progress_path(), {"state": "done", "pid": None, "started": 1.0})


@pytest.mark.page
def test_out_of_range_entries_get_one_line_not_the_old_value(store_home):
    """Streamlit keeps the previous value of an entry outside a widget's min/max without
    a word; the form has none, so the engine's check names the field and Start waits."""
    at = app(PAGE)
    at.number_input(key="ap_target_digits").set_value(1.5).run()
    no_errors(at)
    assert at.button(key="ap_start").disabled
    assert "target_accuracy: 1.5 is out of range; use a value in (0.0, 1.0]" in texts(at.error)
    at.number_input(key="ap_target_digits").set_value(0.999)
    at.number_input(key="ap_seed").set_value(-1).run()
    assert at.button(key="ap_start").disabled and "seed: -1 is out of range" in texts(at.error)
    at.number_input(key="ap_seed").set_value(2 ** 31 - 1).run()  # the re-runs use the seeds after it
    assert at.button(key="ap_start").disabled and "the re-runs use the 3 seeds after it" in texts(at.error)
    at.number_input(key="ap_seed").set_value(0).run()
    assert not at.button(key="ap_start").disabled and not at.error


@pytest.mark.page
def test_bad_budget_disables_start_with_one_line(store_home):
    at = app(PAGE)
    at.number_input(key="ap_budget").set_value(30)  # the smallest budget is fine ...
    at.number_input(key="ap_epochs").set_value(1).run()
    no_errors(at)
    assert not at.button(key="ap_start").disabled
    at.number_input(key="ap_batch").set_value(5000).run()  # ... a batch above digits' 1,437 samples is not
    assert at.button(key="ap_start").disabled
    assert "batch_size: 5000 is larger than the 1437 training samples of digits" in texts(at.error)


@pytest.mark.page
def test_finished_search_shows_trials_speedup_and_what_each_technique_bought(store_home):
    background.write_json(autopilot.progress_path(), done_state())
    at = app(PAGE)
    no_errors(at)
    specs = plotly_specs(at)
    by = {t["name"]: t for t in specs["ap_trials"]["data"]}
    assert values(by["reached the target"]["x"]) == [1, 3] and values(by["reached the target"]["y"]) == [3.0, 2.5]
    assert values(by["pruned: passed the best time"]["y"]) == [3.4]      # drawn at the training time it used
    assert values(by["best so far"]["y"]) == [3.0, 3.0, 2.5, 2.5] and by["best so far"]["line"]["shape"] == "hv"
    bars = specs["ap_ablation"]["data"][0]
    assert list(bars["y"]) == ["one_cycle (max LR 0.005, 10 epochs)", "bfloat16"]
    assert list(specs["ap_ablation"]["layout"]["yaxis"]["ticktext"]) == [
        "one_cycle (max LR 0.005, 10 epochs)<br>not reached in 20 epochs", "bfloat16 · 1.40x (within noise)"]
    assert bars["marker"]["color"][1] == "#9CA3AF"  # inside the winner's own spread: grey, no direction
    # The winner's re-runs (2, 2, 4 s) span 1.0-2.0x of their median: shaded, and 1.40x said to be inside it.
    [band] = [s for s in specs["ap_ablation"]["layout"]["shapes"] if s["type"] == "rect"]
    assert (band["x0"], band["x1"]) == (1.0, 2.0)
    assert ("bfloat16 1.40x (within noise), one_cycle (max LR 0.005, 10 epochs) (needed: not reached in 20 epochs "
            "without it); the winner's own re-runs ranged 1.00-2.00x of the time compared with, so a factor inside that "
            "range is within noise. Shaded: the winner's own re-run spread. One run each") in texts(at.caption)
    # Stopped trials are drawn at the time they used: the axis title says so.
    assert specs["ap_trials"]["layout"]["yaxis"]["title"]["text"] == "time to target or to stop (s)"
    metric = {m.label: m for m in at.metric}["Time to 0.95: vs Keras-default Adam 1e-3"]
    # One central value: the geometric mean of 4/2, 5/2, 6/4 (2.0, 2.5, 1.5) = 1.957, not their median.
    assert metric.value == "1.96×" and metric.proto.delta == "+4% to +270% · faster"
    assert "Medians: winner 2.00 s, baseline 5.00 s (3 re-run pairs, each round on its own seed)." in texts(at.caption)
    assert "4 trials in the 300 s search, then the runoff, the re-runs and the ablation." in texts(at.markdown)
    assert not at.button(key="ap_use_btn").disabled and not at.warning
    assert at.button(key="ap_use_btn").proto.type == "primary"  # a confirmed 'faster'
    assert ("Trial 3 (run #3): 2.50 s to 0.95 in the search; re-run on 2 other seeds: 2.70 s, 2.60 s (of the 2 "
            "fastest trials, it reached the target on the most seeds, then had the lowest mean time).") in texts(at.caption)
    table = at.dataframe[0]
    assert len(table.value) == 4 and list(table.value["time to target (s)"].isna()) == [False, True, False, True]
    # A missing time shows blank in the browser, not "None" (an unset placeholder shows "None").
    assert table.proto.HasField("placeholder") and table.proto.placeholder == ""
    tried = at.dataframe[1].value  # the expander's table, below the trials
    assert list(tried["technique"][:6]) == ["precision", "steps per execution", "batch", "schedule",
                                            "label smoothing", "optimizer"]
    row = tried[tried["technique"] == "optimizer"].iloc[0]
    assert (row["trials"], row["reached"], row["settings (trials)"]) == (1, 0, "Muon (conv filters reshaped to 2-D) (1)")
    assert tried[tried["technique"] == "precision"].iloc[0]["best time to target (s)"] == 2.5
    assert tried[tried["technique"] == "cutmix"].iloc[0]["trials"] == 0     # untried: listed, last


@pytest.mark.page
def test_use_this_configuration_fills_the_train_page(store_home):
    background.write_json(autopilot.progress_path(), done_state())
    at = app(PAGE)
    at.button(key="ap_use_btn").click().run()
    no_errors(at)
    assert "SpeedLab · Train" in at.markdown[0].value
    assert at.selectbox(key="precision").value == "mixed_bfloat16"
    assert at.number_input(key="steps_per_execution").value == 6  # 8, capped at the 6 steps of an epoch
    assert at.number_input(key="batch_size").value == 256
    assert at.selectbox(key="schedule").value == "one_cycle"
    assert at.number_input(key="max_lr").value == 0.005
    assert at.toggle(key="scale_lr").value is True
    assert at.number_input(key="label_smoothing").value == 0.1
    assert at.number_input(key="epochs").value == 10
    assert at.query_params["batch_size"] == "256"


# A winner in every field the search changes that the old hand-kept list lacked (issue 58).
JAX_WINNER = BASE.replace(model="resnet", backend="jax", jit_compile=True, ema_momentum=0.9, tta="translate", cutmix_factor=0.5,
                          gradient_accumulation_steps=2, progressive_epochs=0,
                          optimizer="muon", muon_conv="reshape", precision="mixed_bfloat16", epochs=12)


@pytest.mark.page
def test_a_jax_ema_tta_winner_reaches_the_train_page_whole_and_resets_the_rest(store_home):
    state = done_state()
    state["winner"] = {**state["winner"], "config": JAX_WINNER.to_dict()}
    background.write_json(autopilot.progress_path(), state)
    at = app("views/train/train.py")  # a session that set other things by hand first
    at.number_input(key="mixup_alpha").set_value(0.4)
    at.number_input(key="batch_size").set_value(64).run()
    at.switch_page(PAGE)
    at.run()
    at.button(key="ap_use_btn").click().run()
    no_errors(at)
    assert "SpeedLab · Train" in at.markdown[0].value
    got = {w.key: w.value for w in [*at.selectbox, *at.number_input, *at.toggle] if w.key}
    for field in ("backend", "jit_compile", "ema_momentum", "tta", "cutmix_factor", "gradient_accumulation_steps",
                  "progressive_epochs", "optimizer", "muon_conv", "precision", "epochs",
                  "target_accuracy", "stop_at_target"):
        if field in got:
            assert got[field] == getattr(JAX_WINNER, field), field
    assert {k: got.get(k) for k in ("backend", "ema_momentum", "tta", "optimizer")} == {
        "backend": "jax", "ema_momentum": 0.9, "tta": "translate", "optimizer": "muon"}
    # What the winner did not change goes back to the default, not to the session's hand-set values.
    assert got["mixup_alpha"] == 0.0 and got["batch_size"] == 128
    assert at.query_params["backend"] == "jax" and at.query_params["tta"] == "translate"


@pytest.mark.page
def test_running_search_shows_progress_and_blocks_other_measurements(store_home):
    me = psutil.Process()  # a live process stands in for the autopilot's
    background.write_json(autopilot.progress_path(), {
        **done_state(), "state": "running", "phase": "search", "pid": os.getpid(),
        "pid_started": me.create_time(), "started": time.time() - 100, "winner": None, "confirm": None,
        "ablation": None, "current": {"phase": "search", "trial": 5, "run_id": 5, "label": "config 5",
                                      "elapsed_sec": 1.5, "best_sec": 2.5, "limit_sec": 75.0}})
    at = app(PAGE)
    no_errors(at)
    bar = at.get("progress")[0].proto
    assert "Searching: 4 trials done, trial 5 at 1.5 s of training" in bar.text
    assert "best so far 2.50 s (trial 3)" in bar.text
    assert at.button(key="ap_start").disabled and at.button(key="ap_stop")
    job = background.read_json(autopilot.progress_path())
    background.write_json(autopilot.progress_path(), {**job, "current": {**job["current"], "elapsed_sec": 0.0}})
    at = app(PAGE)  # nothing stored yet: its worker is starting, not training at 0.0 s
    assert "Searching: 4 trials done, trial 5 starting its worker · " in at.get("progress")[0].proto.text
    assert "ap_race" in plotly_specs(at)
    at.switch_page("views/train/train.py")
    at.run()
    assert "its runs show on the **Autopilot** page, and Launch waits until it ends" in texts(at.info)
    at.button(key="launch").click().run()
    assert "Not launched: the autopilot is searching" in texts(at.warning)
    talk = app()
    talk.query_params["mode"] = "talk"
    talk.run()
    assert "its runs show on the **Autopilot** page, and Launch waits until it ends" in texts(talk.info)
    background.write_json(autopilot.progress_path(), {"state": "done", "pid": None, "started": 1.0})


@pytest.mark.page
def test_train_page_leaves_the_autopilots_runs_to_the_autopilot_page(store):
    """The Train page shows the newest group launched here (or from `engine run`),
    never an autopilot trial's, even when the trial is newer; Stop is the own run's."""
    from tests.helpers.pages import fake_run

    trial = fake_run(store, WINNER.replace(steps_per_execution=2), role="trial", group="autopilot-abc123-t1", ttt=2.5)
    at = app()
    no_errors(at)
    assert "(The autopilot's runs, 1 so far, are on the **Autopilot** and **Runs** pages.)" in texts(at.info)
    assert f"#{trial} " not in " ".join(texts(at.markdown))
    own = fake_run(store, WINNER, role="run", group="g-own", ttt=3.0)
    later = fake_run(store, WINNER.replace(steps_per_execution=4), role="trial", group="autopilot-abc123-t2", ttt=2.0)
    at = app()
    no_errors(at)
    shown = texts(at.markdown)
    assert f"**#{own} mixed bf16 · spe 6 · one_cycle**: completed" in shown
    assert f"#{later} " not in shown and f"#{trial} " not in shown


def tuned_state() -> dict:
    """done_state() with the tuned baseline confirmed beside it: tuned 6, 4, 8 s against the
    winner's 2, 2, 4 s (ratios 3, 2, 2: 2.29x), split and test accuracy as paired_from_store gives them."""
    state = done_state()
    ws = {**autopilot.paired_speedup([6.0, 4.0, 8.0], [2.0, 2.0, 4.0],
                                     delta={"mean": -0.002, "ci95": [-0.011, 0.007], "pairs": 3}),
          "factors": {"throughput": {"speedup": 1.9}, "sample_efficiency": {"speedup": 1.3},
                      "outside_training": {"speedup": 0.93, "baseline_sec": 1.02, "run_sec": 0.95}}}
    state["confirm"]["extra"] = {"tuned baseline": {"winner_speedup": ws, "speedup_vs_baseline":
                                                    autopilot.paired_speedup([4.0, 5.0, 6.0], [6.0, 4.0, 8.0])}}
    return {**state, "tuned_label": "tuned Adam 0.0049"}


TUNED_LINES = ["2.29x = 1.90x throughput × 1.30x fewer samples × 0.93x fixed costs "
               "(1.0 s → 0.9 s outside steady training)",
               "reached the target on 3 of 3 seeds (baseline 3 of 3)",
               "test accuracy −0.2 points (−1.1 to +0.7) vs {}, 3 pairs: not held (needs the lower end above −0.5)"]


@pytest.mark.unit
def test_the_winner_against_the_tuned_baseline_is_split_with_seeds_and_test_accuracy_in_the_cli():
    from engine.cli.autopilot import summary_lines

    lines = summary_lines(tuned_state())
    at = [i for i, line in enumerate(lines) if line.startswith("winner vs tuned Adam 0.0049: ")]
    # −1.1 at the interval's lower end: the accuracy did not hold, so not plain 'faster'.
    assert len(at) == 1 and lines[at[0]].startswith("winner vs tuned Adam 0.0049: 2.29x faster, accuracy not held")
    assert lines[at[0] + 1:at[0] + 4] == [f"  {line}".format("tuned Adam 0.0049") for line in TUNED_LINES]


@pytest.mark.page
def test_the_winner_against_the_tuned_baseline_is_split_with_seeds_and_test_accuracy_on_the_page(store_home):
    background.write_json(autopilot.progress_path(), tuned_state())
    at = app(PAGE)
    no_errors(at)
    captions = texts(at.caption).splitlines()
    at_line = [i for i, c in enumerate(captions) if c.startswith("Against the tuned Adam 0.0049: 2.29x faster")]
    want = [line.format("the tuned Adam 0.0049") for line in TUNED_LINES]
    assert len(at_line) == 1 and captions[at_line[0] + 1:at_line[0] + 4] == want


@pytest.mark.unit
def test_cli_summary_names_the_runoff_and_the_winner():
    from engine.cli.autopilot import summary_lines

    lines = summary_lines(done_state())
    assert lines[0] == "search: 4 trials"
    assert lines[1].startswith("tried (trials using each technique over the baseline): precision in 1 (bfloat16 1), "
                               "1 reached, best 2.5 s; ")
    assert "; optimizer in 1 (Muon (conv filters reshaped to 2-D) 1), 0 reached; in no trial: backend, " in lines[1]
    lines = [lines[0], *lines[2:]]
    assert lines[1] == ("runoff (the fastest trials re-run on seeds 4, 5; the one that reached the target on the "
                        "most seeds, then with the lowest mean time, wins): "
                        "trial 3 2.50 s + 2.70 s, 2.60 s; trial 1 3.00 s + 2.10 s, missed")
    assert lines[2].startswith("winner: trial 3 (run #3): bfloat16") and lines[2].endswith("2.50 s to 0.95 in the search")
    # Ctrl-C during the search: a trial had reached the target (it read "no trial reached 0.95").
    stopped = {**done_state(), "phase": "stopped", "winner": None, "runoff": None, "confirm": None, "tried": None,
               "ablation": None, "explanation": None}
    assert summary_lines(stopped)[1] == ("no winner chosen (stopped); the fastest trial so far: trial 3 (run #3): "
                                         "config 3; 2.50 s to 0.95")
    assert summary_lines({**stopped, "best": None})[1] == "no trial reached 0.95"


@pytest.mark.page
def test_later_phases_name_the_phase_the_run_and_the_winner(store_home):
    me = psutil.Process()
    running = {**done_state(), "state": "running", "pid": os.getpid(), "pid_started": me.create_time(),
               "started": time.time() - 100}
    background.write_json(autopilot.progress_path(), {
        **running, "phase": "runoff", "winner": None, "confirm": None, "ablation": None,
        "current": {"phase": "runoff", "trial": 1, "run_id": 6, "label": "config 1"}})
    at = app(PAGE)
    no_errors(at)
    line = texts(at.markdown)
    assert "**Re-running the fastest trials on new seeds** · trial 1: config 1 · run #6" in line
    assert "best so far 2.50 s (trial 3)" in line  # the search's best, while the runoff decides
    background.write_json(autopilot.progress_path(), {
        **running, "phase": "confirm", "ablation": None,
        "current": {"phase": "confirm", "round": 2, "name": "baseline", "run_id": 8, "label": "baseline"}})
    at = app(PAGE)
    no_errors(at)
    line = texts(at.markdown)
    assert "**Re-running the winner and the baseline** · round 2: baseline · run #8" in line
    assert "winner: trial 3" in line and "best so far" not in line


@pytest.mark.unit
def test_a_trial_stopped_before_it_trained_is_not_drawn_at_0_s():
    from engine.autopilot.charts import trials_frame

    df = trials_frame([trial(1, "reached", 3.0, best=3.0), trial(2, "budget", None, 0.0, best=3.0),
                       trial(3, "pruned", None, 3.4, best=3.0)])
    assert df["y"].isna().tolist() == [False, True, False] and df["y"].tolist()[::2] == [3.0, 3.4]


@pytest.mark.page
def test_the_form_shows_the_last_searchs_settings(store_home):
    """Back on the page (or after a reload) the form shows what the search on it ran
    with, not the defaults beside a result they did not produce."""
    background.write_json(autopilot.progress_path(), {
        **done_state(), "budget_sec": 60.0, "repeats": 1, "seed": 7, "explain": False, "target_accuracy": 0.97,
        "base_config": BASE.replace(batch_size=256, epochs=10).to_dict()})
    at = app(PAGE)
    no_errors(at)
    got = {k: at.number_input(key=k).value for k in ("ap_budget", "ap_repeats", "ap_batch", "ap_epochs", "ap_seed",
                                                     "ap_target_digits")}
    assert got == {"ap_budget": 60, "ap_repeats": 1, "ap_batch": 256, "ap_epochs": 10, "ap_seed": 7,
                   "ap_target_digits": 0.97}
    assert at.toggle(key="ap_explain").value is False


@pytest.mark.unit
def test_the_ablation_chart_draws_each_factors_interval():
    from engine.autopilot import charts as charts_mod
    from engine.autopilot.charts import ablation_figure
    from engine.charts import style as chart_style

    ab = autopilot.ablation_intervals(
        [{"label": "bfloat16", "run_id": 20, "factor": 1.4}, {"label": "one_cycle", "run_id": 21, "factor": 0.8},
         {"label": "label smoothing 0.1", "run_id": None, "factor": None, "note": "not reached in 20 epochs"}],
        [2.0, 2.1, 1.9, 2.05, 1.95])
    bar = ablation_figure(ab).data[0]
    # Sorted by factor: the unreached one (0), one_cycle 0.8 [0.7168, 0.8929], bfloat16 1.4 [1.2544, 1.5625].
    assert list(bar.y) == ["label smoothing 0.1", "one_cycle", "bfloat16"]
    assert list(bar.error_x.arrayminus) == pytest.approx([0.0, 0.8 - 0.71678, 1.4 - 1.25437], abs=1e-4)
    assert list(bar.error_x.array) == pytest.approx([0.0, 0.89288 - 0.8, 1.56254 - 1.4], abs=1e-4)
    # Issue 57: each value beside its name on the axis, none on the bar where the error bar and the
    # 1x line ran through it.
    fig = ablation_figure(ab)
    assert bar.textposition == "none"
    assert list(fig.layout.yaxis.ticktext) == ["label smoothing 0.1<br>not reached in 20 epochs",
                                               "one_cycle · 0.80x", "bfloat16 · 1.40x"]
    assert ablation_figure([{"label": "bfloat16", "run_id": 20, "factor": 1.4}]).data[0].error_x.array is None
    # Coloured by direction only where the interval excludes 1: 1.05x [0.9408, 1.1719] is grey.
    ab = autopilot.ablation_intervals([{"label": "ema", "run_id": 22, "factor": 1.05},
                                       {"label": "bfloat16", "run_id": 20, "factor": 1.4}], [2.0, 2.1, 1.9, 2.05, 1.95])
    fig = ablation_figure(ab)
    assert list(fig.data[0].marker.color) == [charts_mod.NEUTRAL_COLOR, chart_style.PALETTE[0]]
    assert list(fig.layout.yaxis.ticktext) == ["ema · 1.05x (within noise)", "bfloat16 · 1.40x"]


@pytest.mark.page
def test_the_form_says_what_the_re_runs_add_and_the_rounds_count_down(store_home):
    from engine.store import Store

    at = app(PAGE)
    no_errors(at)
    assert ("After it: the runoff (the 3 fastest trials on 4 new seeds, 12 runs), then 3 rounds of the baseline, the winner and the winner without each "
            "of its techniques; how long they take here is known once this machine has run a baseline of "
            "digits/cnn." in texts(at.caption))
    with Store() as s:  # a baseline run: 30 s from start to end, 20 s of it to the target
        rid = s.create_run(BASE.to_json(), role="baseline", status="completed")
        s.update_run(rid, started=100.0, ended=130.0, summary={"time_to_target_sec": 20.0})
    at = app(PAGE)
    # runoff 3 x 4 = 12, so 12 + 3 x (2 + 2) = 24 runs: 3 x 30 s + 21 x (10 + 0.2 x 20) s = 384 s;
    # 12 + 3 x (2 + 5) = 33 runs: 90 s + 30 x (10 + 0.7 x 20) s = 810 s
    assert f"24-33 runs, about 6 min to 14 min more here (a baseline run took 30 s: run #{rid})." in texts(at.caption)
    me = psutil.Process()
    background.write_json(autopilot.progress_path(), {
        **done_state(), "state": "running", "pid": os.getpid(), "pid_started": me.create_time(),
        "started": time.time() - 300, "phase": "confirm", "ablation": None,
        "confirm": {"repeats": 3, "seeds": [1, 2, 3], "planned": 12, "started": time.time() - 100,
                    "runs": [{"round": 1}] * 4},
        "current": {"phase": "confirm", "round": 2, "name": "winner", "run_id": 9, "label": "winner"}})
    at = app(PAGE)
    no_errors(at)
    # 4 runs in 100 s: 8 left x 25 s = 200 s
    assert "round 2: winner · run 5 of 12, about 3 min left · run #9" in texts(at.markdown)


@pytest.mark.unit
def test_a_trial_that_did_not_reach_is_never_below_the_best_and_a_long_legend_keeps_the_plot():
    from engine.autopilot import charts as charts_mod

    trials = [{"trial": 1, "kind": "reached", "time_to_target_sec": 4.0, "best_so_far_sec": 4.0},
              {"trial": 2, "kind": "share", "time_to_target_sec": None, "elapsed_sec": 1.5, "best_so_far_sec": 4.0},
              {"trial": 3, "kind": "budget", "time_to_target_sec": None, "elapsed_sec": 6.0, "best_so_far_sec": 4.0},
              {"trial": 4, "kind": "reached", "time_to_target_sec": 3.0, "best_so_far_sec": 3.0}]
    # Trial 2 stopped at 1.5 s without reaching: drawn at the best so far (4 s), not below it.
    assert charts_mod.trials_frame(trials)["y"].tolist() == [4.0, 4.0, 6.0, 3.0]
    # Seven configurations in the re-runs' legend: 3 rows of 24 px above a 200 px plot.
    runs = [{"name": f"config {i}", "round": r, "time_to_target_sec": 2.0 + i} for i in range(7) for r in (1, 2)]
    assert charts_mod.confirm_figure(runs, 0.95).layout.height == 76 + 200 + 3 * 24
    assert charts_mod.confirm_figure(runs[:4], 0.95).layout.height == 300  # two names: as before


@pytest.mark.page
def test_an_inconclusive_winner_is_no_primary_recommendation(store_home):
    state = done_state()
    state["confirm"]["speedup"].update(verdict="inconclusive", ci95=[0.49, 3.56])  # issue 57: 1.32x (-51% to +256%)
    background.write_json(autopilot.progress_path(), state)
    at = app(PAGE)
    no_errors(at)
    assert at.button(key="ap_use_btn").proto.type == "secondary"
