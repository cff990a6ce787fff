"""A comparison's result: the statistics of its complete interleaved pairs, read from the
store (no TF). The queue process evaluates a comparison after each of its runs
(engine.jobs.comparison), bundles recompute it on import (engine.bundle.comparisons), and
every page and command reads the stored result.

Each complete pair gives one ratio per measure (MEASURES: time to accuracy, end-to-end
samples/s, steady samples/s); engine.report.stats turns the ratios into a geometric mean,
a Student t interval (Stein's two-stage rule when adaptive) and a verdict. The time-to-accuracy
ratio is split into throughput, sample efficiency and time outside training
(`factors_of_rows`), and test accuracy is compared on the held-out test set (`test_accuracy_delta`).
"""
from __future__ import annotations

import math
import os
from typing import Optional

from engine.report import stats
from engine.store import ACTIVE_STATUSES, Store
from engine.store import comparisons as cstore

MEASURES = (("time_to_accuracy", "baseline_time_to_accuracy_sec", "time_to_accuracy_sec", False),
            ("end_to_end", "baseline_end_to_end_samples_per_sec", "end_to_end_samples_per_sec", True),
            ("steady", "baseline_samples_per_sec", "samples_per_sec", True))



def _pair_rows(store: Store, plan: list, target: Optional[float]) -> list[dict]:
    from engine.report.pair import compare

    rows = []
    for p in plan:
        row = dict(p)
        if p.get("dropped"):
            row["status"] = "dropped"
            rows.append(row)
            continue
        b, r = store.get_run(p["baseline_id"]), store.get_run(p["run_id"])
        st = {b["status"] if b else "missing", r["status"] if r else "missing"}
        if st == {"completed"}:
            c = compare(store, p["baseline_id"], p["run_id"], target=target)
            row["status"] = "complete"
            for name, kb, kr, _ in MEASURES:
                row[f"baseline_{name}"], row[name] = c.get(kb), c.get(kr)
            for side, pre in (("baseline", "baseline_"), ("run", "")):
                cen = c.get(f"{pre}censored") or {}
                row[f"{side}_censored_sec"], row[f"{side}_censored_samples"] = cen.get("sec"), cen.get("samples")
                row[f"{side}_samples"] = c.get(f"{pre}samples_to_accuracy")
                row[f"{side}_test_accuracy"] = c.get(f"{pre}test_accuracy")
            row["caveats"] = c.get("caveats") or []
        elif st & set(ACTIVE_STATUSES):
            row["status"] = "pending"
        elif "failed" in st or "missing" in st:
            row["status"] = "failed"
        elif not (b.get("started") or r.get("started")):
            row["status"] = "not run"  # cancelled before either side started
        else:
            row["status"] = "incomplete"  # a side was stopped: not a pair
        rows.append(row)
    return rows


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
    efficiency (samples to the target, baseline / run; a censored side counts the samples it
    trained) and the remainder, time outside steady training (warm-up, validation, the
    rest). Each: {'speedup' (geometric mean), 'ci95' (t interval of the mean log, or
    None), 'pair_ratios'}. None when a usable pair lacks a steady rate or a sample count."""
    logs = {"throughput": [], "sample_efficiency": [], "outside_training": []}
    for row, tta in zip(done, ratios):
        if tta is None:
            continue
        sb = row.get("baseline_samples") or row.get("baseline_censored_samples")
        sr = row.get("run_samples") or row.get("run_censored_samples")
        thr = stats.pair_ratio(row.get("baseline_steady"), row.get("steady"), True)
        if thr is None or not sb or not sr:
            return None
        lt, ls = math.log(thr), math.log(sb / sr)
        logs["throughput"].append(lt)
        logs["sample_efficiency"].append(ls)
        logs["outside_training"].append(math.log(tta) - lt - ls)
    if not logs["throughput"]:
        return None
    out = {}
    for k, v in logs.items():
        ratios_k = [math.exp(x) for x in v]
        ci = stats.log_ratio_interval(ratios_k) if len(v) >= stats.MIN_PAIRS else None
        out[k] = {"speedup": math.exp(sum(v) / len(v)), "ci95": list(ci) if ci else None, "pair_ratios": ratios_k}
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


def equivalence_margins(store: Store, comparison: dict) -> dict:
    """Per measure (MEASURES), the margin inside which a comparison is 'equivalent'
    (relative): its settings' 'margin' when given, else this machine's noise floor for
    that measure (its newest A/A comparison, read once; engine.jobs.noise.floor_of reads
    it the same way), never under stats.MIN_MARGIN. An A/A comparison uses MIN_MARGIN
    (it is how the floor is measured)."""
    s = comparison.get("settings") or {}
    if s.get("margin") is not None:
        return {m[0]: max(float(s["margin"]), stats.MIN_MARGIN) for m in MEASURES}
    aa = None if comparison.get("kind") == "aa" else cstore.latest_noise(store, os.uname().nodename)
    result = (aa or {}).get("result") or {}
    return {m[0]: max((result.get(m[0]) or {}).get("half_width") or 0.0, stats.MIN_MARGIN) for m in MEASURES}


def evaluate(store: Store, comparison: dict) -> dict:
    """The statistics of a comparison's complete pairs so far.

    Returns: {'kind', 'target_accuracy', 'pairs' (complete pairs), 'planned',
    'pair_rows' (per planned pair, see `_pair_rows`), one engine.report.stats.summarize
    dict per measure ('time_to_accuracy', 'end_to_end', 'steady'; a side that missed the
    target keeps a censored time to accuracy, see engine.report.stats), the flat fields
    the CLI prints ('time_to_accuracy_speedup', 'time_to_accuracy_ci95',
    'pair_ratios', 'verdict', 'end_to_end_speedup', 'end_to_end_ci95',
    'steady_speedup', 'steady_ci95'), 'measure' (the headline's, see
    `headline_measure`), 'history' (per complete pair k: the headline measure's
    'speedup' and 'ci95' over the first k pairs), 'factors' (`factors_of_rows` of the time to
    accuracy, or None), 'reached' ({'baseline', 'run', 'pairs'}: complete pairs whose side
    reached the target), 'test_accuracy_delta' (`test_accuracy_delta`), 'margin' (the
    equivalence margin), 'baseline_kind' ('default' | 'tuned'), 'baseline_label'
    (`baseline_label`), 'baseline_ids', 'run_ids' (planned, not dropped),
    'baselines_measured' (the baselines that started),
    'baseline_measured' (Unix s the first baseline started), 'baseline_reused' (False)}.
    """
    from engine.report.target import effective_target

    plan = comparison["plan"] or []
    one = store.get_run(plan[0]["run_id"]) if plan else None
    target = effective_target(one) if one else None
    rows = _pair_rows(store, plan, target)
    done = [r for r in rows if r["status"] == "complete"]
    settings = comparison.get("settings") or {}
    kind = settings.get("baseline_kind") or "default"
    base_run = store.get_run(plan[0]["baseline_id"]) if plan else None
    out = {"kind": comparison["kind"], "target_accuracy": target, "pairs": len(done), "planned": len(plan),
           "pair_rows": rows, "baseline_ids": [p["baseline_id"] for p in plan if not p.get("dropped")],
           "run_ids": [p["run_id"] for p in plan if not p.get("dropped")], "baseline_reused": False,
           "baseline_kind": kind, "baseline_label": baseline_label(kind, (base_run or {}).get("config"),
                                                               settings.get("tuned_baseline")),
           "tuned_baseline": settings.get("tuned_baseline")}
    # Adaptive: Stein's two-stage interval once the first stage is in (engine.report.stats).
    first = settings.get("min_pairs", stats.MIN_PAIRS) if settings.get("pairs") is None else None
    margins = equivalence_margins(store, comparison)
    for name, _, _, higher in MEASURES:
        cens = {}
        if name == "time_to_accuracy":  # every seed counts: a miss is a censored time
            cens = {"censored_baseline": [r.get("baseline_censored_sec") for r in done],
                    "censored_run": [r.get("run_censored_sec") for r in done]}
        out[name] = stats.summarize([r[f"baseline_{name}"] for r in done], [r[name] for r in done], higher,
                                    first_stage=first, margin=margins[name], **cens)
        out[f"{name}_speedup"] = out[name]["speedup"]
        out[f"{name}_ci95"] = out[name]["ci95"]
    measure = headline_measure(out)
    out["measure"] = measure
    out["margin"] = margins[measure]
    out["pair_ratios"] = out["time_to_accuracy"]["pair_ratios"]
    out["verdict"] = out[measure]["verdict"] if out[measure]["pairs"] >= stats.MIN_PAIRS else None
    out["factors"] = factors_of_rows(done, out["time_to_accuracy"]["pair_ratios"]) if target is not None else None
    out["reached"] = {"pairs": len(done),
                      "baseline": sum(r.get("baseline_time_to_accuracy") is not None for r in done),
                      "run": sum(r.get("time_to_accuracy") is not None for r in done)} if target is not None else None
    out["test_accuracy_delta"] = test_accuracy_delta(done)
    _, kb, kr, higher = next(m for m in MEASURES if m[0] == measure)
    out["history"] = []
    for k in range(1, len(done) + 1):
        cens = {"censored_baseline": [r.get("baseline_censored_sec") for r in done[:k]],
                "censored_run": [r.get("run_censored_sec") for r in done[:k]]} if measure == "time_to_accuracy" else {}
        s = stats.summarize([r[f"baseline_{measure}"] for r in done[:k]], [r[measure] for r in done[:k]], higher,
                            first_stage=first, margin=margins[measure], **cens)
        out["history"].append({k2: s[k2] for k2 in ("pairs", "speedup", "ci95", "verdict", "margin",
                                                    "pairs_to_decide", "censored", "outliers")})
    started = [r for r in (store.get_run(i) for i in out["baseline_ids"]) if r and r.get("started")]
    out["baselines_measured"] = [r["id"] for r in started]  # not those cancelled before they started
    out["baseline_measured"] = min(r["started"] for r in started) if started else None
    return out
