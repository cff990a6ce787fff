"""A comparison's result: the statistics of its complete interleaved pairs, read from the
store (no TF). The queue process evaluates a comparison after each of its runs
(engine.jobs.comparison), bundles recompute it on import (engine.bundle.comparisons), and
every page and command reads the stored result.

Each complete pair gives one ratio per measure (MEASURES: time to accuracy, end-to-end
samples/s, steady samples/s); engine.report.stats turns the ratios into a geometric mean,
a Student t interval (Stein's two-stage rule when adaptive) and a verdict. The time-to-accuracy
ratio is split into throughput, sample efficiency and time outside training
(`factors_of_rows`), and test accuracy is compared on the held-out test set (`test_accuracy_delta`).
The rules (every seed counts, a failure is a miss, accuracy must hold) are `judge_rows`'.
"""
from __future__ import annotations

import math
from typing import Optional

from engine.report import stats
from engine.store import ACTIVE_STATUSES, Store
from engine.store import comparisons as cstore

MEASURES = (("time_to_accuracy", "baseline_time_to_accuracy_sec", "time_to_accuracy_sec", False),
            ("end_to_end", "baseline_end_to_end_samples_per_sec", "end_to_end_samples_per_sec", True),
            ("steady", "baseline_samples_per_sec", "samples_per_sec", True))



SIDES = (("baseline", "baseline_id", "baseline_"), ("run", "run_id", ""))


def dropped_keys(p: dict) -> list[str]:
    """The plan keys ('baseline_id', 'run_id') of a pair whose runs were deleted unstarted
    (engine.jobs.comparison stops a comparison); a plan written before 'dropped_keys' marked
    'dropped' only when both were."""
    return list(p.get("dropped_keys") or (["baseline_id", "run_id"] if p.get("dropped") else []))


def _side_outcome(run: Optional[dict], tta: Optional[float], target: Optional[float]) -> str:
    """One side's outcome (the outcomes of engine.report.stats) in a pair that counts; a run that
    is gone from the store counts as failed (nothing may vanish from a result)."""
    if run is None:
        return "not run"
    if run["status"] in ("failed", "missing"):
        return "failed"
    if run["status"] != "completed":
        return "not run"
    return "reached" if tta is not None or target is None else "missed"


def pair_rows(store: Store, plan: list, target: Optional[float]) -> list[dict]:
    """Per planned pair ({'pair', 'seed', 'baseline_id', 'run_id'}, maybe 'dropped_keys'), the
    row every comparison figure is computed from: 'status' ('complete': each side completed,
    failed, or was dropped unstarted after its partner failed; 'pending'; 'dropped': both sides
    deleted unstarted; 'not run': cancelled before either started; 'incomplete': a side was
    stopped by the user), per measure (MEASURES) each side's value (None for a side that did
    not complete), 'outcomes' ({'baseline', 'run'}: the outcomes of engine.report.stats; a failed run
    is a miss of its side), each side's samples to the target, test accuracy and setup (s), and
    'caveats'."""
    from engine.report.pair import compare

    rows = []
    for p in plan:
        row = dict(p)
        gone = dropped_keys(p)
        if len(gone) == 2 or (p.get("baseline_id") is None and p.get("run_id") is None):
            row["status"] = "dropped"
            rows.append(row)
            continue
        runs = {}
        for side, key, _ in SIDES:
            never = key in gone or p.get(key) is None  # a command side that never ran has no run id
            run = None if never else store.get_run(p[key])
            runs[side] = run if run is not None or never else {"status": "missing", "id": p[key]}
        sts = {side: (run or {}).get("status", "dropped") for side, run in runs.items()}
        failed = any(v in ("failed", "missing") for v in sts.values())
        # A side still queued beside a failed partner is about to be dropped: the pair counts now.
        counts = all(v in ("completed", "failed", "missing", "dropped") or (failed and v == "queued")
                     for v in sts.values()) and not all(v == "dropped" for v in sts.values())
        if counts:
            whole = all(v == "completed" for v in sts.values())
            c = compare(store, p["baseline_id"], p["run_id"], target=target) if whole else {}
            if not whole:  # one side's own figures, from a compare with itself
                for side, key, pre in SIDES:
                    if sts[side] == "completed":
                        own = compare(store, p[key], p[key], target=target)
                        c.update({k: v for k, v in own.items() if not k.startswith("baseline_")} if side == "run" else
                                 {f"baseline_{k}": own.get(k) for k in ("time_to_accuracy_sec",
                                  "end_to_end_samples_per_sec", "samples_per_sec", "samples_to_accuracy",
                                  "test_accuracy", "breakdown")})
            row["status"] = "complete"
            for name, kb, kr, _ in MEASURES:
                row[f"baseline_{name}"], row[name] = c.get(kb), c.get(kr)
            for side, key, pre in SIDES:
                done = sts[side] == "completed"
                row[f"{side}_samples"] = c.get(f"{pre}samples_to_accuracy") if done else None
                row[f"{side}_test_accuracy"] = c.get(f"{pre}test_accuracy") if done else None
                row[f"{side}_setup_sec"] = (c.get(f"{pre}breakdown") or {}).get("setup") if done else None
            row["outcomes"] = {side: _side_outcome(runs[side] if sts[side] != "queued" else None,
                                                   row[f"{pre}time_to_accuracy"], target)
                               for side, _, pre in SIDES}
            row["caveats"] = c.get("caveats") or []
            row["machines"] = c.get("machines")  # 'measured on two machines: A vs B', or None
            row["overlap"] = c.get("overlap")  # the two runs trained at once on this machine, or None
        elif set(sts.values()) & set(ACTIVE_STATUSES):
            row["status"] = "pending"
        elif not any((run or {}).get("started") for run in runs.values()):
            row["status"] = "not run"  # cancelled before either side started
        else:
            row["status"] = "incomplete"  # a side was stopped: not a pair
        rows.append(row)
    return rows


def failures(rows: list[dict]) -> list[dict]:
    """The counted pairs in which a side failed (diverged, crashed or vanished)."""
    return [r for r in rows if r["status"] == "complete" and "failed" in (r.get("outcomes") or {}).values()]


def headline_measure(result: dict) -> str:
    """'time_to_accuracy' when the comparison has a target accuracy and a pair reached
    it on both sides (or none is complete yet), else 'end_to_end'."""
    tta = result.get("time_to_accuracy") or {}
    if result.get("target_accuracy") is not None and (tta.get("pairs") or not result.get("pairs")):
        return "time_to_accuracy"
    return "end_to_end"


def baseline_label(kind: str, cfg: Optional[dict], tuned: Optional[dict] = None) -> Optional[str]:
    """What a comparison's baseline is, for every headline: 'Keras-default Adam 1e-3',
    'untuned Adam 0.003' (a constant rate the user chose) or, for a tuned baseline ('tuned':
    the stored row `tuned`, engine.store.tuned_baselines), its schedule, peak rate, label
    smoothing and tuning seeds: 'tuned warmup-cosine Adam 0.004, label smoothing 0.1, 4 seeds'
    ('tuned Adam 0.003' for a comparison stored before schedules were tuned: no schedule in
    `tuned`); None without a config; 'your baseline command' for two commands (engine.jobs.command_pairs)."""
    if kind == "command":
        return "your baseline command"
    if not cfg:
        return None
    opt = cfg.get("optimizer") or "adam"
    lr = cfg.get("learning_rate")
    name = {"adam": "Adam", "sgd": "SGD", "rmsprop": "RMSprop"}.get(opt, opt)
    if kind == "tuned":
        if not (tuned or {}).get("schedule"):
            return f"tuned {name} {'1e-3' if lr == 1e-3 else f'{lr:g}' if lr is not None else '?'}"
        schedule = cfg.get("schedule") or "constant"
        peak = cfg.get("max_lr") if schedule in ("one_cycle", "cyclic") and cfg.get("max_lr") else lr
        words = {"constant": "constant-LR"}.get(schedule, schedule.replace("_", "-"))
        text = f"tuned {words} {name} {peak:g}" if peak is not None else f"tuned {words} {name} ?"
        if cfg.get("label_smoothing"):
            text += f", label smoothing {cfg['label_smoothing']:g}"
        n = len(tuned.get("tuning_seeds") or [])
        return text + (f", {n} seed{'s' if n != 1 else ''}" if n else "")
    lr_text = "1e-3" if lr == 1e-3 else f"{lr:g}" if lr is not None else "?"
    # Keras's own default learning rates: 1e-3 for Adam and RMSprop, 0.01 for SGD.
    default = {"adam": 1e-3, "rmsprop": 1e-3, "sgd": 0.01}.get(opt)
    return f"{'Keras-default' if lr == default else 'untuned'} {name} {lr_text}"


def factors_of_rows(done: list[dict], ratios: list[Optional[float]]) -> Optional[dict]:
    """The time-to-accuracy ratio of each usable pair split into three factors that
    multiply to it exactly: throughput (steady samples/s, run / baseline), sample
    efficiency (samples to the target, baseline / run) and the remainder, fixed costs:
    the share of each side's time spent outside steady training (warm-up, validation,
    the rest). Each: {'speedup' (geometric mean), 'ci95' (t interval of the mean log, or
    None), 'pair_ratios'}; fixed costs also carry 'baseline_sec' and 'run_sec', the mean
    seconds outside steady training per side (time to accuracy − samples / steady rate).
    None when a usable pair lacks a steady rate or a sample count."""
    logs = {"throughput": [], "sample_efficiency": [], "outside_training": []}
    secs = {"baseline": [], "run": []}
    for row, tta in zip(done, ratios):
        if tta is None:
            continue
        sb, sr = row.get("baseline_samples"), row.get("run_samples")
        thr = stats.pair_ratio(row.get("baseline_steady"), row.get("steady"), True)
        if thr is None or not sb or not sr:
            return None
        lt, ls = math.log(thr), math.log(sb / sr)
        logs["throughput"].append(lt)
        logs["sample_efficiency"].append(ls)
        logs["outside_training"].append(math.log(tta) - lt - ls)
        secs["baseline"].append(row["baseline_time_to_accuracy"] - sb / row["baseline_steady"])
        secs["run"].append(row["time_to_accuracy"] - sr / row["steady"])
    if not logs["throughput"]:
        return None
    out = {}
    for k, v in logs.items():
        ratios_k = [math.exp(x) for x in v]
        ci = stats.log_ratio_interval(ratios_k) if len(v) >= stats.MIN_PAIRS else None
        out[k] = {"speedup": math.exp(sum(v) / len(v)), "ci95": list(ci) if ci else None, "pair_ratios": ratios_k}
    out["outside_training"].update({f"{side}_sec": sum(v) / len(v) for side, v in secs.items()})
    return out


def test_accuracy_delta(done: list[dict]) -> Optional[dict]:
    """Test accuracy, run minus baseline, over the complete pairs (rows with 'run_test_accuracy'
    and 'baseline_test_accuracy', fractions) that have both:
    {'mean' (fraction), 'ci95' (Student t interval of the mean difference, scipy; None
    under MIN_PAIRS pairs), 'pairs', 'per_pair'}; None when no pair has both."""
    diffs = [r["run_test_accuracy"] - r["baseline_test_accuracy"] for r in done
             if r.get("run_test_accuracy") is not None and r.get("baseline_test_accuracy") is not None]
    if not diffs:
        return None
    from scipy import stats as sps

    n, mean = len(diffs), sum(diffs) / len(diffs)
    ci = None
    if n >= stats.MIN_PAIRS:
        sem = sps.sem(diffs)
        ci = [mean, mean] if sem == 0 else [float(x) for x in sps.t.interval(stats.CONFIDENCE, n - 1, loc=mean,
                                                                             scale=sem)]
    return {"mean": mean, "ci95": ci, "pairs": n, "per_pair": diffs}


def equivalence_margin(comparison: dict) -> float:
    """The margin inside which a comparison is 'equivalent' (relative): its settings'
    'margin' when the user gave one, else the fixed engine.report.stats.DEFAULT_MARGIN (5%).
    A measured noise floor never widens it (`noise_floor` only widens 'inconclusive')."""
    m = (comparison.get("settings") or {}).get("margin")
    return float(m) if m is not None else stats.DEFAULT_MARGIN


def noise_floor(store: Store, comparison: dict, base_config: Optional[dict]) -> Optional[dict]:
    """The noise floor a comparison is judged with: the newest finished A/A comparison on
    this machine (its fingerprint id: engine.hardware.fingerprint.row_here; matching_noise) of the same data set, model,
    epochs and precision as its baseline, with at least MIN_NOISE_PAIRS pairs, as
    {'comparison_id', 'pairs', 'config' (those four), 'half_width' ({measure: relative
    half width})}; None for an A/A comparison itself or when none matches."""
    if comparison.get("kind") == "aa" or not base_config or not hasattr(store, "conn"):
        return None
    from engine.hardware.fingerprint import row_here

    aa = cstore.matching_noise(store, row_here, base_config, MIN_NOISE_PAIRS)
    if aa is None:
        return None
    r = aa["result"]
    return {"comparison_id": aa["id"], "pairs": r.get("pairs"),
            "config": {k: base_config.get(k) for k in cstore.NOISE_KEYS},
            "half_width": {m[0]: (r.get(m[0]) or {}).get("half_width") for m in MEASURES}}


# A noise floor from fewer pairs is too wide to judge anything by (t with 2 df is 4.30).
MIN_NOISE_PAIRS = 5


def judge_rows(rows: list[dict], target: Optional[float], margin: float = stats.DEFAULT_MARGIN,
               first_stage: Optional[int] = None, floor: Optional[dict] = None) -> dict:
    """The figures of pairs (`pair_rows`), the one set of rules for every comparison: the
    comparisons of the CLI, pages and bundles (`evaluate`) and the autopilot's confirmation.
    Every counted pair stays in: a failed or missed side is a miss of that side on that seed.

    Args: rows (`pair_rows`), target (accuracy, or None), margin (equivalence, relative),
        first_stage (adaptive: Stein's first stage, else None), floor (`noise_floor`, or None).
    Returns: {'pairs' (counted pairs: both sides ended), per measure (MEASURES) its
        engine.report.stats.summarize, '<measure>_speedup' and '<measure>_ci95', 'measure'
        (`headline_measure`), 'margin', 'pair_ratios' (time to accuracy), 'verdict'
        (engine.report.stats.overall_verdict of the headline measure: the noise floor and test
        accuracy applied; None under MIN_PAIRS usable pairs), 'factors' (`factors_of_rows`, or
        None), 'with_setup' (summarize of setup + time to accuracy per side, or None),
        'setup' ({'baseline_sec', 'run_sec'}: mean setup, or None), 'reached' ({'pairs',
        'baseline', 'run' (seeds that side reached), 'baseline_failed', 'run_failed', 'baseline_of',
        'run_of' (seeds that side ran: a side dropped after its partner failed did not)}, or None
        without a target),
        'test_accuracy_delta', 'noise_floor' (`floor`), 'machines' ('measured on two machines:
        A vs B' when a pair's runs came from two machines: the verdict is then NOT_COMPARABLE), 'overlap'
        ('pair K: these runs overlapped for N s on this machine: ...', engine.hardware.fingerprint.overlap,
        or None), 'history'
        (per counted pair k: the headline measure over the first k pairs)}."""
    done = [r for r in rows if r["status"] == "complete"]
    outcomes = [r.get("outcomes") for r in done]
    out = {"pairs": len(done), "margin": margin, "noise_floor": floor}
    for name, _, _, higher in MEASURES:
        oc = outcomes if name == "time_to_accuracy" else [
            {k: v if v in ("failed", "not run") else None for k, v in (o or {}).items()} for o in outcomes]
        out[name] = stats.summarize([r[f"baseline_{name}"] for r in done], [r[name] for r in done], higher,
                                    first_stage=first_stage, margin=margin, outcomes=oc)
        out[f"{name}_speedup"] = out[name]["speedup"]
        out[f"{name}_ci95"] = out[name]["ci95"]
    out["target_accuracy"] = target
    measure = headline_measure(out)
    out["measure"] = measure
    out["pair_ratios"] = out["time_to_accuracy"]["pair_ratios"]
    delta = test_accuracy_delta(done)
    out["test_accuracy_delta"] = delta
    hw = ((floor or {}).get("half_width") or {}).get(measure)
    summary = out[measure]
    out["verdict"] = stats.overall_verdict(summary["verdict"], summary["speedup"], delta, hw) \
        if summary["pairs"] >= stats.MIN_PAIRS else None
    # A pair whose two runs came from two machines (engine.hardware.fingerprint) is no speedup of a
    # configuration: the comparison says so first and gives no verdict to colour (issue 54).
    out["machines"] = next((r["machines"] for r in done if r.get("machines")), None)
    if out["machines"] and out["verdict"] is not None:
        out["verdict"] = stats.NOT_COMPARABLE
    # Pairs whose two runs trained at the same time (another process ran one of them): said first.
    overlaps = [(r.get("pair"), r["overlap"]) for r in done if r.get("overlap")]
    out["overlap"] = (f"pair {overlaps[0][0]}: {overlaps[0][1]}" + (
        f" (and {len(overlaps) - 1} more pair{'s' if len(overlaps) > 2 else ''})" if len(overlaps) > 1 else "")
        if overlaps else None)
    out["factors"] = factors_of_rows(done, out["pair_ratios"]) if target is not None else None
    setups = [(r.get("baseline_setup_sec"), r.get("run_setup_sec")) for r in done]
    if target is not None and any(b is not None and r is not None for b, r in setups):
        def plus(t, su):
            return t + su if t is not None and su is not None else None
        out["with_setup"] = stats.summarize([plus(r["baseline_time_to_accuracy"], b) for r, (b, _) in zip(done, setups)],
                                            [plus(r["time_to_accuracy"], x) for r, (_, x) in zip(done, setups)],
                                            False, margin=margin, outcomes=outcomes)
        known = [(b, x) for b, x in setups if b is not None and x is not None]
        out["setup"] = {"baseline_sec": sum(b for b, _ in known) / len(known),
                        "run_sec": sum(x for _, x in known) / len(known)}
    else:
        out["with_setup"] = out["setup"] = None
    out["reached"] = {"pairs": len(done), **{
        f"{side}{suffix}": sum(test((o or {}).get(side)) for o in outcomes)
        for side in ("baseline", "run") for suffix, test in (("", lambda x: x == "reached"),
                                                            ("_failed", lambda x: x == "failed"),
                                                            ("_of", lambda x: x != "not run"))}} \
        if target is not None else None
    _, kb, kr, higher = next(m for m in MEASURES if m[0] == measure)
    out["history"] = []
    for k in range(1, len(done) + 1):
        s_k = stats.summarize([r[f"baseline_{measure}"] for r in done[:k]], [r[measure] for r in done[:k]], higher,
                              first_stage=first_stage, margin=margin,
                              outcomes=outcomes[:k] if measure == "time_to_accuracy" else None)
        out["history"].append({k2: s_k[k2] for k2 in ("pairs", "speedup", "ci95", "verdict", "margin",
                                                      "pairs_for_power", "misses", "outliers")})
    return out


def time_split(store: Store, comparison: dict, ended: float) -> dict:
    """Where a comparison's time went, from its submission (`created`) to `ended` (Unix s):
    {'wall_sec', 'runs_sec' (its runs' own wall time: worker clock start to the end of training,
    summary 'wall_sec', and the close after it, 'close_sec': the test-set evaluation, saving,
    the last rows), 'waiting_sec' (its runs' summary 'waiting_sec': queued behind another run,
    a spare's imports, the queue between runs), 'other_sec' (the rest: the workers' exits, the
    queue's bookkeeping), 'runs' (runs that started)}, in s."""
    runs = [store.get_run(p[k]) for p in comparison.get("plan") or [] for k in ("baseline_id", "run_id")
            if k not in dropped_keys(p)]
    summaries = [r.get("summary") or {} for r in runs if r and r.get("started")]
    wall = max(ended - comparison["created"], 0.0)
    own = sum((s.get("wall_sec") or 0.0) + (s.get("close_sec") or 0.0) for s in summaries)
    waiting = sum(s.get("waiting_sec") or 0.0 for s in summaries)
    return {"wall_sec": wall, "runs_sec": own, "waiting_sec": waiting, "other_sec": wall - own - waiting,
            "runs": len(summaries)}


def time_text(split: Optional[dict]) -> Optional[str]:
    """'took 560 s: its 10 runs 355 s, waiting for a worker 198 s, the rest 7 s', or None."""
    if not split:
        return None
    n = split["runs"]
    return (f"took {split['wall_sec']:.0f} s: its {n} run{'s' if n != 1 else ''} {split['runs_sec']:.0f} s, "
            f"waiting for a worker {split['waiting_sec']:.0f} s, the rest {max(split['other_sec'], 0.0):.0f} s")


def evaluate(store: Store, comparison: dict) -> dict:
    """The statistics of a comparison's counted pairs so far (`judge_rows` of `pair_rows`).

    Returns: `judge_rows`' dict plus {'kind', 'planned', 'pair_rows', 'baseline_kind'
    ('default' | 'tuned' | 'command'), 'baseline_label' (settings' 'baseline_label' when given:
    the autopilot's ablation, "the winner without bfloat16"; else `baseline_label`), 'tuned_baseline',
    'baseline_ids', 'run_ids' (planned, not dropped), 'baselines_measured' (the baselines that
    started), 'baseline_measured' (Unix s the first baseline started), 'baseline_reused' (False)}.
    """
    from engine.report.target import effective_target

    plan = comparison["plan"] or []
    one = store.get_run(plan[0]["run_id"]) if plan else None
    target = effective_target(one) if one else None
    rows = pair_rows(store, plan, target)
    settings = comparison.get("settings") or {}
    kind = settings.get("baseline_kind") or "default"
    base_run = store.get_run(plan[0]["baseline_id"]) if plan else None
    # Adaptive: Stein's two-stage interval once the first stage is in (engine.report.stats).
    first = settings.get("min_pairs", stats.MIN_PAIRS) if settings.get("pairs") is None else None
    out = judge_rows(rows, target, equivalence_margin(comparison), first,
                     noise_floor(store, comparison, (base_run or {}).get("config")))
    out.update({"kind": comparison["kind"], "planned": len(plan), "pair_rows": rows,
                "baseline_ids": [p["baseline_id"] for p in plan if "baseline_id" not in dropped_keys(p)],
                "run_ids": [p["run_id"] for p in plan if "run_id" not in dropped_keys(p)], "baseline_reused": False,
                "baseline_kind": kind, "baseline_label": settings.get("baseline_label") or baseline_label(
                    kind, (base_run or {}).get("config"), settings.get("tuned_baseline")),
                "tuned_baseline": settings.get("tuned_baseline")})
    started = [r for r in (store.get_run(i) for i in out["baseline_ids"]) if r and r.get("started")]
    out["baselines_measured"] = [r["id"] for r in started]  # not those cancelled before they started
    out["baseline_measured"] = min(r["started"] for r in started) if started else None
    return out
