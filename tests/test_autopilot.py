"""The autopilot end to end: the CLI and the page following one search, its progress files,
the LR range test inside it, and one real 30-s search on digits with a planted slow trial,
then its runoff, re-runs and ablation, whose runs a played queue serves."""
from __future__ import annotations

import math
import os
import time

import psutil
import pytest

from engine.config import RunConfig
from engine.base.errors import ConfigError
from engine.jobs import background, runner
from engine.autopilot import confirm
from engine.autopilot import search as autopilot
from engine.autopilot import space as sp
from engine.autopilot.space import facts_from_quick
from engine.hardware.machine import quick_facts

from tests.helpers.autopilot import DIGITS, cpu_facts
from tests.helpers.played_queue import PlayedQueue
from tests.helpers.queue import end_queue, ready_spare


def test_store_last_t_is_the_newest_execution_or_system_time(store):
    rid = store.create_run(DIGITS.to_json())
    assert store.last_t(rid) is None
    store.add_metrics(rid, system=[(0.4, 90.0, 500.0, 20.0, None, 0), (1.4, 95.0, 510.0, 20.0, None, 0)])
    assert store.last_t(rid) == 1.4  # during the warm-up only system samples exist
    store.add_metrics(rid, executions=[(0, 0, 1, 1, 2.25, 2.25, 56.9, 2.3, 1e-3, 1, None)])
    assert store.last_t(rid) == 2.25


# --- settings and the CLI -------------------------------------------------------------

def test_a_search_started_from_the_cli_is_followed_by_the_page(store_home, monkeypatch, capsys):
    from engine.cli.main import main

    live = []

    def run(self):  # stands in for the search: two state changes, as the real one reports them
        self._update(phase="search", trials=[{"trial": 1, "kind": "reached"}])
        live.append(autopilot.read_progress())
        self._update(phase="done")
        return self.state

    monkeypatch.setattr(autopilot.Autopilot, "run", run)
    monkeypatch.setattr("signal.signal", lambda *a: None)  # keep this test process's SIGTERM and SIGINT
    assert autopilot.read_progress() is None
    assert main(["autopilot", "--budget", "30", "--quiet"]) == 1  # no winner in this stand-in
    assert live[0]["state"] == "running" and live[0]["pid"] == os.getpid() and live[0]["trials"][0]["trial"] == 1
    done = autopilot.read_progress()
    assert done["state"] == "done" and done["id"] == live[0]["id"] and done["phase"] == "done"
    # A bad setting afterwards is refused without touching what the page shows.
    assert main(["autopilot", "--budget", "5"]) == 2
    assert autopilot.read_progress()["id"] == done["id"] and autopilot.read_progress()["state"] == "done"
    capsys.readouterr()


def test_bad_settings_are_one_line_with_exit_code_2(store_home, capsys):
    from engine.cli.main import main

    assert main(["autopilot", "--budget", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: budget: 5 is out of range; give the search's wall-clock seconds, 30 to 86400"
    # A cold worker start alone takes 5-11 s: 10-29 s could never finish a trial.
    with pytest.raises(ConfigError, match="budget: 29.9 is out of range"):
        autopilot.check_settings(29.9, 0.95, 3)
    autopilot.check_settings(30, 0.95, 3)
    assert main(["autopilot", "--dataset", "synthetic"]) == 2
    assert "error: target: None has no default for synthetic; give --target" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="stop_at_target: True needs a target accuracy"):
        RunConfig(dataset="synthetic", stop_at_target=True)


def test_a_running_autopilot_makes_the_machine_busy(store_home):
    me = psutil.Process()
    background.write_json(autopilot.progress_path(), {"state": "running", "pid": os.getpid(),
                                                      "pid_started": me.create_time(), "started": time.time() - 12,
                                                      "phase": "search"})
    why = background.busy()
    assert why.startswith("the autopilot is searching (12 s so far, phase search)")
    assert background.busy(skip=(background.AUTOPILOT_FILE,)) is None
    with pytest.raises(autopilot.AutopilotError, match="not started: the autopilot is searching"):
        autopilot.start_background(["--budget", "30"])


def test_a_seed_without_room_for_the_reruns_is_refused_up_front(store_home, capsys):
    from engine.cli.main import main

    # The 3 re-runs would use seeds 2147483648-2147483650, past RunConfig's 2**31 - 1.
    assert main(["autopilot", "--seed", "2147483647", "--budget", "30"]) == 2
    assert capsys.readouterr().err.strip() == ("error: seed: 2147483647 is out of range; the re-runs use the 3 "
                                               "seeds after it: use a value between 0 and 2147483644")
    autopilot.check_settings(60, 0.95, 3, seed=2147483644)                     # 2147483647 is the last re-run's
    autopilot.check_settings(60, 0.95, 0, seed=2147483647)  # 0 re-runs: no ablation either, nothing on another seed
    with pytest.raises(ConfigError, match="the re-runs use the seed after it: use a value between 0 and 2147483646"):
        autopilot.check_settings(60, 0.95, 1, seed=2147483647)
    with pytest.raises(ConfigError, match="seed: 2147483647 is out of range"):
        autopilot.Autopilot(DIGITS.replace(seed=2147483647), 0.95, 60, facts=cpu_facts())


def test_max_lr_is_checked_up_front(store_home, capsys):
    from engine.cli.main import main

    fix = "give one-cycle's peak learning rate in (0, 10], at least the base learning rate 0.001"
    for flag, line in (("nan", f"max_lr: nan is out of range; {fix}"),      # would print NaN: invalid JSON
                       ("-1", f"max_lr: -1.0 is out of range; {fix}"),     # would skip every one-cycle proposal
                       ("11", f"max_lr: 11.0 is out of range; {fix}"),
                       ("0.0005", f"max_lr: 0.0005 is below the base learning rate 0.001; {fix}")):
        assert main(["autopilot", "--max-lr", flag, "--budget", "30"]) == 2
        assert capsys.readouterr().err.strip() == f"error: {line}"
    assert autopilot.progress_path().exists() is False  # refused before anything was written
    autopilot.check_settings(60, 0.95, 3, max_lr=0.001, learning_rate=0.001)   # equal to the base LR: allowed
    autopilot.check_settings(60, 0.95, 3, max_lr=10, learning_rate=0.001)


def test_the_search_end_note_says_only_what_is_known():
    # No trial started training yet (no start-up seen): only that the budget ran out.
    assert autopilot.search_end_note(0.0, 0.0, False) == "search ended: the budget ran out"
    assert autopilot.search_end_note(-0.4, 6.1, True) == "search ended: the budget ran out"
    assert autopilot.search_end_note(4.2, 6.9, True) == (
        "search ended with 4 s of the budget left: a new trial needs at least 7 s (worker start-up + the best time)")
    assert autopilot.search_end_note(4.2, 5.2, False) == (
        "search ended with 4 s of the budget left: a new trial needs at least 5 s (worker start-up)")


def test_a_stop_before_any_trial_reached_the_target_says_so(store_home, monkeypatch):
    ap = autopilot.Autopilot(DIGITS, 0.95, 60, repeats=0, explain=False, lr_find="no", facts=cpu_facts())

    def stopped_search():  # stands in for a search that the user stopped during its first trial
        ap.stop.set()
        return None

    monkeypatch.setattr(ap, "search", stopped_search)
    state = ap.run()
    assert state["phase"] == "stopped"
    assert state["notes"] == ["stopped by the user before any trial reached the target: nothing to confirm or explain"]
    # Without a stop the advice stands.
    ap2 = autopilot.Autopilot(DIGITS, 0.95, 60, repeats=0, explain=False, lr_find="no", facts=cpu_facts())
    monkeypatch.setattr(ap2, "search", lambda: None)
    assert ap2.run()["notes"] == ["no trial reached the target: nothing to confirm or explain (raise the epoch cap "
                                  "or the budget, or lower the target)"]
    # 0 re-runs and a winner: no confirmation and no ablation (no one-run ablation instead), said in the state.
    ap3 = autopilot.Autopilot(DIGITS, 0.95, 60, repeats=0, lr_find="no", facts=cpu_facts(), finalists=1)
    monkeypatch.setattr(ap3, "search", lambda: {"trial": 1, "run_id": 1, "label": "bf16", "time_to_target_sec": 2.0,
                                                "config": ap3.base.replace(**FAST).to_dict()})
    state = ap3.run()
    assert state["notes"] == [autopilot.NO_REPEATS] and state["confirm"] is None and state["ablation"] is None


def test_a_bad_progress_file_is_refused_before_anything_runs(store_home, capsys):
    import tempfile

    from engine.cli.main import main

    eg = os.path.join(tempfile.gettempdir(), "autopilot.json")
    out = store_home / "out"
    out.mkdir()
    assert main(["autopilot", "--budget", "30", "--progress-file", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (f"error: progress_file: '{out}' is a directory; give a file path, "
                                               f"e.g. {out}/autopilot.json")
    assert list(out.iterdir()) == []  # no temporary file left behind
    missing = store_home / "no" / "such" / "x.json"
    assert main(["autopilot", "--budget", "30", "--progress-file", str(missing)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: progress_file: '{missing}' is in a folder that does not exist ({missing.parent}); create the "
        f"folder first, or give a file path in an existing one, e.g. {eg}")
    assert not (store_home / "no").exists()  # a user's path is never created
    assert main(["autopilot", "--budget", "30", "--progress-file", os.devnull]) == 2
    assert capsys.readouterr().err.strip() == (f"error: progress_file: '{os.devnull}' is not a regular file; give "
                                               f"a file path in a folder you can write, e.g. {eg}")
    if os.path.isfile("/proc/version"):  # Linux: a regular file in a folder where nothing can be created
        assert main(["autopilot", "--budget", "30", "--progress-file", "/proc/version"]) == 2
        assert capsys.readouterr().err.strip().startswith("error: progress_file: '/proc/version' cannot be written (/proc: ")
    assert autopilot.progress_path().exists() is False


def _running_page_job():
    background.write_json(autopilot.progress_path(), {"state": "running", "pid": os.getpid(),
                                                      "pid_started": psutil.Process().create_time(),
                                                      "started": time.time() - 12, "phase": "search", "id": "other"})


def test_a_second_autopilot_with_its_own_progress_file_is_refused(store_home, monkeypatch, capsys):
    from engine.cli.main import main

    _running_page_job()
    mine = store_home / "mine.json"
    assert main(["autopilot", "--budget", "30", "--quiet", "--progress-file", str(mine)]) == 2
    assert capsys.readouterr().err.startswith("error: not started: the autopilot is searching (")
    assert background.read_json(mine)["state"] == "failed"
    assert autopilot.read_progress()["id"] == "other" and autopilot.read_progress()["state"] == "running"
    # The page's own job passes the page's file: it finds its own 'running' file, which is no reason to refuse.
    monkeypatch.setattr(autopilot.Autopilot, "run", lambda self: {**self.state, "phase": "done"})
    monkeypatch.setattr("signal.signal", lambda *a: None)
    assert main(["autopilot", "--budget", "30", "--quiet", "--progress-file", str(autopilot.progress_path())]) == 1
    assert autopilot.read_progress()["state"] == "done"
    capsys.readouterr()


def test_a_search_with_its_own_progress_file_also_keeps_the_pages_file(store_home, monkeypatch, capsys):
    from engine.cli.main import main

    live = []

    def run(self):
        self._update(phase="search", trials=[])
        live.append((background.read_json(store_home / "mine.json"), autopilot.read_progress(), background.busy()))
        self._update(phase="done")
        return self.state

    monkeypatch.setattr(autopilot.Autopilot, "run", run)
    monkeypatch.setattr("signal.signal", lambda *a: None)
    assert main(["autopilot", "--budget", "30", "--quiet", "--progress-file", str(store_home / "mine.json")]) == 1
    (mine, page, why) = live[0]
    assert mine["state"] == page["state"] == "running" and mine["id"] == page["id"]
    assert why.startswith("the autopilot is searching")  # so the page, `engine run` and the rest refuse
    assert background.read_json(store_home / "mine.json")["state"] == autopilot.read_progress()["state"] == "done"
    capsys.readouterr()


def test_the_summary_says_when_the_winner_was_slower_when_re_run(store_home):
    from engine.cli.autopilot import summary_lines
    from engine.store import Store
    from tests.helpers.autopilot import plant_confirmation

    def lines(baseline, winner, **kw):
        with Store() as store:
            conf = plant_confirmation(store, f"ap-{winner[0]}", {"baseline": baseline, "winner": winner}, **kw)
            state = {"target_accuracy": 0.95, "trials": [], "confirm": conf, "phase": kw and "stopped",
                     "winner": {"trial": 4, "run_id": 9, "label": "bfloat16", "search_time_to_target_sec": 1.5}}
            comps = confirm.stored(store, conf)
            ended[:] = [comps["confirmation"][k] for k in ("status", "ended_by")]
            return summary_lines(state, comps), conf["comparisons"]["confirmation"]
    ended = []
    # Ratios 1.76/2.40 = 0.733, 1.70/2.30 = 0.739, 1.80/2.50 = 0.720: median 0.733, and 1/0.733 = 1.36.
    # One central value (the geometric mean), its interval and verdict, from the stored comparison.
    # Logs of 0.7333, 0.7391, 0.7200: mean -0.31155 (0.7323x), sd 0.013449, half 4.302653 x 0.013449 /
    # sqrt(3) = 0.033409: [0.7082, 0.7572], i.e. -29% to -24%.
    out, cid = lines([1.76, 1.70, 1.80], [2.40, 2.30, 2.50])
    assert out[2] == (f"confirmation (3 interleaved re-run pairs, seeds [1, 2, 3]; comparison #{cid}): 1.37x slower "
                      "(−29% to −24%), 3 pairs vs Keras-default Adam 1e-3")
    assert "  reached the target on 3 of 3 seeds (baseline 3 of 3)" in out
    # Ratios 2.0, 2.5, 1.5: geometric mean 1.96x [1.04, 3.70].
    out, cid = lines([4.0, 5.0, 6.0], [2.0, 2.0, 4.0])
    assert out[2] == (f"confirmation (3 interleaved re-run pairs, seeds [1, 2, 3]; comparison #{cid}): 1.96x faster "
                      "(+4% to +270%), 3 pairs vs Keras-default Adam 1e-3")
    # A median over 1 inside the noise is not called faster: the word follows the interval's verdict.
    # Ratios 4.0/3.8 = 1.0526, 5.0/5.5 = 0.9091, 6.0/5.4 = 1.1111.
    out, cid = lines([4.0, 5.0, 6.0], [3.8, 5.5, 5.4])
    assert out[2].startswith(f"confirmation (3 interleaved re-run pairs, seeds [1, 2, 3]; comparison #{cid}): "
                             "inconclusive: 1.02x (−21% to +32%), 3 pairs")
    # Ctrl-C during the re-runs (a tester's case): 1 complete pair, said, and the stop said.
    out, cid = lines([1.14, 1.36, 1.2], [0.81, None, 0.9], stop_after=2)
    # 1.14 / 0.81 = 1.41, the one complete pair: a sample, labelled as such, not a result.
    assert out[2] == (f"confirmation (1 of 3 interleaved re-run pairs complete, seeds [1, 2, 3]; comparison #{cid}): "
                      "1.41x from one pair: not a result (an interval needs 3 pairs) vs Keras-default Adam 1e-3")
    assert out[-1] == "stopped by the user: what is above is what had been measured by then"
    assert ended == ["stopped", "stopped by the user"]  # ended by the autopilot's Stop, its pair kept


# --- real runs ------------------------------------------------------------------------------

FAST = {"precision": "mixed_bfloat16", "steps_per_execution": 4}
# The real search's planted fast trial: fast on every CPU this suite runs on (float32; bf16 is
# 20x slower than float32 on a Zen 3 without native bf16, and the trial then ran out of its share).
PLANTED_FAST = {"steps_per_execution": 4, "fused_optimizer": True}
SLOW = {"precision": "mixed_float16"}  # emulated on every CPU: far slower than anything else
BUDGET_S = 30  # the search fixture's budget: the shortest allowed (the suite's time)
RUNOFF = {"k": 2, "n_seeds": 1}  # the runoff's wiring at 2 runs, not the default's 12 (the suite's time)


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """One BUDGET_S search on digits (cnn, epoch cap 10), its first two trials planted (fast, slow);
    then the runoff and 1 confirming round of the fast configuration with its ablation (4 runs, 3
    comparisons), served by a played queue: their tests read what the autopilot stores, not training.

    A spare worker is ready before the search, as the dashboard prewarms one: the first trial
    started cold (12.6 s at load 8) counted twice against the 30 s (`time_needed`), or left the
    slow trial (still cold: 8 s to spare at load 8) too little to pass the best time in time."""
    home = tmp_path_factory.mktemp("autopilot")
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("SPEEDLAB_HOME", str(home))
            mp.setenv("SPEEDLAB_WARM_WORKER", "1")
            mp.setenv("SPEEDLAB_QUEUE_IDLE_S", "120")  # the spare waits for the search; end_queue ends both
            assert runner.prewarm() is True
            ready_spare(home)
            base = RunConfig(dataset="digits", model="cnn", batch_size=128, epochs=10)
            ap = autopilot.Autopilot(base, 0.95, BUDGET_S, seed=0, repeats=1, explain=True, lr_find="no",
                                     plant=(PLANTED_FAST, SLOW), facts=facts_from_quick(quick_facts()))
            t0 = time.monotonic()
            ap.search()
            search_wall = time.monotonic() - t0
            end_queue(home)  # its spare would only import: the played queue serves from here
            with PlayedQueue(home) as played:
                played.start()
                chosen, fast = ap.runoff(**RUNOFF), ap.base.replace(**PLANTED_FAST)
                conf = ap.confirm(fast, sp.ablation_configs(fast, ap.baseline))
            with _store(home) as store:
                comps = confirm.stored(store, conf)
            ablation = confirm.ablation_entries(ap.state["ablation"], comps["ablation"], ap.state)
    finally:  # before the module's tests read: the spare the idle queue starts would only import
        runner.cancel_active(home / "runs.sqlite")
        end_queue(home)
    return {"ap": ap, "search_wall": search_wall, "home": home, "fast": fast, "confirm": conf,
            "ablation": ablation, "chosen": chosen, "comparisons": comps}


def _store(home):
    from engine.store import Store

    return Store(home / "runs.sqlite")


@pytest.mark.worker
def test_search_ends_within_its_budget_and_stores_every_trial_with_its_reason(searched):
    ap = searched["ap"]
    # At the deadline the trial under way is cancelled: it ends with its execution under way
    # and its worker's exit (a few seconds at most here).
    assert searched["search_wall"] <= BUDGET_S + 6
    trials = ap.state["trials"]
    assert len(trials) >= 2
    store = _store(searched["home"])
    try:
        for t in trials:
            run = store.get_run(t["run_id"])
            assert run["role"] == "trial" and run["group_id"] == f"{ap.id}-t{t['trial']}"
            assert run["status"] in ("completed", "cancelled", "failed")
            info = run["summary"]["autopilot"]
            assert info["kind"] == t["kind"] and info["kind"] in ("reached", "pruned", "share", "budget",
                                                                   "not_reached", "failed")
            assert info["reason"] == t["reason"] and info["id"] == ap.id
        first = store.get_run(trials[0]["run_id"])
        # The fast trial ended itself at the target (stop_at_target), before its 10-epoch cap.
        assert trials[0]["kind"] == "reached" and first["status"] == "completed"
        assert first["summary"]["stopped_at_target"] is True
        assert first["summary"]["epochs_run"] < 10
        assert trials[0]["time_to_target_sec"] == pytest.approx(first["summary"]["time_to_target_sec"])
    finally:
        store.close()


@pytest.mark.worker
def test_planted_slow_trial_is_pruned_once_it_passes_the_best_time(searched):
    trials = searched["ap"].state["trials"]
    fast, slow = trials[0], trials[1]
    assert slow["planted"] and slow["changes"]["precision"] == "mixed_float16"
    assert slow["kind"] == "pruned" and slow["time_to_target_sec"] is None
    best = fast["time_to_target_sec"]
    assert f"slower than the best time so far ({best:.2f} s), it cannot win" in slow["reason"]
    # The training it used (the table's column) is more than where it was pruned: the line says why.
    stopped = f"; it stopped at {slow['elapsed_sec']:.2f} s, when the execution under way ended"
    assert slow["reason"].endswith(("it cannot win", stopped))
    assert slow["elapsed_sec"] > best  # it did run past the best time before it was stopped
    store = _store(searched["home"])
    try:
        run = store.get_run(slow["run_id"])
        assert run["status"] == "cancelled" and run["error"] == f"autopilot: {slow['reason']}"
    finally:
        store.close()


@pytest.mark.worker
def test_runoff_reruns_the_fastest_trials_on_new_seeds_and_picks_by_reach_then_mean(searched):
    ap, chosen = searched["ap"], searched["chosen"]
    reached = sorted((t for t in ap.state["trials"] if t["kind"] == "reached"),
                     key=lambda t: (t["time_to_target_sec"], t["trial"]))
    if len(reached) < 2:  # a busy machine may leave the planted fast trial the only one: no runoff then
        assert chosen is None and ap.state["runoff"] is None
        return
    finalists = reached[:RUNOFF["k"]]
    ro = ap.state["runoff"]
    assert ro["finalists"] == [t["trial"] for t in finalists] == [r["trial"] for r in ro["runs"]]
    assert ro["seeds"] == autopilot.runoff_seeds(ap.base.seed, ap.repeats, RUNOFF["n_seeds"])
    store = _store(searched["home"])
    try:
        for t, r in zip(finalists, ro["runs"]):
            searched_run = store.get_run(t["run_id"])
            assert len(r["run_ids"]) == len(r["rerun_secs"]) == RUNOFF["n_seeds"]
            for rid, secs, seed in zip(r["run_ids"], r["rerun_secs"], ro["seeds"]):
                run = store.get_run(rid)
                # The same configuration on a seed of its own.
                assert run["config"] == {**searched_run["config"], "seed": seed}
                assert (run["role"], run["group_id"]) == ("runoff", f"{ap.id}-r{t['trial']}")
                assert run["summary"]["autopilot"]["phase"] == "runoff"
                assert secs == (pytest.approx(run["summary"]["time_to_target_sec"])
                                if run["summary"].get("stopped_at_target") else None)
            assert r["time_to_target_sec"] == t["time_to_target_sec"]
    finally:
        store.close()
    expect = autopilot.choose_finalist(ro["runs"])
    assert chosen["trial"] == ro["choice"] == expect["trial"]
    assert chosen["mean_sec"] == pytest.approx(expect["mean_sec"]) and chosen["missed"] == expect["missed"]
    assert chosen["config"] == next(t["config"] for t in finalists if t["trial"] == chosen["trial"])


@pytest.mark.worker
def test_reruns_alternate_on_fresh_seeds_and_ablation_runs_differ_in_one_setting(searched):
    ap, conf, fast = searched["ap"], searched["confirm"], searched["fast"]
    abl = searched["ablation"]
    assert [a["technique"] for a in abl] == ["steps_per_execution", "fused_optimizer"]
    names = ["baseline", "winner", *(f"without {a['label']}" for a in abl)]
    assert [(r["round"], r["name"], r["seed"]) for r in conf["runs"]] == [(1, n, 1) for n in names]
    rid = {r["name"]: r["run_id"] for r in conf["runs"]}
    comps = searched["comparisons"]
    store = _store(searched["home"])
    try:
        b, w = store.get_run(rid["baseline"]), store.get_run(rid["winner"])
        assert (b["role"], w["role"], w["baseline_id"]) == ("baseline", "run", b["id"])
        assert RunConfig.from_dict(b["config"]) == ap.baseline.replace(seed=1)
        c = comps["confirmation"]
        assert c["status"] == "completed" and c["plan"] == [{"pair": 0, "seed": 1, "order": "AB",
                                                             "baseline_id": b["id"], "run_id": w["id"]}]
        secs = {r["name"]: r["time_to_target_sec"] for r in conf["runs"]}  # as the autopilot watched them
        assert c["result"]["time_to_accuracy"]["pairs"] == (1 if secs["baseline"] and secs["winner"] else 0)
        for a in abl:
            run = store.get_run(a["run_ids"][0])
            assert run["role"] == "ablation" and run["id"] == rid[f"without {a['label']}"]
            cfg = RunConfig.from_dict(run["config"])
            assert sp.techniques_used(cfg, fast) == [a["technique"]]
            assert cfg.replace(seed=fast.seed) == fast.replace(**{f: getattr(ap.baseline, f)
                                                                   for f in sp.TECHNIQUE_FIELDS[a["technique"]]})
            # One pair: the factor is the ablated run's time over the winner's of the same round.
            mine, win = secs[f"without {a['label']}"], secs["winner"]
            if mine and win:
                assert a["factor"] == pytest.approx(mine / win)
    finally:
        store.close()


def test_max_lr_choices_come_from_the_lr_range_test(store_home):
    from engine.lr_find import range_test as lr_find

    assert autopilot.lr_choices({"suggested": 0.0033, "steepest": 0.0033, "min_over_10": 0.0071}) == [0.0033, 0.0071]
    # With the minimum loss's LR (0.071): its third (0.0237) is offered above the rules.
    full = {"suggested": 0.0033, "steepest": 0.0033, "min_over_10": 0.0071, "min_loss_lr": 0.071}
    assert autopilot.lr_choices(full) == pytest.approx([0.0033, 0.0071, 0.071 / 3])
    assert autopilot.lr_choices({"min_loss_lr": 0.071}) == []  # no rule's value (no signal): nothing
    base = DIGITS
    got = autopilot.choose_max_lr(base, 60)  # nothing stored, budget under 120 s: no test
    assert got == {"value": 0.005, "choices": [0.005], "hint": 0.005,
                   "source": "no LR range test (budget under 120 s): 5x the base learning rate"}
    assert autopilot.choose_max_lr(base, 60, max_lr=0.02)["choices"] == [0.02]
    lr_find.save({"config": base.to_dict(), "suggestion": {"suggested": 0.0033, "steepest": 0.0033,
                                                           "min_over_10": 0.0071}})
    got = autopilot.choose_max_lr(base, 60)
    assert (got["value"], got["choices"], got["source"]) == (0.0071, [0.0033, 0.0071], "the stored LR range test")
    assert got["hint"] == 0.0071
    lr_find.save({"config": base.to_dict(), "suggestion": full})
    got = autopilot.choose_max_lr(base, 60)
    assert got["choices"] == pytest.approx([0.0033, 0.0071, 0.071 / 3]) and got["hint"] == 0.0071
    # A peak not above the base LR (mnist5k's test: steepest 0.00081 at a base LR of 0.001) is left out,
    # not proposed: RunConfig refuses it, and the sampler proposed it 3,919 times in one search.
    lr_find.save({"config": base.to_dict(), "suggestion": {"suggested": 0.0040, "steepest": 0.00081,
                                                           "min_over_10": 0.0040, "min_loss_lr": 0.0404}})
    got = autopilot.choose_max_lr(base, 60)
    assert got["choices"] == pytest.approx([0.0040, 0.0404 / 3]) and got["hint"] == 0.0040
    assert got["source"] == "the stored LR range test; 0.00081 left out (not above the base learning rate 0.001)"
    lr_find.save({"config": base.to_dict(), "suggestion": {"suggested": 0.0009, "steepest": 0.0009}})
    got = autopilot.choose_max_lr(base, 60)
    assert got["choices"] == [0.005] and got["source"] == (
        "the stored LR range test; 0.0009 left out (not above the base learning rate 0.001): "
        "5x the base learning rate instead")
    # A test for another model does not count.
    assert autopilot.choose_max_lr(base.replace(model="mlp"), 60)["choices"] == [0.005]
    # --lr-find no: none at all, though one is stored for these very settings.
    assert autopilot.choose_max_lr(base, 60, lr_find="no") == {
        "value": 0.005, "choices": [0.005], "hint": 0.005, "source": "no LR range test (--lr-find no): 5x the base learning rate"}


def test_a_stop_during_the_lr_range_test_falls_back_at_once(store_home, monkeypatch):
    import threading

    from engine.lr_find import range_test as lr_find

    def failing_test(cfg, stop=None):  # what lr_find.run raises once `stop` is set (or when it fails)
        raise lr_find.LRFindError("LR range test stopped")

    monkeypatch.setattr(lr_find, "run", failing_test)
    stop = threading.Event()
    stop.set()
    got = autopilot.choose_max_lr(DIGITS, 60, lr_find="yes", stop=stop)
    assert got == {"value": 0.005, "choices": [0.005], "hint": 0.005, "source": "none: stopped during the LR range test"}
    with pytest.raises(lr_find.LRFindError):  # not stopped: a failing test is an error as before
        autopilot.choose_max_lr(DIGITS, 60, lr_find="yes", stop=threading.Event())


def test_the_ablation_is_measured_in_the_confirming_rounds_as_interleaved_pairs(store_home, monkeypatch):
    """confirm() with the ablation plan, with stand-in runs (no worker): every configuration runs
    in every round, order reversed every other round; the confirmation and each technique's
    ablation are rows of the `comparisons` table with their plans and results (engine.report.
    comparison.evaluate): the factor is the geometric mean of (ablated time / winner's time) over
    the rounds, with its interval, and the split."""
    from engine.autopilot.explain import explanation
    from engine.store import Store
    from engine.store import comparisons as cstore

    ap = autopilot.Autopilot(DIGITS, 0.95, 60, repeats=3, explain=True, lr_find="no", facts=cpu_facts())
    winner = ap.base.replace(**FAST)
    ap.state["winner"] = {"config": winner.to_dict()}
    plan = sp.ablation_configs(winner, ap.baseline)
    assert [a["technique"] for a in plan] == ["precision", "steps_per_execution"]
    # Seconds to 0.95 per configuration and round (seeds 1, 2, 3); steady samples/s per configuration.
    secs = {"baseline": [4.0, 5.0, 6.0], "winner": [2.0, 2.0, 3.0],
            "without bfloat16": [3.0, 3.0, 4.5], "without 4 steps per execution": [2.2, 1.9, 3.3]}
    rate = {"baseline": 1000.0, "winner": 2000.0, "without bfloat16": 1500.0, "without 4 steps per execution": 1800.0}
    # Test accuracy per round: the winner's minus the baseline's is +0.02, +0.01, 0.0.
    test = {"baseline": [0.95] * 3, "winner": [0.97, 0.96, 0.95]}
    order = []

    def submit(cfg, role, group, store_path, stop, deadline, baseline_id=None):
        st = Store(store_path)
        try:
            rid = st.create_run(cfg.to_json(), role=role, group_id=group)
        finally:
            st.close()
        return rid

    def watch(rid, store, target, best=None, stop=None, **kw):
        name, r = ap.state["current"]["name"], ap.state["current"]["round"] - 1
        order.append((r + 1, name))
        t = secs[name][r]
        # Every run trains 1,000 samples an epoch and reaches the target at its 2nd validation.
        store.update_run(rid, status="running", started=1.0, plan={"n_train": 1000, "dropped_samples_per_epoch": 0})
        store.add_metrics(rid, epochs=[(0, t / 2, 8, 0.5, 0.9, 0.4, 0.90, 0.001), (1, t, 16, 0.3, 0.96, 0.2, 0.96, 0.001)])
        store.finish_run(rid, "completed", summary={"samples_per_sec": rate[name], "target_accuracy": 0.95,
                                                    "test_accuracy": test.get(name, [0.95] * 3)[r]})
        return {"run_id": rid, "status": "completed", "kind": "reached", "reason": "reached", "time_to_target_sec": t,
                "elapsed_sec": t}

    monkeypatch.setattr(autopilot, "submit_when_free", submit)
    monkeypatch.setattr(autopilot, "watch_run", watch)
    conf = ap.confirm(winner, plan)
    names = ["baseline", "winner", "without bfloat16", "without 4 steps per execution"]
    assert order == [(1, n) for n in names] + [(2, n) for n in reversed(names)] + [(3, n) for n in names]
    rid = {(x["round"] - 1, x["name"]): x["run_id"] for x in conf["runs"]}
    ids = conf["comparisons"]
    assert ids["extra"] == {} and set(ids["ablation"]) == {"precision", "steps_per_execution"}
    with Store(store_home / "runs.sqlite") as store:
        rows = {c["id"]: c for c in cstore.list_all(store)}
        comps = confirm.stored(store, conf)
    # One row per comparison, each its own group, all ended by the autopilot's process.
    assert sorted(rows) == sorted([ids["confirmation"], *ids["ablation"].values()])
    assert len({c["group_id"] for c in rows.values()}) == 3
    c = rows[ids["confirmation"]]
    assert (c["kind"], c["status"], c["ended_by"]) == ("ab", "completed", "the 3 pairs asked for")
    assert c["settings"]["baseline_kind"] == "default" and c["settings"]["pairs"] == 3
    assert c["settings"]["autopilot"] == {"id": ap.id, "key": "confirmation", "role": "confirmation",
                                          "kind": "autopilot confirmation"}
    # Round 2 runs the names reversed: the winner before the baseline, so that pair is BA.
    assert c["plan"] == [{"pair": r, "seed": r + 1, "order": o, "baseline_id": rid[r, "baseline"],
                          "run_id": rid[r, "winner"]} for r, o in enumerate(["AB", "BA", "AB"])]
    r = c["result"]
    # Baseline / winner: 4/2, 5/2, 6/3 = 2.0, 2.5, 2.0: geometric mean exp((2 ln 2 + ln 2.5) / 3) = 2.1544.
    assert r["time_to_accuracy"]["speedup"] == pytest.approx(math.exp((2 * math.log(2) + math.log(2.5)) / 3))
    assert r["pairs"] == 3 and r["time"]["runs"] == 6
    # Its split: 2x throughput (2000 / 1000 samples/s) x 1 x the rest.
    assert r["factors"]["throughput"]["speedup"] == pytest.approx(2.0)
    # And its test accuracy, winner minus baseline: mean +0.01, sd 0.01, half 4.302653 x 0.01 / sqrt(3)
    # = 0.024842: [-0.014842, +0.034842], as a comparison of pairs gives it.
    delta = r["test_accuracy_delta"]
    assert delta["mean"] == pytest.approx(0.01) and delta["pairs"] == 3
    assert delta["ci95"] == pytest.approx([-0.014842, 0.034842], abs=1e-6)
    a = rows[ids["ablation"]["precision"]]
    assert a["settings"]["autopilot"]["kind"] == "autopilot ablation: without bfloat16"
    # Baseline side: the run without bfloat16; run side: the winner's run of the same round (the
    # winner runs before it in rounds 1 and 3: BA).
    assert a["plan"] == [{"pair": r, "seed": r + 1, "order": o, "baseline_id": rid[r, "without bfloat16"],
                          "run_id": rid[r, "winner"]} for r, o in enumerate(["BA", "AB", "BA"])]
    out = confirm.ablation_entries(ap.state["ablation"], comps["ablation"], ap.state)
    bf16, spe = out
    # Ablated / winner: 1.5, 1.5, 1.5: geometric mean 1.5, a zero-width interval: faster (bf16 helps); the
    # winner's test accuracy against its ablation, +2, +1, 0 points, has the interval −1.5 to +3.5: the
    # comparison's verdict, which the ablation shows too, is not plain 'faster' (the comparisons' rule).
    assert bf16["factor"] == pytest.approx(1.5) and bf16["ci95"] == pytest.approx([1.5, 1.5])
    assert bf16["verdict"] == a["result"]["verdict"] == "faster, accuracy not held" and bf16["interval_pairs"] == 3
    assert bf16["run_ids"] == [rid[r, "without bfloat16"] for r in range(3)]
    # Its split: throughput 2000 / 1500 = 1.333x, samples 2000 / 2000 = 1.0, the rest 1.5 / 1.333 = 1.125.
    f = a["result"]["factors"]
    assert f["throughput"]["speedup"] == pytest.approx(4 / 3) and f["sample_efficiency"]["speedup"] == pytest.approx(1)
    assert f["outside_training"]["speedup"] == pytest.approx(1.125)
    # Steps per execution: 1.1, 0.95, 1.1: logs 0.09531, -0.05129, 0.09531; interval holds 1: inconclusive.
    assert spe["factor"] == pytest.approx(math.exp((2 * math.log(1.1) + math.log(0.95)) / 3))
    assert spe["verdict"] == "inconclusive"
    assert "each factor from 3 interleaved pairs with the winner" in explanation(out)
