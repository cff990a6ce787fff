"""The autopilot's confirmation and ablation as comparisons of interleaved pairs, stored in the
`comparisons` table like the Train page's (engine.store.comparisons) and computed by
engine.report.comparison.evaluate, so that the Autopilot page, `python -m engine autopilot`
and the Runs page read the same figures. No TF here.

The confirming rounds (engine.autopilot.search.Autopilot.confirm) run every configuration
once a round (the baseline, the winner, the tuned baseline when one is stored, the winner
without each technique), in engine.jobs.comparison.orders' AB, BA, ... order: the names
forward in an 'AB' round, reversed in a 'BA' one. From them come these comparisons, each
with `repeats` pairs (pair r: both sides' runs of round r):

- 'confirmation': the winner (run side) against the baseline;
- per extra configuration (the tuned baseline): the winner against it, and it against the
  baseline;
- per technique: the winner against the winner without it (baseline side: the ablated run),
  so the speedup is the technique's factor, > 1 = it helps.

The autopilot's process owns them (settings 'pid', 'pid_started':
engine.jobs.comparison.owner_alive): it adds each pair to the plan when both sides are
submitted, stores the result after every run, and ends them when the rounds end or it is
stopped; no other process settles them while it lives. Settings 'autopilot' says whose they
are and what each is ('kind', the words the Runs page's table shows).
"""
from __future__ import annotations

import os
from typing import Optional

from engine.jobs import comparison
from engine.jobs.background import ACTIVE_STATES
from engine.report import stats
from engine.store import Store
from engine.store import comparisons as cstore

# The confirmation's name for the tuned baseline among its extra configurations.
TUNED = "tuned baseline"


def specs(extra: list[str], ablations: dict[str, dict]) -> list[dict]:
    """The comparisons the confirming rounds make: {'key', 'baseline' (name of the baseline
    side), 'run' (of the run side), 'role' ('confirmation', 'extra', 'extra_vs_baseline',
    'ablation'), 'kind' (words), 'extra' or 'technique'}. `extra`: names of the extra
    configurations; `ablations`: {name ('without <label>'): space.ablation_configs entry}."""
    out = [{"key": "confirmation", "baseline": "baseline", "run": "winner", "role": "confirmation",
            "kind": "autopilot confirmation"}]
    for n in extra:
        out.append({"key": f"winner vs {n}", "baseline": n, "run": "winner", "role": "extra", "extra": n,
                    "kind": f"autopilot: the winner vs the {n}"})
        out.append({"key": f"{n} vs baseline", "baseline": "baseline", "run": n, "role": "extra_vs_baseline",
                    "extra": n, "kind": f"autopilot: the {n} vs the baseline"})
    for name, a in ablations.items():
        out.append({"key": name, "baseline": name, "run": "winner", "role": "ablation", "technique": a["technique"],
                    "kind": f"autopilot ablation: {name}"})
    return out


def round_names(names: list[str], repeats: int) -> list[list[str]]:
    """The order of each round's runs: `names` in an 'AB' round, reversed in a 'BA' one
    (engine.jobs.comparison.orders), so that drift on a shared machine, and whatever the run
    before leaves behind, hits every configuration alike."""
    return [names if o == "AB" else names[::-1] for o in comparison.orders(repeats)]


class Rounds:
    """The stored comparisons of one autopilot's confirming rounds.

    Args: store, autopilot_id ('autopilot-<hex>'), names (the configurations, in round 1's
    order), extra (names of the extra configurations), ablations ({name: ablation entry}),
    repeats (rounds), seeds (per round), tuned (the engine.store.tuned_baselines row of the
    TUNED configuration, or None), fingerprint (this machine's, engine.hardware.fingerprint.short).
    """

    def __init__(self, store: Store, autopilot_id: str, names: list[str], extra: list[str],
                 ablations: dict[str, dict], repeats: int, seeds: list[int], tuned: Optional[dict],
                 fingerprint: Optional[dict]):
        from engine.base.process import start_time

        self.order = round_names(names, repeats)
        self.seeds = seeds
        self.ids: dict[int, dict[str, int]] = {}  # round -> name -> run id
        self.specs = specs(extra, ablations)
        self.plans: dict[str, list[dict]] = {s["key"]: [] for s in self.specs}
        self.cids: dict[str, int] = {}
        for i, s in enumerate(self.specs):
            tuned_side = s["baseline"] == TUNED and tuned is not None
            settings = {"pairs": repeats, "max_pairs": repeats, "min_pairs": min(stats.MIN_PAIRS, repeats),
                        "target_half_width": None, "budget_s": None, "margin": None,
                        "baseline_kind": "tuned" if tuned_side else "default",
                        # The ablated winner is no baseline configuration: its headline names it.
                        "baseline_label": f"the winner {s['key']}" if s["role"] == "ablation" else None,
                        "tuned_baseline": {k: tuned.get(k) for k in comparison.TUNED_KEYS} if tuned_side else None,
                        "fingerprint": fingerprint, "pid": os.getpid(), "pid_started": start_time(os.getpid()),
                        "autopilot": {"id": autopilot_id, **{k: v for k, v in s.items() if k not in ("baseline", "run")}}}
            # The group is the comparison's own (UNIQUE); its runs keep the rounds' groups (<id>-c<round>).
            self.cids[s["key"]] = cstore.create(store, "ab", f"{autopilot_id}-cmp{i + 1}", settings, [],
                                                os.uname().nodename)

    def state(self) -> dict:
        """The comparison ids for the autopilot's state: {'confirmation': id, 'extra': {name:
        {'winner': id (the winner against it), 'vs_baseline': id}}, 'ablation': {technique: id}}."""
        out: dict = {"confirmation": self.cids["confirmation"], "extra": {}, "ablation": {}}
        for s in self.specs:
            if s["role"] in ("extra", "extra_vs_baseline"):
                out["extra"].setdefault(s["extra"], {})["winner" if s["role"] == "extra" else "vs_baseline"] = \
                    self.cids[s["key"]]
            elif s["role"] == "ablation":
                out["ablation"][s["technique"]] = self.cids[s["key"]]
        return out

    def submitted(self, store: Store, r: int, name: str, run_id: int) -> None:
        """Round `r`'s (0-based) run of `name` was submitted: each comparison whose other side
        of this round is in gets its pair r, and every comparison of `name` its plan and result."""
        self.ids.setdefault(r, {})[name] = run_id
        got = self.ids[r]
        for s in self.specs:
            if name not in (s["baseline"], s["run"]) or s["baseline"] not in got or s["run"] not in got:
                continue
            names = self.order[r]
            self.plans[s["key"]].append({
                "pair": r, "seed": self.seeds[r],
                "order": "AB" if names.index(s["baseline"]) < names.index(s["run"]) else "BA",
                "baseline_id": got[s["baseline"]], "run_id": got[s["run"]]})
        self.ended(store, name)

    def ended(self, store: Store, name: str) -> None:
        """A run of `name` ended (or was submitted): store the plan and result of its comparisons."""
        for s in self.specs:
            if name in (s["baseline"], s["run"]) and self.plans[s["key"]]:
                comparison.store_plan(store, self.cids[s["key"]], self.plans[s["key"]])

    def finish(self, store: Store, reason: Optional[str] = None) -> None:
        """End every comparison (engine.jobs.comparison.finish_if_done): `reason` when the
        autopilot was stopped (a stop signal's reason recorded first stays), else the result's."""
        for s in self.specs:
            comp = cstore.get(store, self.cids[s["key"]])
            if comp is not None and comp["status"] == "running":
                comparison.finish_if_done(store, comp, reason=None if comp.get("ended_by") else reason)


def stored(store: Store, confirm: Optional[dict]) -> dict:
    """The stored comparisons of an autopilot state's confirmation (`Rounds.state`, kept as
    confirm['comparisons']): {'confirmation': row or None, 'extra': {name: {'winner', 'vs_baseline'}},
    'ablation': {technique: row}}. A row still 'running' whose process has ended is settled first
    (engine.jobs.comparison.settle_if_idle); a row gone from the store is None."""
    ids = (confirm or {}).get("comparisons") or {}

    def row(cid: Optional[int]) -> Optional[dict]:
        comp = cstore.get(store, cid) if cid is not None else None
        return comparison.settle_if_idle(store, comp) if comp is not None else None

    return {"confirmation": row(ids.get("confirmation")),
            "extra": {n: {k: row(v.get(k)) for k in ("winner", "vs_baseline")} for n, v in (ids.get("extra") or {}).items()},
            "ablation": {t: row(c) for t, c in (ids.get("ablation") or {}).items()}}


# What an ablation bar without a factor says, by the autopilot's status (`job_status`): its runs
# come in the re-run rounds while the autopilot runs; "stopped" only when it was stopped.
UNMEASURED = {"running": "not measured yet: it runs in the re-run rounds",
              "stopped": "not run: the autopilot was stopped",
              "failed": "not run: the autopilot failed",
              "done": "not run: no complete pair"}


def job_status(state: Optional[dict]) -> str:
    """'running', 'stopped', 'failed' or 'done': the autopilot's status, from its state as the
    page reads it (engine.autopilot.job.read_progress: 'state' 'starting' | 'running' | 'done' |
    'failed' | 'cancelled', a process that died unseen reads 'failed') or as `Autopilot.run`
    returns it (no 'state'; 'phase' 'stopped' or 'done' at its end, another phase while it runs)."""
    s = (state or {}).get("state")
    phase = (state or {}).get("phase")
    if s == "failed":
        return "failed"
    if s == "cancelled" or phase == "stopped":
        return "stopped"
    if s in ACTIVE_STATES or (s is None and phase != "done"):
        return "running"
    return "done"


def ablation_entries(plan: list[dict], comps: dict, state: Optional[dict]) -> list[dict]:
    """The ablation's figures, from its stored comparisons (`stored`'s 'ablation'): per entry of
    `plan` (the state's 'ablation': {'technique', 'label', 'changes', 'note'}) the entry with
    'factor' (the time-to-accuracy speedup of the winner over the winner without the technique:
    > 1 = it helps), 'ci95', 'verdict' (the comparison's own verdict, as the Runs page shows it:
    engine.report.stats.overall_verdict, test accuracy and noise floor applied), 'interval_pairs',
    'run_ids' (the runs without it), 'comparison_id', 'kind' ('reached', 'not_reached', 'pending':
    no complete pair yet while the autopilot runs, 'not_run': none and it has ended, 'no_config':
    space.ablation_configs could not switch it back) and 'note' (why there is no factor: UNMEASURED
    by `job_status(state)`, the autopilot's state, for a pending or not_run entry)."""
    status = job_status(state)
    unmeasured = {"kind": "pending" if status == "running" else "not_run", "note": UNMEASURED[status]}
    out = []
    for a in plan:
        comp = comps.get(a["technique"])
        entry = {**a, "factor": None}
        if comp is None:  # no configuration to run without it (its note says why), or not started
            entry.update({"kind": "no_config", "note": a["note"]} if a.get("note") else unmeasured)
            out.append(entry)
            continue
        r = comp.get("result") or {}
        tta = r.get("time_to_accuracy") or {}
        factor = tta.get("speedup")
        entry.update(comparison_id=comp["id"], factor=factor, ci95=tta.get("ci95"), verdict=r.get("verdict"),
                     interval_pairs=tta.get("pairs"), run_ids=r.get("baseline_ids") or [],
                     run_id=(r.get("baseline_ids") or [None])[0])
        if factor:
            entry.update(kind="reached", note=None)
        elif r.get("pairs"):
            entry.update(kind="not_reached", note="the target on no seed")
        else:
            entry.update(unmeasured)
        out.append(entry)
    return out
