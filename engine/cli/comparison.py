"""CLI side of comparisons (engine.jobs.comparison): flags, following, printing; not a subcommand.

Used by ``run --baseline`` (a configuration against its baseline), ``noise`` (the
baseline against itself) and ``pairs`` (two commands; its printing only)."""
from __future__ import annotations

import sys
import time

from engine.report import stats
from engine.report import headline as report_headline


def add_pair_args(p) -> None:
    """--pairs, --max-pairs, --precision, --budget-s."""
    g = p.add_argument_group("comparison (interleaved pairs, seed i for pair i)")
    g.add_argument("--pairs", type=int, metavar="N",
                   help="run exactly N pairs [adaptive: until the 95%% interval is within ±--within, "
                        "--max-pairs or --budget-s]")
    g.add_argument("--max-pairs", type=int, default=stats.MAX_PAIRS, metavar="N",
                   help=f"adaptive: pair limit [{stats.MAX_PAIRS}]")
    g.add_argument("--within", type=float, default=stats.TARGET_HALF_WIDTH, metavar="FRAC",
                   help=f"adaptive: stop once the interval is within ± this fraction [{stats.TARGET_HALF_WIDTH}]")
    g.add_argument("--budget-s", type=float, metavar="S", help="adaptive: time budget in s [none]")
    g.add_argument("--margin", type=float, metavar="FRAC",
                   help="'equivalent' only when the interval lies within ± this fraction "
                        "[this machine's noise floor, at least 0.02]")
    g.add_argument("--all-epochs", action="store_true",
                   help="train every epoch [a time-to-accuracy comparison ends each run at the target]")


def check_pair_args(args) -> None:
    """Raises ConfigError for a pair count or precision out of range."""
    from engine.base.errors import ConfigError

    if args.pairs is not None and not 1 <= args.pairs <= 50:
        raise ConfigError("pairs", args.pairs, "is out of range", "give 1 to 50 pairs (2 or more for an interval)")
    if not 1 <= args.max_pairs <= 50:
        raise ConfigError("max_pairs", args.max_pairs, "is out of range", "give 1 to 50")
    if not 0 < args.within < 1:
        raise ConfigError("within", args.within, "is not a fraction", "give e.g. 0.10 for ±10%")
    if getattr(args, "margin", None) is not None and not 0 < args.margin < 1:
        raise ConfigError("margin", args.margin, "is not a fraction", "give e.g. 0.05 for ±5%")
    if args.budget_s is not None and args.budget_s <= 0:
        raise ConfigError("budget_s", args.budget_s, "is not positive", "give seconds, e.g. 600")


def run_comparison(cfg, kind: str, args) -> dict:
    """Start an A/A comparison of `cfg` (`engine noise`) and follow it (`follow_comparison`)."""
    from engine.config import comparison_config
    from engine.jobs import comparison

    cfg = comparison_config(cfg, all_epochs=getattr(args, "all_epochs", False))
    cid = comparison.start(cfg, kind=kind, pairs=args.pairs, max_pairs=args.max_pairs,
                           target_half_width=args.within, budget_s=args.budget_s,
                           margin=getattr(args, "margin", None))
    return follow_comparison(cid, cfg, kind, args)


def follow_comparison(cid: int, cfg, kind: str, args) -> dict:
    """Follow comparison `cid` of `cfg` with progress lines (unless --quiet); Ctrl-C stops it
    (complete pairs are kept). Returns the final comparison row."""
    from engine.cli.follow import progress_line, until_done
    from engine.jobs import comparison, runner
    from engine.store import Store
    from engine.store import comparisons as cstore

    quiet = args.quiet
    if not quiet:
        how = f"{args.pairs} pairs" if args.pairs else (f"adaptive: until ±{args.within * 100:.0f}%, "
                                                        f"at most {args.max_pairs} pairs")
        print(f"comparison {cid} ({'A/A: the baseline against itself' if kind == 'aa' else 'baseline vs run'}; "
              f"{how}; pair i on seed {cfg.seed}+i, order AB BA ...)", file=sys.stderr)
    state = {"run": None, "cb": None, "shown": 0}

    def poll(store):
        comp = cstore.get(store, cid)
        if quiet:
            return comp
        result = comp.get("result") or {}
        hist = result.get("history") or []
        done = [r for r in result.get("pair_rows") or [] if r["status"] == "complete"]
        measure = result.get("measure")
        for h, row in list(zip(hist, done))[state["shown"]:]:
            so_far = {"half_width": stats.half_width(h["ci95"]), **h}
            ratio = stats.pair_ratio(row[f"baseline_{measure}"], row[measure], measure != "time_to_accuracy")
            sys.stderr.write(("\n" if sys.stderr.isatty() else "") +
                             f"pair {row['pair'] + 1} ({row['order']}, seed {row['seed']}): "
                             f"{report_headline.ratio_text(ratio)} {measure.replace('_', ' ')}; so far: "
                             f"{report_headline.summary_headline(so_far)['text']}\n")
            state["shown"] += 1
        active = next((store.get_run(p[k]) for p in comp["plan"] if not p.get("dropped")
                       for k in (("baseline_id", "run_id") if p["order"] == "AB" else ("run_id", "baseline_id"))
                       if (store.get_run(p[k]) or {}).get("status") in ("queued", "running")), None)
        if active:
            if state["run"] != active["id"]:
                state["run"], state["cb"] = active["id"], progress_line(active["id"])
            state["cb"](active)
        return comp

    def follow():
        while True:
            store = Store()
            try:
                runner.reconcile(store)
                comp = poll(store)
                comp = comparison.settle_if_idle(store, comp)
            finally:
                store.close()
            if comp["status"] != "running":
                return comp
            time.sleep(0.5)

    return until_done(follow, lambda: comparison.wait(cid),
                      f"stopping comparison {cid} (complete pairs are kept; more presses change nothing) ...", quiet,
                      f"comparison {cid}")


def comparison_json(comp: dict) -> dict:
    """The 'comparison' object of --json: the stored result's flat fields (see
    engine.report.comparison.evaluate: 'verdict' is the one every page shows, noise floor and
    test accuracy applied) plus 'comparison_id', 'status', 'ended_by', 'headline',
    'headline_note', 'headline_factors', 'headline_setup', 'headline_reached' and
    'headline_test' (engine.report.headline.comparison_headline)."""
    result = dict(comp.get("result") or {})
    h = report_headline.comparison_headline(result)
    result.update(comparison_id=comp["id"], status=comp["status"], ended_by=comp.get("ended_by"),
                  headline=h["text"], headline_note=h["note"], headline_factors=h.get("factors"),
                  headline_setup=h.get("setup"), headline_reached=h.get("reached"), headline_test=h.get("test"))
    return result


def comparison_rows(c: dict) -> list[tuple[str, str]]:
    """(name, text) rows of a comparison_json() result for the terminal."""
    rows = [("comparison", f"#{c['comparison_id']}: {c['headline']}" +
             (f" ({report_headline.MEASURE_NAMES.get(c['measure'], c['measure'])})" if c.get("measure") else ""))]
    if c.get("headline_note"):
        rows.append(("note", c["headline_note"]))
    for key in ("factors", "setup", "reached", "test"):
        if c.get(f"headline_{key}"):
            rows.append(({"factors": "split", "setup": "with setup", "reached": "seeds",
                          "test": "test accuracy"}[key], c[f"headline_{key}"]))
    for name, label in (("time_to_accuracy", "time to accuracy"), ("end_to_end", "end-to-end"),
                        ("steady", "steady")):
        s = c.get(name) or {}
        if s.get("speedup") is None:
            rows.append((label, "-" + (f"  ({s['not_reached']} pairs without a ratio)" if s.get("not_reached") else "")))
            continue
        ci = s.get("ci95")
        ratios = ", ".join("-" if x is None else f"{x:.2f}" for x in s["pair_ratios"])
        rows.append((label, report_headline.ratio_text(s['speedup']) + (f" ({report_headline.interval_text(ci)})" if ci else "")
                     + f", {s['verdict'] or 'no interval'}; pairs: {ratios}"
                     + (f"; {s['not_reached']} without a ratio" if s.get("not_reached") else "")))
    # Pairs whose two sides ended (a failed side too): "complete" is kept for pairs with a ratio,
    # as the ended-by line counts them ("0 complete pairs kept" after "2 complete" read as a contradiction).
    rows.append(("pairs", f"{c.get('pairs')} of {c.get('planned')} planned ran; ended by: {c.get('ended_by')}"))
    # a pair of two commands whose side recorded no run has None there (engine.jobs.command_pairs)
    rows.append(("runs", "baseline " + ", ".join(f"#{i}" for i in c.get("baseline_ids") or [] if i is not None) +
                 "; run " + ", ".join(f"#{i}" for i in c.get("run_ids") or [] if i is not None)))
    return rows
