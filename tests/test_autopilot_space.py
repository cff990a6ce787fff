"""The autopilot's pure pieces (engine.autopilot.space, engine.autopilot.search) with
hand-computed values: the search space per machine, trial configs, pruning, the runoff's
choice, re-runs, the ablation and the explanation."""
from __future__ import annotations


import pytest

from engine.config import baseline_config
from engine.autopilot import search as autopilot
from engine.autopilot import space as sp
from engine.autopilot.explain import explanation
from engine.hardware.verdicts import verdicts

from tests.helpers.autopilot import DIGITS, cpu_facts, gpu_facts


def space_for(facts, base=DIGITS):
    return sp.search_space(verdicts(facts, base.device_type), base, facts)


# --- the search space --------------------------------------------------------------

def test_search_space_follows_the_hardware_verdicts():
    s = space_for(cpu_facts())
    c = s.choices
    assert c["precision"] == ("float32", "mixed_bfloat16")  # float16 is emulated on a CPU
    assert c["jit_compile"] == (False, True)                 # XLA on a CPU: 'measure'
    assert c["fused_optimizer"] == (False, True)             # Adam has a fused kernel
    assert c["devices"] == (1,)                              # one physical CPU: no real replicas
    # digits: 1,437 training samples; 0.5x, 1x, 2x, 4x the base batch of 128.
    assert c["batch_size"] == (64, 128, 256, 512)
    assert c["cycle_epochs"] == (2, 3, 5, 10, 20)            # 1/10, 3/20 (1.5 rounded up), 1/4, 1/2, all of 20
    assert c["steps_per_execution"] == (1, 2, 4, 8, 16)
    assert c["max_lr"] == (0.01,)                            # no LR range test yet: 10x the base LR
    assert sp.search_space([], DIGITS, {}, max_lrs=(0.007, 0.0033, 0.007)).choices["max_lr"] == (0.0033, 0.007)
    assert any(n.startswith("mixed_float16 left out (slower)") for n in s.notes)
    assert any("several devices left out" in n for n in s.notes)

    rms = space_for(cpu_facts(), DIGITS.replace(optimizer="rmsprop"))
    assert rms.choices["fused_optimizer"] == (False,)
    assert "fused optimizer left out: no fused kernel for rmsprop" in rms.notes

    no_bf16 = space_for(cpu_facts(bf16=False)).choices
    assert no_bf16["precision"] == ("float32",)

    gpu = space_for(gpu_facts(4, (8, 0))).choices
    assert gpu["precision"] == ("float32", "mixed_bfloat16", "mixed_float16")
    assert gpu["devices"] == (1, 4)
    assert all(b % 4 == 0 for b in gpu["batch_size"])
    old = space_for(gpu_facts(1, (7, 0))).choices            # Volta: float16 yes, bfloat16 no
    assert old["precision"] == ("float32", "mixed_float16") and old["devices"] == (1,)


def with_jax(facts: dict, platform: str = "cpu") -> dict:
    return {**facts, "software": {"tensorflow": "2.21.0", "jax": "0.10.2"},
            "backends": {"tensorflow": {"version": "2.21.0"}, "jax": {"version": "0.10.2", "platform": platform}}}


def test_the_backend_is_searched_only_where_several_are_usable():
    assert space_for(cpu_facts()).choices["backend"] == ("tensorflow",)        # JAX not installed
    s = space_for(with_jax(cpu_facts()))
    assert s.choices["backend"] == ("tensorflow", "jax")                       # JAX on a CPU: 'measure'
    gpu_no_cuda = space_for(with_jax(gpu_facts(1, (8, 0))))                   # a CPU-only jaxlib on a GPU box
    assert gpu_no_cuda.choices["backend"] == ("tensorflow",)
    assert any(n.startswith("backend jax left out (unavailable)") for n in gpu_no_cuda.notes)
    multi = space_for(with_jax(gpu_facts(4, (8, 0)), platform="gpu"))
    assert multi.choices["backend"] == ("tensorflow",) and multi.choices["devices"] == (1, 4)
    # The quick facts (no TensorFlow imported) carry the installed versions through.
    quick = sp.facts_from_quick({"backends": {"tensorflow": "2.21.0", "jax": "0.10.2", "jaxlib": "0.10.2"}})
    assert space_for(quick).choices["backend"] == ("tensorflow", "jax")
    # A JAX trial compiles with XLA whatever was drawn; XLA then comes with the backend.
    # It never fuses the optimizer (a TensorFlow technique), whatever was drawn.
    params = {"backend": "jax", "precision": "float32", "steps_per_execution": 1, "batch_size": 128,
              "schedule": "constant", "label_smoothing": 0.0, "jit_compile": False, "devices": 1,
              "fused_optimizer": True}
    jx = sp.trial_config(DIGITS, params, 0.005)
    assert (jx.backend, jx.jit_compile, jx.fused_optimizer) == ("jax", True, False)
    base = baseline_config(DIGITS)
    assert sp.techniques_used(jx, base) == ["backend"]
    assert sp.describe(jx, base) == "JAX backend"
    (back,) = sp.ablation_configs(jx, base)
    assert (back["technique"], back["config"].backend, back["config"].jit_compile) == ("backend", "tensorflow", False)
    assert sp.techniques_used(back["config"], jx) == ["backend"]


def test_hint_is_the_hand_made_preset_on_this_kind_of_machine():
    s = sp.search_space(verdicts(cpu_facts(), "auto"), DIGITS, cpu_facts(), max_lrs=(0.0033, 0.007))
    h = sp.hint_params(s, verdicts(cpu_facts(), "auto"))
    assert h == {"precision": "mixed_bfloat16", "steps_per_execution": 2, "batch_size": 256,
                 "schedule": "one_cycle", "cycle_epochs": 10, "max_lr": 0.007, "label_smoothing": 0.1,
                 "jit_compile": False, "devices": 1, "fused_optimizer": True,
                 # the record-setting techniques (issue 45) off: the preset has none of them
                 "optimizer": "adam", "ema_momentum": 0.0, "cutmix_factor": 0.0,
                 "gradient_accumulation_steps": 1, "tta": "off"}
    # With the LR range test's edge (min loss LR / 3) offered too, the first trial keeps to its rules.
    s3 = sp.search_space(verdicts(cpu_facts(), "auto"), DIGITS, cpu_facts(), max_lrs=(0.0033, 0.007, 0.0233))
    assert sp.hint_params(s3, verdicts(cpu_facts(), "auto"), max_lr=0.007)["max_lr"] == 0.007
    assert sp.hint_params(s3, verdicts(cpu_facts(), "auto"))["max_lr"] == 0.0233
    # The second trial: the same, on the super-convergence route (short cycle, the edge peak,
    # base batch, 1 step per execution); none when only one peak is offered.
    h3 = sp.hint_params(s3, verdicts(cpu_facts(), "auto"), max_lr=0.007)
    assert sp.short_cycle_hint(s3, h3) == {**h3, "max_lr": 0.0233, "cycle_epochs": 3, "batch_size": 128,
                                           "steps_per_execution": 1}
    assert sp.short_cycle_hint(s, h) is None
    # A 10-epoch cap: lengths 1, 2, 3, 5, 10; the one nearest half the cap is 5.
    s10 = sp.search_space(verdicts(cpu_facts(), "auto"), DIGITS.replace(epochs=10), cpu_facts())
    assert s10.choices["cycle_epochs"] == (1, 2, 3, 5, 10)
    assert sp.hint_params(s10, verdicts(cpu_facts(), "auto"))["cycle_epochs"] == 5


def test_trial_config_scales_the_lr_and_caps_steps_per_execution():
    p = {"precision": "mixed_bfloat16", "steps_per_execution": 8, "batch_size": 512, "schedule": "constant",
         "warmup_epochs": 1.0, "label_smoothing": 0.1, "jit_compile": False, "devices": 1}
    cfg = sp.trial_config(DIGITS, p, max_lr=0.004)
    # 1,437 samples / 512 = 3 steps per epoch (last one partial): 8 steps per execution is capped at 3.
    assert (cfg.batch_size, cfg.steps_per_execution) == (512, 3)
    assert (cfg.scale_lr, cfg.reference_batch_size, cfg.warmup_epochs) == (True, 128, 1.0)
    assert (cfg.schedule, cfg.max_lr, cfg.epochs) == ("constant", None, 20)
    assert cfg.stop_at_target and cfg.target_accuracy == 0.95
    oc = sp.trial_config(DIGITS, {**p, "batch_size": 128, "schedule": "one_cycle", "cycle_epochs": 5,
                                  "max_lr": 0.004})
    assert (oc.schedule, oc.max_lr, oc.epochs, oc.warmup_epochs, oc.scale_lr) == ("one_cycle", 0.004, 5, 0.0, False)
    assert oc.steps_per_execution == 8  # 12 steps per epoch at batch 128
    assert sp.describe(cfg, baseline_config(DIGITS)) == ("bfloat16 · 3 steps per execution · batch 512 + scaled LR "
                                                      "+ 1 warmup epoch · label smoothing 0.1")


def test_ablation_runs_differ_from_the_winner_in_exactly_one_setting_each():
    winner = sp.trial_config(DIGITS, {"precision": "mixed_bfloat16", "steps_per_execution": 4, "batch_size": 256,
                                      "schedule": "one_cycle", "cycle_epochs": 10, "label_smoothing": 0.1,
                                      "jit_compile": True, "devices": 1, "fused_optimizer": True}, max_lr=0.005)
    base = baseline_config(DIGITS)  # the user's settings: batch 128, float32, ...
    plan = sp.ablation_configs(winner, base)
    assert [a["technique"] for a in plan] == ["precision", "steps_per_execution", "batch", "schedule",
                                              "label_smoothing", "jit_compile", "fused_optimizer"]
    for a in plan:
        assert a["error"] is None
        assert sp.techniques_used(a["config"], winner) == [a["technique"]]  # exactly one setting differs
        for f in sp.TECHNIQUE_FIELDS[a["technique"]]:
            assert getattr(a["config"], f) == getattr(base, f)               # ... and it is the baseline's
    by = {a["technique"]: a for a in plan}
    batch = by["batch"]["config"]
    assert (batch.batch_size, batch.scale_lr, batch.warmup_epochs, batch.schedule) == (128, False, 0.0, "one_cycle")
    sched = by["schedule"]["config"]
    assert (sched.schedule, sched.max_lr, sched.epochs, sched.batch_size) == ("constant", None, 20, 256)
    assert [a["label"] for a in plan] == ["bfloat16", "4 steps per execution", "batch 256 + scaled LR",
                                          "one_cycle (max LR 0.005, 10 epochs)", "label smoothing 0.1", "XLA",
                                          "fused adam update"]
    # Switching the batch back alone would leave 16 steps per execution in a 12-step epoch: said, not run.
    small = sp.trial_config(DIGITS, {"precision": "float32", "steps_per_execution": 16, "batch_size": 64,
                                     "schedule": "constant", "label_smoothing": 0.0, "jit_compile": False,
                                     "devices": 1}, 0.005)
    (only,) = [a for a in sp.ablation_configs(small, base) if a["technique"] == "batch"]
    assert only["config"] is None and only["error"].startswith("steps_per_execution: 16 is more than the 12 steps")


def test_what_the_search_tried_is_counted_per_technique_with_its_best_time():
    base = baseline_config(DIGITS)
    muon = base.replace(optimizer="muon")
    trials = [
        {"config": muon.to_dict(), "kind": "reached", "time_to_target_sec": 5.0},
        {"config": muon.replace(ema_momentum=0.9).to_dict(), "kind": "pruned", "time_to_target_sec": None},
        {"config": base.replace(optimizer="lamb").to_dict(), "kind": "reached", "time_to_target_sec": 4.0},
        {"config": base.to_dict(), "kind": "reached", "time_to_target_sec": 3.0},  # the baseline: no technique
    ]
    tried = {r["technique"]: r for r in sp.techniques_tried(trials, base)}
    assert list(tried) == list(sp.TECHNIQUES)
    opt = tried["optimizer"]
    assert (opt["trials"], opt["reached"], opt["best_sec"]) == (3, 2, 4.0)
    assert opt["settings"] == {"Muon (conv filters reshaped to 2-D)": 2, "LAMB": 1}  # most used first
    ema = tried["ema"]
    assert (ema["trials"], ema["reached"], ema["best_sec"]) == (1, 0, None)
    assert tried["cutmix"]["trials"] == 0
    line = sp.tried_text(sp.techniques_tried(trials, base))
    assert line.startswith("optimizer in 3 (Muon (conv filters reshaped to 2-D) 2, LAMB 1), 2 reached, best 4.0 s; "
                           "ema in 1 (weight EMA 0.9 (validated on the averaged weights) 1), 0 reached; in no trial: backend, precision, ")
    assert line.endswith("tta, progressive resizing")


# --- re-runs, stopping, the explanation ---------------------------------------------------

def _entry(backend, kind, first=2.5, best=1.0):
    return {"config": {"backend": backend}, "kind": kind, "first_execution_sec": first, "best_before_sec": best}


def test_a_backend_whose_warm_up_outlasts_the_best_time_is_left_out():
    slow = [_entry("jax", "pruned"), _entry("tensorflow", "reached", 0.5, None), _entry("jax", "pruned", None)]
    assert autopilot.backends_left_out(slow, "tensorflow") == {"jax": (
        "backend jax left out after 2 trials: each was still in its warm-up (first execution) when it passed "
        "the best time")}
    assert autopilot.backends_left_out(slow[:2], "tensorflow") == {}                    # one trial is not enough
    # One trial whose first execution ended before the best time it was pruned against: it stays.
    assert autopilot.backends_left_out([*slow, _entry("jax", "pruned", 0.9, 1.0)], "tensorflow") == {}
    assert autopilot.backends_left_out([*slow, _entry("jax", "reached", 2.5, 3.0)], "tensorflow") == {}
    assert autopilot.backends_left_out([_entry("jax", "pruned"), _entry("jax", "share")], "tensorflow") == {}
    # The base backend is never left out (it is the baseline's).
    assert autopilot.backends_left_out([_entry("tensorflow", "pruned")] * 3, "tensorflow") == {}


JAX_FACTS = {**cpu_facts(), "backends": {"tensorflow": {"version": "2.21.0"}, "jax": {"version": "0.10.2"}},
             "software": {"tensorflow": "2.21.0", "jax": "0.10.2"}}


def test_the_search_runs_no_more_trials_on_a_backend_left_out(store_home, monkeypatch):
    """The search loop with stand-in trials (no runs): a TensorFlow trial reaches the target
    in about 1 s, a JAX trial is pruned at 1.1 s, still in its 2.5-s first execution."""
    ap = autopilot.Autopilot(DIGITS, 0.95, 120, seed=3, repeats=0, explain=False, lr_find="no", facts=JAX_FACTS)
    ran = []

    def fake_trial(store, cfg, params, limit, deadline):
        ran.append(cfg.backend)
        best = (ap.state["best"] or {}).get("time_to_target_sec")
        out = ({"kind": "pruned", "time_to_target_sec": None, "elapsed_sec": 1.1, "first_execution_sec": 2.5}
               if cfg.backend == "jax" and best else
               {"kind": "reached", "time_to_target_sec": 1.0 + len(ran) / 100, "elapsed_sec": 1.0,
                "first_execution_sec": 0.5})
        entry = {"trial": len(ran), "config": cfg.to_dict(), "startup_sec": 0.1, "best_before_sec": best, **out}
        top = ap.state["best"] or entry
        ap._update(trials=[*ap.state["trials"], entry], best=top if top["kind"] == "reached" else None)
        if len(ran) == 20:
            ap.stop.set()
        return entry

    monkeypatch.setattr(ap, "_trial", fake_trial)
    ap.search()
    assert "jax" in ap.space.choices["backend"]
    second = [i for i, b in enumerate(ran) if b == "jax"][1]  # the second JAX trial ...
    assert "jax" not in ran[second + 1:] and len(ran) == 20   # ... is the last one run
    assert ("backend jax left out after 2 trials: each was still in its warm-up (first execution) when it "
            "passed the best time") in ap.state["notes"]


def test_a_short_budget_searches_the_base_backend_only(store_home):
    # A new user's 30-s and 60-s searches spent 2 of their 4 trials on JAX, each pruned while compiling.
    short = autopilot.Autopilot(DIGITS, 0.95, 119, facts=JAX_FACTS, lr_find="no")
    assert short.space.choices["backend"] == ("tensorflow",)
    assert ("backend jax left out: a budget this short leaves no room for a second backend (its trials start "
            "cold and compile first); give a budget of 120 s or more to search it") in short.space.notes
    assert autopilot.Autopilot(DIGITS, 0.95, 120, facts=JAX_FACTS, lr_find="no").space.choices["backend"] == (
        "tensorflow", "jax")


def test_a_new_trial_needs_the_median_start_up_plus_the_best_time():
    assert autopilot.time_needed([], None) == 0.0
    trials = [{"startup_sec": 5.2}, {"startup_sec": None}, {"startup_sec": 4.1}, {"startup_sec": 6.9}]
    assert autopilot.time_needed(trials, None) == pytest.approx(5.2)  # median of 4.1, 5.2, 6.9
    assert autopilot.time_needed(trials, {"time_to_target_sec": 0.9}) == pytest.approx(6.1)


def test_runoff_chooses_the_finalist_that_reaches_on_most_seeds_then_the_lowest_mean():
    f = [{"trial": 1, "time_to_target_sec": 0.90, "rerun_secs": [1.20, 1.50]},  # lucky in the search: mean 1.20
         {"trial": 7, "time_to_target_sec": 1.00, "rerun_secs": [0.96, 0.98]},  # mean 0.98
         {"trial": 9, "time_to_target_sec": 1.02, "rerun_secs": [0.94, 0.98]}]  # mean 0.98: a tie, the earlier wins
    choice = autopilot.choose_finalist(f)
    assert choice["trial"] == 7 and choice["mean_sec"] == pytest.approx(0.98) and choice["missed"] == 0
    # A finalist that missed the target on a runoff seed loses to one that reached it on every seed,
    # however fast its other runs were (the 2-epoch route that reached 0.965 only on its search seed).
    f[1]["rerun_secs"] = [0.50, None]
    f[2]["rerun_secs"] = [None, None]
    choice = autopilot.choose_finalist(f)
    assert choice["trial"] == 1 and choice["missed"] == 0 and choice["mean_sec"] == pytest.approx(3.6 / 3)
    # If every finalist missed somewhere, the fewest misses win, then the mean of the runs that reached.
    f[0]["rerun_secs"] = [None, 1.10]
    choice = autopilot.choose_finalist(f)
    assert choice["trial"] == 7 and choice["missed"] == 1 and choice["mean_sec"] == pytest.approx(0.75)
    # Missing everywhere: the search's fastest stands, its mean its search time.
    for x in f:
        x["rerun_secs"] = [None, None]
    assert autopilot.choose_finalist(f) == {**f[0], "missed": 2, "mean_sec": 0.90}
    with pytest.raises(ValueError):
        autopilot.choose_finalist([])


def test_runoff_seeds_follow_the_confirming_rounds_seeds():
    # Search on 0, confirming rounds on 1-5, the runoff on 6 to 9: nothing is confirmed on a seed it was chosen on.
    assert autopilot.runoff_seeds(0, 5) == [6, 7, 8, 9]
    assert autopilot.runoff_seeds(10, 3, 3) == [14, 15, 16]
    assert autopilot.runoff_seeds(autopilot.MAX_SEED, 0, 2) == [0, 1]


def test_rounds_alternate_as_a_comparisons_pairs():
    from engine.autopilot.confirm import round_names

    # AB, BA, AB, as a comparison's pairs (engine.jobs.comparison.orders): neither side always runs first.
    assert round_names(["baseline", "winner"], 3) == [["baseline", "winner"], ["winner", "baseline"],
                                                      ["baseline", "winner"]]
    assert round_names(["baseline", "winner", "preset"], 2) == [["baseline", "winner", "preset"],
                                                                ["preset", "winner", "baseline"]]


def test_ablation_factors_are_said_with_their_comparisons_intervals():
    # Entries as engine.autopilot.confirm.ablation_entries reads them from the ablation's comparisons.
    quiet = [{"label": "bfloat16", "factor": 1.4, "ci95": [1.25, 1.56], "verdict": "faster", "interval_pairs": 5},
             {"label": "label smoothing 0.1", "factor": 0.8, "ci95": [0.72, 0.89], "verdict": "slower",
              "interval_pairs": 5},
             {"label": "4 steps per execution", "factor": 1.05, "ci95": [0.94, 1.17], "verdict": "inconclusive",
              "interval_pairs": 5}]
    assert explanation(quiet) == (
        "bfloat16 1.40x [1.25–1.56], 4 steps per execution 1.05x [0.94–1.17] (inconclusive), "
        "label smoothing 0.1 0.80x [0.72–0.89] (faster without it); each factor from 5 interleaved pairs with "
        "the winner on the confirming seeds, geometric mean and 95% t interval (inconclusive: the interval holds "
        "1x); leave-one-out factors do not multiply to the total")


def test_stop_reason_rules():
    assert autopilot.stop_reason(2.0, best=3.0, limit=15.0, now=10.0, deadline=60.0) is None
    kind, line = autopilot.stop_reason(3.2, best=3.0, limit=15.0, now=10.0, deadline=60.0)
    assert kind == "pruned" and line.startswith("pruned at 3.20 s of training: slower than the best time so far (3.00 s)")
    # 2 decimals on both sides: at 1, 2.34 s read "2.3 s", as if under the best 2.33 s.
    assert autopilot.stop_reason(2.34, best=2.33)[1] == ("pruned at 2.34 s of training: slower than the best time "
                                                         "so far (2.33 s), it cannot win")
    assert autopilot.stop_reason(15.5, best=None, limit=15.0) == (
        "share", "not at the target within its share of the budget (15.00 s of training)")
    assert autopilot.stop_reason(1.234, best=3.0, now=60.0, deadline=60.0) == (
        "budget", "the search budget ran out after 1.23 s of its training")
    assert autopilot.stop_reason(0.0, best=3.0, now=60.0, deadline=60.0) == (
        "budget", "the search budget ran out before its training started")
    assert autopilot.stop_reason(1.0, stop_requested=True)[0] == "stopped"
    # The share of a 60-s budget is 15 s of training; a 20-s budget still allows 10 s.
    assert autopilot.trial_limit(60) == 15.0 and autopilot.trial_limit(20) == 10.0


def test_explanation_names_each_technique_largest_first():
    line = explanation([
        {"label": "bfloat16", "factor": 1.4}, {"label": "one_cycle", "factor": 1.1},
        {"label": "8 steps per execution", "factor": 1.3},
        {"label": "label smoothing 0.1", "factor": None, "note": "not reached in 20 epochs"}])
    assert line == ("bfloat16 1.40x (no interval), 8 steps per execution 1.30x (no interval), one_cycle 1.10x (no "
                    "interval), label smoothing 0.1 (needed: not reached in 20 epochs without it)")
    # Stop during the ablation (a new user's case): the cut-off runs are not read as "needed".
    line = explanation([
        {"label": "bfloat16", "factor": 1.03},
        {"label": "2 steps per execution", "factor": None, "note": "stopped by the user", "kind": "stopped"},
        {"label": "one_cycle", "factor": None, "note": "not run: the autopilot was stopped", "kind": "not_run"}])
    assert line == "bfloat16 1.03x (no interval), stopped before measuring 2 steps per execution, one_cycle"
    # Under 1x: the winner was faster without it where the interval says so; without one, no direction.
    line = explanation([{"label": "label smoothing 0.1", "factor": 0.9, "ci95": [0.85, 0.95], "verdict": "slower"},
                        {"label": "bfloat16", "factor": 1.2, "pairs": 2}])
    assert line == "bfloat16 1.20x (2 pairs, no interval), label smoothing 0.1 0.90x [0.85–0.95] (faster without it)"


def test_same_seed_gives_the_same_proposals():
    space = space_for(cpu_facts())
    hint = sp.hint_params(space, verdicts(cpu_facts(), "auto"))

    def sequence(seed, n=10):
        prop = autopilot.Proposer(space, seed, hint)
        out = []
        for i in range(n):
            trial, params = prop.ask()
            out.append(params)
            # A deterministic stand-in for the measured time: bigger batches "faster"; every 3rd pruned.
            if i % 3 == 2:
                prop.tell(trial, elapsed=5.0)
            else:
                prop.tell(trial, 10.0 - params["batch_size"] / 128 + params["steps_per_execution"] / 16)
        return out

    a, b = sequence(7), sequence(7)
    assert a == b
    assert a[0] == hint  # the hint goes first
    # Two hints: both first, in order; the same seed still gives the same proposals after them.
    second = {**hint, "batch_size": 128, "steps_per_execution": 1}
    prop = autopilot.Proposer(space, 7, [hint, second])
    got = [prop.ask()[1] for _ in range(2)]
    assert got == [hint, second]
    assert sequence(8)[1:] != a[1:]  # another seed proposes otherwise


def test_a_runoff_with_one_finalist_is_skipped_with_a_word(store_home):
    # Issue 57: the form promises a runoff; with one trial at the target it was skipped without a word.
    ap = autopilot.Autopilot(DIGITS, 0.95, 120, seed=3, repeats=0, explain=False, lr_find="no", facts=JAX_FACTS)
    ap.state["trials"] = [{"trial": 1, "kind": "reached", "time_to_target_sec": 2.0},
                          {"trial": 2, "kind": "pruned", "time_to_target_sec": None}]
    assert ap.runoff() is None
    assert ap.state["notes"] == ["no runoff: 1 trial reached the target, so there was nothing to choose between "
                                 "on new seeds"]


def test_an_ablation_without_its_comparison_says_why():
    from engine.autopilot.confirm import ablation_entries

    plan = [{"technique": "precision", "label": "bfloat16", "note": None},
            {"technique": "backend", "label": "JAX", "note": "no baseline setting to switch back to"}]
    stopped = {"state": "cancelled", "phase": "stopped"}
    out = ablation_entries(plan, {}, stopped)  # stopped before its rounds; the second had no configuration to run
    assert [(a["kind"], a["factor"]) for a in out] == [("not_run", None), ("no_config", None)]
    assert explanation(out) == ("JAX (needed: no baseline setting to switch back to without it), "
                                "stopped before measuring bfloat16")


def test_an_unmeasured_ablation_says_stopped_only_when_the_autopilot_was_stopped():
    """A new user's case: during round 1 of the re-runs every ablation bar read "not run: the
    autopilot was stopped"; the words follow the autopilot's status (its state file's 'state',
    else the phase Autopilot.run left), and its comparison with no complete pair yet says so."""
    from engine.autopilot.confirm import ablation_entries, job_status

    plan = [{"technique": "precision", "label": "bfloat16", "note": None}]
    no_pair = {"precision": {"id": 7, "status": "running", "result": {"pairs": 0, "time_to_accuracy": {}}}}
    running = {"state": "running", "phase": "confirm"}
    (a,) = ablation_entries(plan, no_pair, running)
    assert (a["kind"], a["note"], a["comparison_id"]) == ("pending", "not measured yet: it runs in the re-run rounds", 7)
    assert explanation([a]) == "not measured yet (in the re-run rounds): bfloat16"
    for state, note in [({"state": "cancelled", "phase": "stopped"}, "not run: the autopilot was stopped"),
                        ({"phase": "stopped"}, "not run: the autopilot was stopped"),  # Autopilot.run's own state
                        ({"state": "failed", "phase": "confirm"}, "not run: the autopilot failed")]:
        (a,) = ablation_entries(plan, no_pair, state)
        assert (a["kind"], a["note"]) == ("not_run", note)
    assert explanation([a]) == "stopped before measuring bfloat16"
    # While the rounds go on, as Autopilot.confirm leaves it (no 'state' key): running; at its end, done.
    assert [job_status(s) for s in ({"phase": "confirm"}, {"phase": "done"}, {"state": "starting"},
                                    {"state": "done", "phase": "done"})] == ["running", "done", "running", "done"]


def test_an_ablation_that_contradicts_the_winner_says_so():
    ab = [{"label": "bfloat16", "factor": 0.9, "ci95": [0.85, 0.95], "verdict": "slower"},
          {"label": "4 steps per execution", "factor": 0.95, "ci95": [0.91, 0.99], "verdict": "slower"}]
    from engine.autopilot.explain import explanation

    line = explanation(ab)
    assert line.startswith("4 steps per execution 0.95x [0.91–0.99] (faster without it), "
                           "bfloat16 0.90x [0.85–0.95] (faster without it)")
    assert "every factor is below 1: without any one of its techniques the winner was faster" in line
    assert "every factor is below 1" not in explanation([{"label": "bfloat16", "factor": 1.2, "ci95": [1.1, 1.3]},
                                                         ab[1]])
    # From 2 pairs (the re-run rounds still going): samples, no direction and no contradiction.
    early = explanation([{"label": "bfloat16", "factor": 0.9, "interval_pairs": 2},
                         {"label": "4 steps per execution", "factor": 0.95, "interval_pairs": 2}])
    assert early == "4 steps per execution 0.95x (2 pairs, no interval), bfloat16 0.90x (2 pairs, no interval); " \
                    "each factor from 2 interleaved pairs with the winner on the confirming seeds, geometric mean " \
                    "and 95% t interval (inconclusive: the interval holds 1x); leave-one-out factors do not " \
                    "multiply to the total"
