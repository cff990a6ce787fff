"""A comparison: interleaved, repeated pairs of baseline and run, each in a fresh worker.

One Launch on a shared machine can read anything from 0.77x to 1.63x for the
same two configurations, so a speedup is measured as a set of pairs:

- pair i runs both sides on seed `cfg.seed + i` (the spread covers seeds as well
  as timing), in alternating order AB, BA, AB, ... so that drift in the machine's
  load hits both sides alike;
- every run is a normal queued run (engine.jobs.runner.submit), group_id
  'cmp-<hex>', role 'baseline' or 'run', each in its own worker; the queue
  process gives every run of a comparison a warm spare (started between runs, never
  beside one), so both sides start the same way;
- `pairs=N` runs exactly N pairs; the default is adaptive: pairs are queued up
  to `max_pairs` and, after each complete pair, the queue process (`on_run_end`)
  stops the comparison once the 95% interval of the headline ratio is within
  ±`target_half_width` (after at least engine.report.stats.MIN_PAIRS pairs), the
  pair limit is reached, or the next pair would overrun `budget_s`; 'ended_by'
  says which;
- Stop (cancelling the runs) keeps the complete pairs.

The statistics are engine.report.stats; results are stored in the comparisons
table (engine.store_comparisons). No TF in this process.
"""
from __future__ import annotations

import math
import os
import time
import uuid
from typing import Callable, Optional

from engine import store_comparisons as cstore
from engine.config import RunConfig, baseline_config
from engine.report import stats
from engine.store import ACTIVE_STATUSES, Store

GROUP_PREFIX = "cmp-"
# An A/A comparison's second side trains on seed + this: its time to accuracy then spreads
# as much as an A/B pair's, which also differs in how many epochs each side needs.
AA_SEED_OFFSET = 1000
MEASURES = (("time_to_accuracy", "baseline_time_to_accuracy_sec", "time_to_accuracy_sec", False),
            ("end_to_end", "baseline_end_to_end_samples_per_sec", "end_to_end_samples_per_sec", True),
            ("steady", "baseline_samples_per_sec", "samples_per_sec", True))


def orders(n: int) -> list[str]:
    """The order of each of `n` pairs: 'AB', 'BA', 'AB', ... (A = baseline side)."""
    return ["AB" if i % 2 == 0 else "BA" for i in range(n)]


def baseline_of(cfg: RunConfig, baseline_kind: str = "default", store_path: Optional[os.PathLike] = None
                ) -> tuple[RunConfig, Optional[dict]]:
    """(the baseline config of `cfg`, the engine.tuned_baselines row it used or None).
    'default': engine.config.baseline_config (cfg's own learning rate, constant); 'tuned':
    the same with the stored tuned learning rate.
    Raises: ConfigError (field baseline) when 'tuned' has no stored row, or the kind is unknown."""
    from engine.errors import ConfigError

    base = baseline_config(cfg)
    if baseline_kind == "default":
        return base, None
    if baseline_kind != "tuned":
        raise ConfigError("baseline", baseline_kind, "is not a baseline kind", "use default or tuned")
    from engine import tuned_baselines

    store = Store(store_path)
    try:
        row = tuned_baselines.get(store, cfg)
    finally:
        store.close()
    if row is None:
        raise tuned_baselines.missing_error(cfg)
    return base.replace(learning_rate=row["learning_rate"]), row


def start(cfg: RunConfig, kind: str = "ab", pairs: Optional[int] = None, max_pairs: int = stats.MAX_PAIRS,
          target_half_width: float = stats.TARGET_HALF_WIDTH, budget_s: Optional[float] = None,
          store_path: Optional[os.PathLike] = None, baseline_kind: str = "default",
          margin: Optional[float] = None) -> int:
    """Queue a comparison of `cfg` against its baseline (kind 'ab'), or of the
    baseline of `cfg` against itself (kind 'aa': the machine's noise floor).

    Args:
        pairs: exactly this many pairs; None: adaptive, up to `max_pairs`.
        target_half_width: adaptive stop once the 95% interval is within ± this (relative).
        budget_s: adaptive stop before a pair that would end after this many s
            from the start (None: no budget).
        baseline_kind: 'default' (cfg's learning rate, constant) or 'tuned' (the stored
            tuned learning rate, engine.tuned_baselines), see `baseline_of`.
        margin: equivalence margin (relative; None: this machine's noise floor, at least
            engine.report.stats.MIN_MARGIN).
    Returns: the comparison id. Raises: as engine.jobs.runner.submit; ValueError
    for a pair count under 1; ConfigError for a tuned baseline that is not stored.
    """
    from engine.jobs import runner

    n = pairs if pairs is not None else max_pairs
    if n < 1:
        raise ValueError(f"pairs must be at least 1, not {n}")
    base, tuned = baseline_of(cfg, baseline_kind, store_path)
    run_cfg = base if kind == "aa" else cfg
    configs, roles, plan = [], [], []
    for i, order in enumerate(orders(n)):
        b_seed = cfg.seed + i + (AA_SEED_OFFSET if kind == "aa" else 0)
        sides = {"A": (base.replace(seed=cfg.seed + i), "baseline"), "B": (run_cfg.replace(seed=b_seed), "run")}
        for side in order:
            configs.append(sides[side][0])
            roles.append(sides[side][1])
        plan.append({"pair": i, "seed": cfg.seed + i, "order": order})
    group = GROUP_PREFIX + uuid.uuid4().hex[:8]
    ids = runner.submit(configs, roles, store_path, start=False, group_id=group)
    store = Store(store_path)
    try:
        for i, p in enumerate(plan):
            a, b = ids[2 * i], ids[2 * i + 1]
            bid, rid = (a, b) if p["order"] == "AB" else (b, a)
            p.update(baseline_id=bid, run_id=rid)
            store.update_run(rid, baseline_id=bid)
            store.update_run(bid, baseline_id=bid)
        settings = {"pairs": pairs, "max_pairs": n, "target_half_width": target_half_width,
                    "budget_s": budget_s, "min_pairs": min(stats.MIN_PAIRS, n), "baseline_kind": baseline_kind,
                    "margin": margin, "tuned_baseline": tuned and {k: tuned[k] for k in
                                                                  ("id", "created", "hostname", "learning_rate")}}
        cid = cstore.create(store, kind, group, settings, plan, os.uname().nodename)
    finally:
        store.close()
    runner.ensure_queue(store_path)
    return cid


def _pair_rows(store: Store, plan: list, target: Optional[float]) -> list[dict]:
    from engine.report.compare import compare

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


def baseline_label(kind: str, cfg: Optional[dict]) -> Optional[str]:
    """What a comparison's baseline is, for every headline: 'Keras-default Adam 1e-3',
    'tuned Adam 0.003', or 'untuned Adam 0.003' (a constant rate the user chose);
    None without a config; 'your baseline command' for two commands (engine.jobs.command_pairs)."""
    if kind == "command":
        return "your baseline command"
    if not cfg:
        return None
    opt = cfg.get("optimizer") or "adam"
    lr = cfg.get("learning_rate")
    name = {"adam": "Adam", "sgd": "SGD", "rmsprop": "RMSprop"}.get(opt, opt)
    lr_text = "1e-3" if lr == 1e-3 else f"{lr:g}" if lr is not None else "?"
    if kind == "tuned":
        return f"tuned {name} {lr_text}"
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


def _test_delta(done: list[dict]) -> Optional[dict]:
    """Test accuracy, run minus baseline, over the complete pairs that have both:
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
    reached the target), 'test_accuracy_delta' (`_test_delta`), 'margin' (the
    equivalence margin), 'baseline_kind' ('default' | 'tuned'), 'baseline_label'
    (`baseline_label`), 'baseline_ids', 'run_ids' (planned, not dropped),
    'baselines_measured' (the baselines that started),
    'baseline_measured' (Unix s the first baseline started), 'baseline_reused' (False)}.
    """
    from engine.report.compare import effective_target

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
           "baseline_kind": kind, "baseline_label": baseline_label(kind, (base_run or {}).get("config")),
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
    out["test_accuracy_delta"] = _test_delta(done)
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


def _drop_queued(store: Store, comparison: dict) -> int:
    """Delete the comparison's runs that have not started (no longer needed); returns how many."""
    plan = comparison["plan"]
    dropped = 0
    with store.tx() as conn:
        for p in plan:
            for key in ("baseline_id", "run_id"):
                if conn.execute("DELETE FROM runs WHERE id=? AND status='queued'", (p[key],)).rowcount:
                    dropped += 1
                    p["dropped"] = True
    cstore.update(store, comparison["id"], plan=plan)
    return dropped


def _stop_reason(comparison: dict, result: dict, now: float) -> Optional[str]:
    """Why an adaptive or fixed comparison should queue no more pairs, or None."""
    s = comparison["settings"]
    rows = result["pair_rows"]
    k = result["pairs"]
    if any(r["status"] in ("incomplete", "not run") for r in rows):
        return f"stopped by the user; {k} complete pair{'s' if k != 1 else ''} kept"
    failed = [r for r in rows if r["status"] == "failed"]
    if failed:
        return f"a run of pair {failed[0]['pair'] + 1} failed; {k} complete pair{'s' if k != 1 else ''} kept"
    if s.get("pairs") is not None:
        return f"the {s['pairs']} pair{'s' if s['pairs'] != 1 else ''} asked for" if k >= s["pairs"] else None
    summary = result[result["measure"]]
    why = stats.adaptive_stop(summary, k, s["max_pairs"], s["target_half_width"], s.get("min_pairs", stats.MIN_PAIRS))
    if why == "precise":
        return f"interval within ±{s['target_half_width'] * 100:.0f}% after {k} pairs"
    if why == "pair limit":
        hw = summary.get("half_width")
        return f"pair limit ({s['max_pairs']}) reached" + (f"; interval ±{hw * 100:.0f}%" if hw is not None else "")
    budget = s.get("budget_s")
    if budget and k:
        elapsed = now - comparison["created"]
        if elapsed + elapsed / k > budget:
            return f"time budget ({budget:.0f} s) reached after {k} pair{'s' if k != 1 else ''}"
    return None


def on_run_end(store: Store, run_id: int) -> Optional[dict]:
    """The queue process's hook after each run: if the run belongs to a comparison,
    update its result and, at a pair boundary, stop it when `_stop_reason` says so
    (unstarted runs are deleted). Returns the comparison after the update, or None."""
    run = store.get_run(run_id)
    if run is None or not (run.get("group_id") or "").startswith(GROUP_PREFIX):
        return None
    comp = cstore.by_group(store, run["group_id"])
    if comp is None or comp["status"] != "running":
        return comp
    result = evaluate(store, comp)
    rows = result["pair_rows"]
    # Decide only at a pair boundary (no pair with one side run and the other to come),
    # or at once when a pair broke (a side stopped or failed).
    half_done = any(r["status"] == "pending" and any((store.get_run(r[k]) or {}).get("status") != "queued"
                                                     for k in ("baseline_id", "run_id")) for r in rows)
    broken = any(r["status"] in ("incomplete", "failed") for r in rows)
    reason = _stop_reason(comp, result, time.time()) if broken or not half_done else None
    if reason:
        _drop_queued(store, comp)
        comp = cstore.get(store, comp["id"])
        result = evaluate(store, comp)
    return finish_if_done(store, comp, result, reason)


def finish_if_done(store: Store, comp: dict, result: Optional[dict] = None,
                   reason: Optional[str] = None) -> dict:
    """Store `result` (default: `evaluate`); mark the comparison final once none of
    its runs is queued or running. Idempotent; returns the comparison."""
    result = result if result is not None else evaluate(store, comp)
    cols = {"result": result}
    if comp["status"] == "running" and not any(r["status"] == "pending" for r in result["pair_rows"]):
        rows = result["pair_rows"]
        stopped = any(r["status"] in ("incomplete", "not run") for r in rows)
        failed = any(r["status"] == "failed" for r in rows)
        reason = reason or comp.get("ended_by") or _stop_reason(comp, result, time.time()) or \
            f"all {len(rows)} planned pairs ran"
        cols.update(status="failed" if failed and not result["pairs"] else "stopped" if stopped or failed
                    else "completed", ended=time.time(), ended_by=reason)
    elif reason:
        cols["ended_by"] = reason
    cstore.update(store, comp["id"], **cols)
    return cstore.get(store, comp["id"])


def wait(comparison_id: int, store_path: Optional[os.PathLike] = None, poll_s: float = 0.5,
         on_poll: Optional[Callable[[dict], None]] = None, timeout_s: Optional[float] = None) -> dict:
    """Block until the comparison is final; `on_poll(comparison)` each poll. Returns it.
    Raises: TimeoutError after `timeout_s`."""
    from engine.jobs import runner

    t0 = time.monotonic()
    store = Store(store_path)
    try:
        while True:
            runner.reconcile(store)
            comp = cstore.get(store, comparison_id)
            comp = settle_if_idle(store, comp)  # e.g. stopped between two runs
            if on_poll:
                on_poll(comp)
            if comp["status"] != "running":
                return comp
            if timeout_s is not None and time.monotonic() - t0 > timeout_s:
                raise TimeoutError(f"comparison {comparison_id} still running after {timeout_s} s")
            time.sleep(poll_s)
    finally:
        store.close()


def settle_if_idle(store: Store, comp: dict) -> dict:
    """Mark a running comparison final when none of its runs is queued or running
    (e.g. Stop cancelled its queued runs before the next one started: no run ended,
    so the queue's hook never ran). Returns the comparison as stored now."""
    if comp["status"] != "running":
        return comp
    s = comp.get("settings") or {}
    if s.get("baseline_kind") == "command":  # two commands (engine.jobs.command_pairs): its process settles it
        from engine.process import process_alive

        if process_alive(s.get("pid"), s.get("pid_started")):
            return comp
    for p in comp.get("plan") or []:
        for k in ("baseline_id", "run_id"):
            r = store.get_run(p[k]) if not p.get("dropped") else None
            if r is not None and r["status"] in ACTIVE_STATUSES:
                return comp
    return finish_if_done(store, comp)


def running(store: Store) -> Optional[dict]:
    """The newest comparison still running (one whose runs all ended is settled first), or None."""
    for c in cstore.list_all(store):
        if c["status"] == "running" and settle_if_idle(store, c)["status"] == "running":
            return c
    return None


def is_comparison_run(run: Optional[dict]) -> bool:
    """Whether a run belongs to a comparison (its group_id)."""
    return bool(run) and (run.get("group_id") or "").startswith(GROUP_PREFIX)
