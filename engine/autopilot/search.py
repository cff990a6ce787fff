"""Autopilot: search this machine for the fastest route to a target validation
accuracy, confirm the winner against the baseline, and explain it. No TF here.

Three phases, every run a real stored run in its own worker (engine.jobs.runner):

1. **Search** (within `budget_s` wall-clock seconds). Optuna's ask-and-tell
   interface (Akiba et al. 2019, "Optuna", arXiv:1907.10902) with a seeded TPE
   sampler proposes configurations from the hardware-aware space
   (engine.autopilot.space); the objective is the time to target: seconds
   from the start of training to the first validation at or above the target
   (each trial stops there: `stop_at_target`), and a trial is pruned by time
   (engine.autopilot.watch.stop_reason: no library prunes on time). A trial is role 'trial',
   group 'autopilot-<id>-t<n>'; its summary's 'autopilot' entry says why it ended.
2. **Runoff and confirm** (no winner's curse): the search's FINALISTS fastest trials that
   reached the target re-run on RUNOFF_SEEDS new seeds; the one that reached it on the most,
   then with the lowest mean time, wins (`choose_finalist`). Then the winner and the baseline
   (engine.config.baseline_config) re-run in `repeats` rounds, AB, BA, AB, ..., on seeds the
   search did not use: a stored comparison (engine.autopilot.confirm), as the Train page's.
3. **Explain**: a leave-one-out ablation, the winner with one technique at a time
   switched back to the baseline's setting, run inside the same rounds: each factor is a
   stored comparison of the winner against the winner without it (engine.autopilot.confirm).
   With `repeats` 0 there is neither (NO_REPEATS).

Live state goes to `on_update(state)` (the Autopilot page follows it: engine.autopilot.job).
Beside this module: `settings` (the check, the seeds), `watch` (one run followed and pruned),
`peak_lr` (one-cycle's peak LR), `confirm` (the confirmation's comparisons), `explain` (the
ablation in words).
"""
from __future__ import annotations

import statistics
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Optional

from engine.config import RunConfig, baseline_config
from engine.base.errors import ConfigError
from engine.autopilot import space as space_mod
from engine.autopilot.confirm import TUNED, Rounds
from engine.autopilot.peak_lr import choose_max_lr
from engine.autopilot.settings import FINALISTS, RUNOFF_SEEDS, check_settings, runoff_seeds
from engine.autopilot.watch import label_run, stop_why, submit_when_free, watch_run
from engine.store import Store, default_path
# Re-exported for what reaches the autopilot as `search as autopilot` (pages, CLI, tests):
from engine.autopilot.job import (AutopilotError, cancel_background, progress_path,  # noqa: F401
                                  read_progress, start_background)
from engine.autopilot.peak_lr import lr_choices  # noqa: F401
from engine.autopilot.settings import MAX_SEED  # noqa: F401
from engine.autopilot.watch import stop_reason  # noqa: F401

# A trial may use at most this share of the budget as training time (s) ...
TRIAL_SHARE = 0.25
# ... but never less than this (s): a small budget must still let one trial reach the target.
MIN_TRIAL_LIMIT_S = 10.0
# Random proposals before TPE models the results (trials are expensive: few of them).
N_STARTUP_TRIALS = 4
# Proposals that repeat an earlier trial are answered from it; this many in a row end the search.
MAX_DUPLICATES = 50
# A backend other than the base's is left out once this many of its trials were all
# pruned during their warm-up (`backends_left_out`).
BACKEND_SLOW_WARMUPS = 2
# What --repeats 0 (the page's 0 re-runs) means, said where it is set and in the state.
NO_REPEATS = ("0 re-runs: no confirmation and no ablation (the winner's time is its search time alone, "
              "one run on one seed)")
# Roles of the runs an autopilot submits besides the re-run pairs ('baseline', 'run').
ROLES = ("trial", "runoff", "ablation")


def trial_limit(budget_s: float, share: float = TRIAL_SHARE) -> float:
    """Training seconds one trial may use: `share` of the budget, at least MIN_TRIAL_LIMIT_S."""
    return max(budget_s * share, MIN_TRIAL_LIMIT_S)


def backends_left_out(trials: list[dict], base_backend: str, after: int = BACKEND_SLOW_WARMUPS) -> dict:
    """{backend: one line} for each backend other than `base_backend` whose trials so far
    (at least `after`) were all pruned while still in their first execution: the warm-up
    alone (tracing and compiling; JAX compiles each step with XLA) outlasted the best time
    ('first_execution_sec' None or at least 'best_before_sec', the best time the trial was
    pruned against), so no trial on that backend can win on this machine. A backend with
    one trial past its warm-up stays in."""
    def slow_start(t: dict) -> bool:
        first, best = t.get("first_execution_sec"), t.get("best_before_sec")
        return t["kind"] == "pruned" and best is not None and (first is None or first >= best)

    out = {}
    for backend in sorted({t["config"].get("backend") for t in trials} - {base_backend, None}):
        mine = [t for t in trials if t["config"].get("backend") == backend]
        if len(mine) >= after and all(slow_start(t) for t in mine):
            out[backend] = (f"backend {backend} left out after {len(mine)} trials: each was still in its warm-up "
                            f"(first execution) when it passed the best time")
    return out


def time_needed(trials: list[dict], best: Optional[dict]) -> float:
    """Wall time (s) a new trial needs to beat `best`: the median start-up of the
    trials so far (submission to training start, 'startup_sec') + the best time to
    target; 0 before any trial started. The median, not the quickest: start-ups
    vary by a second or two, and a trial started on the quickest could reach the
    deadline before its training started ("budget ran out after 0.0 s", seen once)."""
    starts = [t["startup_sec"] for t in trials if t.get("startup_sec")]
    if not starts:
        return 0.0
    return statistics.median(starts) + (best["time_to_target_sec"] if best else 0.0)


def search_end_note(left: float, need: float, have_best: bool) -> str:
    """The note that ends the search: `left` budget seconds left, `need` the wall
    seconds a new trial needs (`time_needed`; 0 when nothing is known yet),
    `have_best` whether a trial reached the target (its time is part of `need`)."""
    if left <= 0 or need <= 0:
        return "search ended: the budget ran out"
    return (f"search ended with {left:.0f} s of the budget left: a new trial needs at least {need:.0f} s "
            f"(worker start-up{' + the best time' if have_best else ''})")


def _baseline_label(kind: str, cfg: RunConfig, tuned: Optional[dict] = None) -> Optional[str]:
    from engine.report.comparison import baseline_label

    return baseline_label(kind, cfg.to_dict(), tuned)


def choose_finalist(finalists: list[dict]) -> dict:
    """The runoff's winner. Each finalist has its search time ('time_to_target_sec', s, on
    the search's seed) and its re-runs' times on the runoff's seeds ('rerun_secs', s; None
    where a re-run missed the target). The finalist that missed on the fewest runoff seeds
    wins, then the lowest mean of its search time and the re-runs that reached (s), then
    the earlier trial ('trial'). So a route that reaches the target only on a lucky seed
    loses to one that reaches it on every seed (issue 40: a 2-epoch one-cycle winner,
    re-run on its own search seed, then reached 0.965 on 0 of 5 confirming seeds).

    Returns: the chosen entry with 'missed' (runoff seeds missed) and 'mean_sec' (s).
    Raises: ValueError for an empty list.
    """
    if not finalists:
        raise ValueError("no finalists")

    def scored(f: dict) -> dict:
        reruns = list(f.get("rerun_secs") or [])
        reached = [x for x in reruns if x is not None]
        times = [f["time_to_target_sec"], *reached]
        return {**f, "missed": len(reruns) - len(reached), "mean_sec": sum(times) / len(times)}

    return min((scored(f) for f in finalists), key=lambda f: (f["missed"], f["mean_sec"], f["trial"]))


class Proposer:
    """Seeded proposals over a SearchSpace with Optuna's ask-and-tell interface
    (https://optuna.readthedocs.io/en/stable/tutorial/20_recipes/009_ask_and_tell.html).

    The TPE sampler (Bergstra et al. 2011) starts with N_STARTUP_TRIALS random
    proposals, then models the results; `hint` (parameters, or a list of them) is
    proposed first, in order (each counts as one of the startup proposals).
    The same seed and the same results told give the same proposals.
    """

    def __init__(self, space: space_mod.SearchSpace, seed: int, hint=None,
                 n_startup: int = N_STARTUP_TRIALS):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.space = space
        self._state = optuna.trial.TrialState
        self.study = optuna.create_study(
            direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=n_startup))
        for h in ([hint] if isinstance(hint, dict) else hint or []):
            if h:
                self.study.enqueue_trial(h)

    def ask(self):
        """(optuna trial, parameters {name: value})."""
        trial = self.study.ask()
        return trial, space_mod.suggest(trial, self.space)

    def tell(self, trial, value: Optional[float] = None, elapsed: Optional[float] = None,
             failed: bool = False) -> None:
        """Report a trial: `value` its time to target (s); else pruned after
        `elapsed` training seconds (a lower bound on its time); `failed` for an error."""
        if failed:
            self.study.tell(trial, state=self._state.FAIL)
        elif value is not None:
            self.study.tell(trial, float(value))
        else:
            trial.report(float(elapsed or 0.0), 0)
            self.study.tell(trial, state=self._state.PRUNED)


def machine_facts() -> dict:
    """The cached hardware probe's facts when there are any, else the quick
    facts (no TensorFlow, no probe: the autopilot must not spend its budget on it)."""
    from engine.hardware import verdicts
    from engine.hardware.machine import quick_facts

    return verdicts.cached_facts() or space_mod.facts_from_quick(quick_facts())


# --- the three phases ----------------------------------------------------------------

class Autopilot:
    """One autopilot: `run()` searches, confirms and explains; `state` is its
    live, JSON-able state (also passed to `on_update` after every change).

    Args:
        base: the user's settings (data, model, batch = the baseline's global
            batch, epochs = the cap per run, optimizer, learning rate, seed).
        target: validation accuracy to reach (0-1].
        budget_s: wall-clock seconds for the search (the LR range test, when it
            runs, included); the re-runs and the ablation follow it.
        seed: the sampler's seed (default base.seed; trials run on base.seed,
            re-runs on the seeds after it).
        repeats: alternating re-runs each of the winner and the baseline (0: none).
        explain: run the leave-one-out ablation.
        facts: hardware facts (default `machine_facts()`).
        plant: RunConfig changes tried as the first trials, before any proposal
            (e.g. a configuration known to be slow, to see it pruned).
        extra: {name: RunConfig} re-run alongside the winner and the baseline
            (benchmarks/autopilot.py adds the hand-tuned preset).
        lr_find / max_lr: see `choose_max_lr`.
        finalists: how many of the search's fastest trials the runoff re-runs (< 2: none).
    Raises: ConfigError (one line) for bad settings, before anything runs.
    """

    def __init__(self, base: RunConfig, target: float, budget_s: float, seed: Optional[int] = None, repeats: int = 3,
                 explain: bool = True, facts: Optional[dict] = None, plant: tuple = (),
                 extra: Optional[dict] = None, lr_find: str = "auto", max_lr: Optional[float] = None,
                 store_path=None, on_update: Optional[Callable[[dict], None]] = None,
                 stop: Optional[threading.Event] = None, share: float = TRIAL_SHARE, finalists: int = FINALISTS):
        from engine.hardware.verdicts import verdicts

        check_settings(budget_s, target, repeats, seed=base.seed, max_lr=max_lr,
                       learning_rate=base.learning_rate)
        if lr_find not in ("auto", "yes", "no"):
            raise ConfigError("lr_find", lr_find, "is not supported", "use auto, yes or no")
        self.base = base.replace(target_accuracy=float(target), stop_at_target=True)
        # This machine's checks (data or its download, devices, weights) as `engine run` makes them:
        # an offline, uncached data set was refused only once the search had started (exit 1).
        from engine.config.preflight import check_runnable

        check_runnable(self.base)
        self.baseline = baseline_config(self.base)
        self.target, self.budget_s = float(target), float(budget_s)
        self.seed = int(base.seed if seed is None else seed)
        self.repeats, self.do_explain, self.share, self.finalists = repeats, explain, share, finalists
        self.plant = [self.base.replace(**p) for p in plant]
        self.extra = {k: c.replace(target_accuracy=float(target), stop_at_target=True)
                      for k, c in (extra or {}).items()}
        # The winner is also confirmed against the tuned baseline when one is stored
        # (python -m engine tune-baseline): against Keras's default LR alone, a speedup
        # mixes engineering with optimisation a tuned baseline would also get.
        from engine.store import tuned_baselines

        from engine.hardware.fingerprint import row_here, short as fingerprint_short

        self.tuned = tuned_baselines.lookup(self.base, row_here, store_path)
        if self.tuned is not None and TUNED not in self.extra:
            self.extra[TUNED] = self.baseline.replace(**tuned_baselines.config_fields(self.tuned))
        self.lr_find, self.max_lr_given = lr_find, max_lr
        self.facts = facts if facts is not None else machine_facts()
        self.verdicts = verdicts(self.facts, self.base.device_type)
        self.space = space_mod.search_space(self.verdicts, self.base, self.facts,
                                            other_backends=self.budget_s >= space_mod.BACKEND_MIN_BUDGET_S)
        self.store_path = Path(store_path) if store_path else default_path()
        self.on_update = on_update or (lambda state: None)
        self.stop = stop or threading.Event()
        self.id = "autopilot-" + uuid.uuid4().hex[:6]
        self.state = {
            "id": self.id, "phase": "starting", "dataset": self.base.dataset, "model": self.base.model,
            "baseline_label": _baseline_label("default", self.baseline),
            "tuned_label": _baseline_label("tuned", self.extra[TUNED], self.tuned) if TUNED in self.extra else None,
            "target_accuracy": self.target, "budget_sec": self.budget_s, "seed": self.seed,
            "repeats": repeats, "explain": explain, "base_config": self.base.to_dict(),
            "baseline_config": self.baseline.to_dict(), "space": self.space.to_dict(),
            "trial_limit_sec": trial_limit(self.budget_s, share), "max_lr": None,
            "search_started": None, "search_deadline": None, "search_wall_sec": None,
            "trials": [], "best": None, "current": None, "notes": [], "confirm": None,
            "runoff": None, "ablation": None, "winner": None,
            "tried": None, "fingerprint": fingerprint_short(),  # the machine every figure here was measured on
        }

    # -- state ------------------------------------------------------------------
    def _update(self, **changes) -> None:
        self.state.update(changes)
        self.on_update(self.state)

    def _trial_label(self, cfg: RunConfig) -> str:
        return space_mod.describe(cfg, self.baseline)

    # -- phase 1 ---------------------------------------------------------------
    def search(self) -> Optional[dict]:
        """Run trials until the budget (minus what a winning trial still needs)
        is spent; returns the best trial entry, or None when none reached the target."""
        t0 = time.monotonic()
        deadline = t0 + self.budget_s
        self._update(phase="search", search_started=time.time(), search_deadline=time.time() + self.budget_s)
        self._update(max_lr=choose_max_lr(self.base, self.budget_s, self.lr_find, self.max_lr_given, self.stop))
        self.space = space_mod.search_space(self.verdicts, self.base, self.facts, self.state["max_lr"]["choices"],
                                            other_backends=self.budget_s >= space_mod.BACKEND_MIN_BUDGET_S)
        self._update(space=self.space.to_dict())
        hint = space_mod.hint_params(self.space, self.verdicts, self.state["max_lr"].get("hint"))
        proposer = Proposer(self.space, self.seed, [hint, space_mod.short_cycle_hint(self.space, hint)])
        store = Store(self.store_path)
        seen: dict[str, dict] = {}
        planted = list(self.plant)
        duplicates = skipped = invalid = 0
        left_out: dict[str, str] = {}
        limit = trial_limit(self.budget_s, self.share)
        try:
            while not self.stop.is_set():
                left = deadline - time.monotonic()
                need = self._time_needed()
                if left <= 0 or left < need:
                    self._note(search_end_note(left, need, self.state["best"] is not None))
                    break
                if planted:
                    otrial, params, cfg = None, None, planted.pop(0)
                else:
                    otrial, params = proposer.ask()
                    try:
                        cfg = space_mod.trial_config(self.base, params, self.state["max_lr"]["value"])
                    except ConfigError as e:
                        proposer.tell(otrial, failed=True)
                        # Once each: a sampler can propose the same invalid setting thousands of times
                        # (a note per proposal made the live state 0.5 MB, rewritten on every update).
                        line = f"proposal skipped: {e}"
                        if line not in self.state["notes"]:
                            self._note(line)
                        invalid += 1
                        if invalid >= MAX_DUPLICATES:
                            self._note(f"search ended: {MAX_DUPLICATES} proposals in a row were invalid")
                            break
                        continue
                    invalid = 0
                if otrial is not None and cfg.backend in left_out:
                    # Told as stopped at the best time, which is where it would have been pruned.
                    proposer.tell(otrial, None, (self.state["best"] or {}).get("time_to_target_sec"))
                    skipped += 1
                    if skipped >= MAX_DUPLICATES:
                        self._note(f"search ended: {MAX_DUPLICATES} proposals in a row were on a backend left out")
                        break
                    continue
                skipped = 0
                key = cfg.to_json()
                if key in seen and otrial is not None:
                    prev = seen[key]
                    proposer.tell(otrial, prev["time_to_target_sec"], prev["elapsed_sec"], prev["kind"] == "failed")
                    duplicates += 1
                    if duplicates >= MAX_DUPLICATES:
                        self._note(f"search ended: {MAX_DUPLICATES} proposals in a row repeated earlier trials")
                        break
                    continue
                duplicates = 0
                entry = self._trial(store, cfg, params, limit, deadline)
                if entry is None:
                    break
                seen[key] = entry
                for backend, line in backends_left_out(self.state["trials"], self.base.backend).items():
                    if backend not in left_out:
                        left_out[backend] = line
                        self._note(line)
                if otrial is not None:
                    proposer.tell(otrial, entry["time_to_target_sec"] if entry["kind"] == "reached" else None,
                                  entry["elapsed_sec"], entry["kind"] == "failed")
        finally:
            store.close()
        self._update(search_wall_sec=time.monotonic() - t0, current=None,
                     tried=space_mod.techniques_tried(self.state["trials"], self.baseline))
        return self.state["best"]

    def _time_needed(self) -> float:
        """Wall time (s) a new trial needs to beat the best (`time_needed`)."""
        return time_needed(self.state["trials"], self.state["best"])

    def _note(self, line: str) -> None:
        self._update(notes=[*self.state["notes"], line])

    def _trial(self, store: Store, cfg: RunConfig, params: Optional[dict], limit: float,
               deadline: float) -> Optional[dict]:
        n = len(self.state["trials"]) + 1
        best = self.state["best"]
        rid = submit_when_free(cfg, "trial", f"{self.id}-t{n}", self.store_path, self.stop, deadline)
        if rid is None:
            self._note("search ended: another run held the machine until the budget ran out"
                       if not self.stop.is_set() else f"search {stop_why(self.stop)}")
            return None
        label = self._trial_label(cfg)
        self._update(current={"phase": "search", "trial": n, "run_id": rid, "label": label,
                              "best_sec": best["time_to_target_sec"] if best else None, "limit_sec": limit,
                              "elapsed_sec": 0.0})

        def tick(elapsed):
            cur = self.state.get("current") or {}
            if abs(cur.get("elapsed_sec", 0.0) - elapsed) >= 0.5:
                self._update(current={**cur, "elapsed_sec": elapsed})

        out = watch_run(rid, store, self.target, best=best["time_to_target_sec"] if best else None,
                        limit=limit, deadline=deadline, stop=self.stop, on_tick=tick)
        entry = {"trial": n, "run_id": rid, "params": params, "planted": params is None, "label": label,
                 "best_before_sec": best["time_to_target_sec"] if best else None,
                 "changes": space_mod.config_changes(cfg, self.baseline), "config": cfg.to_dict(), **out}
        improved = out["kind"] == "reached" and (best is None or out["time_to_target_sec"] < best["time_to_target_sec"])
        if improved:
            best = dict(entry)
        entry["best_so_far_sec"] = best["time_to_target_sec"] if best else None
        label_run(store, rid, {"id": self.id, "phase": "search", "trial": n, "kind": out["kind"],
                                "reason": out["reason"], "params": params})
        self._update(trials=[*self.state["trials"], entry], best=best, current=None)
        return entry

    # -- phase 2 ----------------------------------------------------------------
    def runoff(self, k: int = FINALISTS, n_seeds: int = RUNOFF_SEEDS) -> Optional[dict]:
        """Re-run the search's `k` fastest trials that reached the target (distinct
        configurations) on each of `n_seeds` `runoff_seeds` (seed by seed, the finalists in turn,
        so their runs on a seed are close in time), and choose the winner by
        `choose_finalist`. Each re-run is a stored run, role 'runoff', group '<id>-r<trial>'.

        Returns: the chosen trial entry ('rerun_secs', 'missed', 'mean_sec' added), or None
        when fewer than 2 trials reached the target or the autopilot was stopped.
        """
        reached = sorted((t for t in self.state["trials"] if t["kind"] == "reached"),
                         key=lambda t: (t["time_to_target_sec"], t["trial"]))[:k]
        if self.stop.is_set():
            return None
        if len(reached) < 2:  # promised before Start: say why it did not run
            self._note(f"no runoff: {len(reached)} trial{'' if len(reached) == 1 else 's'} reached the target, "
                       "so there was nothing to choose between on new seeds")
            return None
        seeds = runoff_seeds(self.base.seed, self.repeats, n_seeds)
        runs = [{"trial": t["trial"], "label": t["label"], "time_to_target_sec": t["time_to_target_sec"],
                 "run_ids": [], "rerun_secs": [], "reasons": []} for t in reached]
        self._update(phase="runoff", runoff={"finalists": [t["trial"] for t in reached], "seeds": seeds,
                                             "runs": runs, "choice": None})
        store = Store(self.store_path)
        try:
            for seed in seeds:
                for t, r in zip(reached, runs):
                    cfg = RunConfig.from_dict(t["config"]).replace(seed=seed)
                    rid = submit_when_free(cfg, "runoff", f"{self.id}-r{t['trial']}", self.store_path, self.stop,
                                            None)
                    if rid is None:
                        return None
                    self._update(current={"phase": "runoff", "trial": t["trial"], "run_id": rid,
                                          "label": t["label"], "seed": seed})
                    out = watch_run(rid, store, self.target, stop=self.stop)
                    label_run(store, rid, {"id": self.id, "phase": "runoff", "trial": t["trial"], "seed": seed,
                                            "kind": out["kind"], "reason": out["reason"]})
                    if out["kind"] == "stopped":
                        return None
                    r["run_ids"].append(rid)
                    r["rerun_secs"].append(out["time_to_target_sec"])
                    r["reasons"].append(out["reason"])
                    self._update(runoff={**self.state["runoff"], "runs": runs}, current=None)
        finally:
            store.close()
        choice = choose_finalist(runs)
        self._update(runoff={**self.state["runoff"], "choice": choice["trial"], "mean_sec": choice["mean_sec"],
                             "missed": choice["missed"]})
        return next({**t, "mean_sec": choice["mean_sec"], "rerun_secs": choice["rerun_secs"],
                     "missed": choice["missed"]} for t in reached if t["trial"] == choice["trial"])

    def confirm(self, winner: RunConfig, ablations: Optional[list] = None) -> dict:
        """Re-run the baseline and the winner (and `extra`, and the leave-one-out `ablations`:
        space.ablation_configs entries) in `repeats` rounds, round r on seed base.seed + 1 + r:
        every configuration in every round, the order reversed every other round
        (engine.autopilot.confirm.round_names). Each comparison they make (the winner against the
        baseline, against each extra, each extra against the baseline, the winner against itself
        without one technique) is a stored comparison (engine.autopilot.confirm.Rounds), its
        plan and result stored after every run and ended when the rounds end or Stop.
        Returns: {'repeats', 'seeds', 'runs' (per run: 'round', 'name', 'seed', watch_run's
        outcome), 'planned' (runs), 'started' (Unix s), 'comparisons' (`Rounds.state`: their ids)}."""
        abl = {f"without {a['label']}": a for a in (ablations or []) if a.get("config") is not None}
        names = {"baseline": self.baseline, "winner": winner, **self.extra,
                 **{n: a["config"] for n, a in abl.items()}}
        seeds = [self.base.seed + 1 + r for r in range(self.repeats)]
        runs: list[dict] = []
        store = Store(self.store_path)
        try:
            rounds = Rounds(store, self.id, list(names), list(self.extra), abl, self.repeats, seeds,
                            self.tuned if TUNED in self.extra else None, self.state["fingerprint"])
            # 'planned' and 'started' let the page count the rounds down (engine.autopilot.rerun_time).
            self._update(phase="confirm", confirm={"repeats": self.repeats, "seeds": seeds, "runs": runs,
                                                   "planned": len(names) * self.repeats, "started": time.time(),
                                                   "comparisons": rounds.state()},
                         ablation=[{"technique": a["technique"], "label": a["label"], "note": a["error"],
                                    "changes": space_mod.config_changes(a["config"], winner) if a["config"] else None}
                                   for a in ablations or []] or None)
            base_ids = {}
            for r, order in enumerate(rounds.order):
                for name in order:
                    if self.stop.is_set():
                        break
                    cfg = names[name].replace(seed=seeds[r])
                    role = "baseline" if name == "baseline" else "ablation" if name in abl else "run"
                    rid = submit_when_free(cfg, role, f"{self.id}-c{r + 1}", self.store_path, self.stop, None,
                                            baseline_id=base_ids.get(r))
                    if rid is None:
                        break
                    if name == "baseline":
                        base_ids[r] = rid
                    rounds.submitted(store, r, name, rid)
                    self._update(current={"phase": "confirm", "round": r + 1, "name": name, "run_id": rid,
                                          "label": self._trial_label(cfg)})
                    out = watch_run(rid, store, self.target, stop=self.stop)
                    label_run(store, rid, {"id": self.id, "phase": "confirm", "round": r + 1, "name": name,
                                            "kind": out["kind"], "reason": out["reason"]})
                    rounds.ended(store, name)
                    runs.append({"round": r + 1, "name": name, "seed": seeds[r], **out})
                    self._update(confirm={**self.state["confirm"], "runs": runs}, current=None)
            rounds.finish(store, stop_why(self.stop) if self.stop.is_set() else None)
        finally:
            store.close()
        return self.state["confirm"]

    # -- all of it ----------------------------------------------------------------
    def run(self) -> dict:
        """Search, choose the winner by the runoff, confirm and explain it. Returns the final state
        (phase 'done', or 'stopped' when `stop` was set)."""
        t0 = time.monotonic()
        best = self.search()
        if best is None and self.stop.is_set():
            self._note(f"{stop_why(self.stop)} before any trial reached the target: nothing to confirm or explain")
        elif best is None:
            self._note("no trial reached the target: nothing to confirm or explain (raise the epoch cap "
                       "or the budget, or lower the target)")
        elif not self.stop.is_set():
            best = (self.runoff(self.finalists) if self.finalists > 1 else None) or best
            winner = RunConfig.from_dict(best["config"])
            self._update(winner={"trial": best["trial"], "run_id": best["run_id"], "label": best["label"],
                                 "config": best["config"], "changes": space_mod.config_changes(winner, self.baseline),
                                 "search_time_to_target_sec": best["time_to_target_sec"],
                                 "runoff_secs": best.get("rerun_secs"), "runoff_missed": best.get("missed"),
                                 "runoff_mean_sec": best.get("mean_sec")})
            # The ablation runs inside the confirming rounds: each technique's factor is then
            # made of interleaved pairs with the winner, like the confirmed speedup.
            plan = space_mod.ablation_configs(winner, self.baseline) if self.do_explain else []
            if self.repeats and not self.stop.is_set():
                self.confirm(winner, plan)
            elif not self.repeats:
                self._note(NO_REPEATS)
        self._update(phase="stopped" if self.stop.is_set() else "done", current=None,
                     wall_sec=time.monotonic() - t0)
        return self.state
