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
  verdict, test accuracy's part included, would not change if the pairs left fell within the
  range of those seen (engine.report.stats.verdict_settled, its words state that), the
  pair limit is reached, or the next pair would overrun `budget_s`; 'ended_by'
  says which;
- Stop (cancelling the runs) keeps the complete pairs.

A comparison whose own process plans its pairs and ends it (two commands, engine.jobs.
command_pairs; the autopilot's confirmation and ablation, engine.autopilot.confirm) carries that
process in its settings ('pid', 'pid_started'): while it lives no other process settles it
(`owner_alive`), and a stop signal reaches it (`signal_owner`).

The statistics are engine.report.stats; results are stored in the comparisons
table (engine.store.comparisons). No TF in this process.
"""
from __future__ import annotations

import os
import time
import uuid
from typing import Callable, Optional

from engine.store import comparisons as cstore
from engine.config import RunConfig, baseline_config
from engine.report import stats
from engine.report import headline as report_headline
from engine.report.comparison import evaluate, failures, time_split
from engine.store import ACTIVE_STATUSES, Store

GROUP_PREFIX = "cmp-"
# An A/A comparison's second side trains on seed + this: its time to accuracy then spreads
# as much as an A/B pair's, which also differs in how many epochs each side needs.
AA_SEED_OFFSET = 1000
# What a comparison keeps of the tuned baseline it ran against (engine.store.tuned_baselines.get).
TUNED_KEYS = ("id", "created", "hostname", "fingerprint", "learning_rate", "schedule", "warmup_epochs", "max_lr",
              "label_smoothing", "tuning_seeds", "reached", "spread")


def orders(n: int) -> list[str]:
    """The order of each of `n` pairs: 'AB', 'BA', 'AB', ... (A = baseline side)."""
    return ["AB" if i % 2 == 0 else "BA" for i in range(n)]


def baseline_of(cfg: RunConfig, baseline_kind: str = "default", store_path: Optional[os.PathLike] = None
                ) -> tuple[RunConfig, Optional[dict]]:
    """(the baseline config of `cfg`, the engine.store.tuned_baselines row it used or None).
    'default': engine.config.baseline_config (cfg's own learning rate, constant); 'tuned':
    the same with the stored tuned schedule, peak learning rate, warmup and label smoothing
    (engine.store.tuned_baselines.config_fields).
    Raises: ConfigError (field baseline) when 'tuned' has no stored row, or the kind is unknown."""
    from engine.base.errors import ConfigError

    base = baseline_config(cfg)
    if baseline_kind == "default":
        return base, None
    if baseline_kind != "tuned":
        raise ConfigError("baseline", baseline_kind, "is not a baseline kind", "use default or tuned")
    from engine.store import tuned_baselines

    store = Store(store_path)
    try:
        from engine.hardware import fingerprint

        row = tuned_baselines.get(store, cfg, fingerprint.row_here)
        elsewhere = tuned_baselines.get(store, cfg) if row is None else None
    finally:
        store.close()
    if row is None and elsewhere is not None:  # tuned on another machine: its schedule is not this one's
        k = tuned_baselines.key_of(cfg)
        where = (elsewhere.get("fingerprint") or {}).get("name") or fingerprint.UNKNOWN
        raise ConfigError("baseline", "tuned", f"for {k['dataset']}/{k['model']} was tuned on another machine "
                          f"({where}), not this one ({fingerprint.fingerprint()['name']})",
                          "run python -m engine tune-baseline here" + (
                              "" if elsewhere.get("fingerprint") else
                              f", or set {fingerprint.UNKNOWN_SETTING}=1 to use one stored before fingerprints"))
    if row is None:
        raise tuned_baselines.missing_error(cfg)
    return base.replace(**tuned_baselines.config_fields(row)), row


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
            tuned schedule and peak learning rate, engine.store.tuned_baselines), see `baseline_of`.
        margin: equivalence margin (relative; None: engine.report.stats.DEFAULT_MARGIN, 5%).
    Returns: the comparison id. Raises: as engine.jobs.runner.submit; ValueError
    for a pair count under 1; ConfigError for a tuned baseline that is not stored, or for
    pairs whose seeds (cfg.seed + i; A/A's run side + AA_SEED_OFFSET too) include a tuning
    seed (engine.config.seeds).
    """
    from engine.config.seeds import refuse_tuning_seeds
    from engine.jobs import runner

    n = pairs if pairs is not None else max_pairs
    if n < 1:
        raise ValueError(f"pairs must be at least 1, not {n}")
    refuse_tuning_seeds(cfg.seed, [*range(n), *(AA_SEED_OFFSET + i for i in range(n) if kind == "aa")],
                        f"a comparison of {n} pairs")
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
        from engine.hardware import fingerprint

        settings = {"pairs": pairs, "max_pairs": n, "target_half_width": target_half_width,
                    "budget_s": budget_s, "min_pairs": min(stats.MIN_PAIRS, n), "baseline_kind": baseline_kind,
                    "margin": margin, "tuned_baseline": tuned and {k: tuned.get(k) for k in TUNED_KEYS},
                    "fingerprint": fingerprint.short()}  # the machine: what a noise floor lookup matches on
        cid = cstore.create(store, kind, group, settings, plan, os.uname().nodename)
    except BaseException:
        # Interrupted (a stop signal in the CLI) or failed before the comparison existed: its runs,
        # queued and handed to no queue yet, go with it, all or nothing (they were left cancelled
        # in a group no comparison named).
        try:
            store.delete_queued(ids)
        except Exception:  # noqa: BLE001 - the store itself failed: reconcile settles them as orphans
            pass
        raise
    finally:
        store.close()
    runner.ensure_queue(store_path)
    return cid


def withdraw_queued(store: Store, comparison: dict) -> int:
    """Delete the comparison's runs that have not started (no longer needed); returns how many.
    Each pair records which sides went ('dropped_keys'); 'dropped' when both did (a pair whose
    other side ran, e.g. failed, still counts: engine.report.comparison.pair_rows)."""
    plan = comparison["plan"]
    gone = store.delete_queued([p[key] for p in plan for key in ("baseline_id", "run_id")])
    for p in plan:
        for key in ("baseline_id", "run_id"):
            if p[key] in gone:
                p["dropped_keys"] = [*p.get("dropped_keys", []), key]
        if len(p.get("dropped_keys", [])) == 2:
            p["dropped"] = True
    cstore.update(store, comparison["id"], plan=plan)
    return len(gone)


def _stop_reason(comparison: dict, result: dict, now: float) -> Optional[str]:
    """Why an adaptive or fixed comparison should queue no more pairs, or None."""
    s = comparison["settings"]
    rows = result["pair_rows"]
    k = result["pairs"]
    if any(r["status"] in ("incomplete", "not run") for r in rows):
        return f"stopped by the user; {k} complete pair{'s' if k != 1 else ''} kept"
    failed = failures(rows)
    if failed:
        side = "candidate" if failed[0]["outcomes"].get("run") == "failed" else "baseline"
        return (f"the {side} of pair {failed[0]['pair'] + 1} failed (counted as a miss); "
                f"{k} pair{'s' if k != 1 else ''} counted")
    if s.get("pairs") is not None:
        return f"the {s['pairs']} pair{'s' if s['pairs'] != 1 else ''} asked for" if k >= s["pairs"] else None
    summary = result[result["measure"]]
    why = stats.adaptive_stop(summary, k, s["max_pairs"], s["target_half_width"], s.get("min_pairs", stats.MIN_PAIRS))
    if why == "precise":
        return f"interval within ±{s['target_half_width'] * 100:.0f}% after {k} pairs"
    floor = ((result.get("noise_floor") or {}).get("half_width") or {}).get(result["measure"])
    delta = result.get("test_accuracy_delta")
    if not result.get("machines") and stats.verdict_settled(summary, k, s["max_pairs"],
                                                             s.get("min_pairs", stats.MIN_PAIRS), floor, delta=delta):
        # Test accuracy is part of a 'faster' verdict (held or not), and then of the stop's assumption.
        accuracy = result.get("verdict") in ("faster", stats.FASTER_NOT_HELD) and stats.accuracy_held(delta) is not None
        return report_headline.settled_text(k, s["max_pairs"], accuracy)
    if why == "pair limit":
        ci = summary.get("ci95")  # two ends, as every interval is written
        return f"pair limit ({s['max_pairs']}) reached" + (
            f"; interval {report_headline.ratio_text(ci[0])} to {report_headline.ratio_text(ci[1])}" if ci else "")
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
    broken = any(r["status"] == "incomplete" for r in rows) or bool(failures(rows))
    # A stop signal's reason (engine.jobs.stopping, or a worker's own: "stopped: the worker got
    # SIGTERM") outranks the statistics' and "the user"'s
    signalled = run["error"] if run["status"] == "cancelled" and (run.get("error") or "").startswith("stopped: ") \
        else None
    reason = comp.get("ended_by") or signalled or (
        _stop_reason(comp, result, time.time()) if broken or not half_done else None)
    if reason:
        withdraw_queued(store, comp)
        comp = cstore.get(store, comp["id"])
        result = evaluate(store, comp)
    return finish_if_done(store, comp, result, reason)


def finish_if_done(store: Store, comp: dict, result: Optional[dict] = None,
                   reason: Optional[str] = None) -> dict:
    """Store `result` (default: `evaluate`); mark the comparison final once none of
    its runs is queued or running. Idempotent; returns the comparison. Writes only while it
    is running in the store: the first process to end it (the queue, the CLI) decides."""
    result = result if result is not None else evaluate(store, comp)
    cols = {"result": result}
    if comp["status"] == "running" and not any(r["status"] == "pending" for r in result["pair_rows"]):
        rows = result["pair_rows"]
        stopped = any(r["status"] in ("incomplete", "not run") for r in rows)
        failed = bool(failures(rows))
        usable = (result.get(result.get("measure") or "time_to_accuracy") or {}).get("pairs", 0)
        # A comparison whose process plans its pairs as they run (`store_plan`) and ended before
        # planning all it asked for stopped short: never "all planned pairs ran".
        own = comp.get("settings") or {}
        short = own.get("pid") is not None and own.get("pairs") is not None and len(rows) < own["pairs"]
        reason = reason or comp.get("ended_by") or _stop_reason(comp, result, time.time()) or (
            f"its process ended after {len(rows)} of the {own['pairs']} pairs asked for" if short else
            f"all {len(rows)} planned pairs ran")
        signalled = reason.startswith("stopped: ")  # a stop signal's (engine.jobs.stopping): pairs withdrawn
        if signalled and " kept" not in reason:
            reason += f"; {usable} complete pair{'s' if usable != 1 else ''} kept"
        ended = time.time()
        result["time"] = time_split(store, comp, ended)  # the comparison's wall time: runs, waiting, rest
        cols.update(status="failed" if failed and not usable else "stopped" if stopped or failed or signalled
                    or short else "completed", ended=ended, ended_by=reason)
        cstore.update(store, comp["id"], only_if_running=True, **cols)  # another process's end stays
        return cstore.get(store, comp["id"])
    if reason:
        cols["ended_by"] = reason
    # Only while it runs: a process that read it before another ended it (a stop signal reaches
    # the CLI and the queue at once) must not write its stale result or reason over that end.
    cstore.update(store, comp["id"], only_if_running=True, **cols)
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
    if owner_alive(comp):  # its own process plans its pairs and ends it (two commands, the autopilot)
        return comp
    for p in comp.get("plan") or []:
        for k in ("baseline_id", "run_id"):
            r = store.get_run(p[k]) if not p.get("dropped") else None
            if r is not None and r["status"] in ACTIVE_STATUSES:
                return comp
    return finish_if_done(store, comp)


def running(store: Store) -> Optional[dict]:
    """The newest comparison still running (one whose runs all ended is settled first), or None.
    The autopilot's (settings 'autopilot') are left out: the Autopilot page follows them."""
    for c in cstore.list_all(store):
        if c["status"] == "running" and not (c.get("settings") or {}).get("autopilot") \
                and settle_if_idle(store, c)["status"] == "running":
            return c
    return None


def owner_alive(comp: dict) -> bool:
    """Whether the process that owns a comparison still runs: one that plans its pairs itself
    and stores its own end (settings 'pid' and 'pid_started': two commands,
    engine.jobs.command_pairs; the autopilot's confirmation and ablation, engine.autopilot.confirm).
    While it lives no other process settles the comparison (`settle_if_idle`) or withdraws its
    runs (engine.jobs.stopping.stop_all signals it instead). False for a comparison the queue runs."""
    s = comp.get("settings") or {}
    if s.get("pid") is None:
        return False
    from engine.base.process import process_alive

    return process_alive(s.get("pid"), s.get("pid_started"))


def signal_owner(store: Store, comp: dict, reason: str) -> str:
    """Stop a comparison its own process runs (`owner_alive`): record `reason` as why it ends
    (the first stop's reason stays), then SIGTERM that process, which stops its running side and
    ends the comparison with its complete pairs kept. Returns one line saying what was done."""
    import signal

    cstore.mark_stopping(store, comp["id"], reason)
    pid = int(comp["settings"]["pid"])
    try:
        os.kill(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError) as e:
        return f"comparison {comp['id']}: its process (pid {pid}) could not be signalled ({e})"
    return f"comparison {comp['id']}: stop requested (its process, pid {pid}, ends it)"


def store_plan(store: Store, comparison_id: int, plan: list[dict]) -> dict:
    """For a comparison its own process runs (`owner_alive`): store its plan so far and the result
    of it (`evaluate`) while it runs, without ending it (between two of its pairs nothing is
    pending, yet more pairs are to come). Returns the comparison as stored now."""
    comp = {**cstore.get(store, comparison_id), "plan": plan}
    cstore.update(store, comparison_id, only_if_running=True, plan=plan, result=evaluate(store, comp))
    return cstore.get(store, comparison_id)

