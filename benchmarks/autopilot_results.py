"""A dated Markdown record of one autopilot invocation, for benchmarks/results/.

`render(state, ...)` turns the autopilot's final state (what `python -m engine
autopilot --json` prints last, or `Autopilot.run()` returns) into Markdown: the
command, the load average, the search, the runoff, the winner, the confirming
pairs with the comparisons' interval and verdict, the ablation with its
intervals, where each side's time went (from the run store: warm-up, training,
validation, epochs, samples/s, MFU, data wait), and the goal checked. `write`
appends it to benchmarks/results/<UTC date>-autopilot-<dataset>.md, so that
every invocation of a day stays on record.

    python benchmarks/autopilot_results.py --from-json out.json --command "..." \
        [--loadavg loadavg.txt] [--wall 1234] [--out FILE]

(reads the runs from the store at $SPEEDLAB_HOME, the one the autopilot used).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
# The goal (issue 31): a confirmed speedup of at least this ...
GOAL_SPEEDUP = 2.5
# ... with the 95% interval's lower end at least this.
GOAL_LOW = 2.0
# Issue 40's goal, against the tuned baseline: at least this, ...
TUNED_GOAL = 2.0
# ... with the interval's lower end above this, every seed reached, and test accuracy no lower
# than the tuned baseline's by more than this (fraction).
TUNED_GOAL_LOW = 1.5
TEST_MARGIN = 0.005
PARTS = ("warmup_sec", "train_sec", "validation_sec", "epochs_run", "samples_per_sec", "mfu", "data_wait_share",
         "mfu_of_best_matmul")


def _s(v) -> str:
    return "not reached" if v is None else f"{v:.2f} s"


def _x(v) -> str:
    return "–" if v is None else f"{v:.2f}x"


def _ci(ci) -> str:
    return "–" if not ci else f"[{ci[0]:.2f}–{ci[1]:.2f}]"


def default_path(dataset: str, when: Optional[dt.datetime] = None) -> Path:
    """benchmarks/results/YYYY-MM-DD-autopilot-<dataset>.md (UTC date)."""
    when = when or dt.datetime.now(dt.timezone.utc)
    return RESULTS / f"{when:%Y-%m-%d}-autopilot-{dataset}.md"


def breakdown(run_ids: list[int]) -> dict:
    """Medians over the runs `run_ids` of their summaries' PARTS (s, epochs,
    samples/s, MFU 0-1, data wait share 0-1), from the store at $SPEEDLAB_HOME;
    {} when none is there."""
    from engine.report import mfu
    from engine.store import Store

    st = Store()
    try:
        rows = [(st.get_run(i) or {}).get("summary") or {} for i in run_ids if i]
        # MFU as PaLM defines it (the theoretical peak): a run stored before issue 41 divided
        # by a measured matmul, so its figure is restated against this machine's peak.
        rows = [{**r, **{k: v for k, v in mfu.of(r).items() if k in ("mfu", "mfu_of_best_matmul")}}
                if r.get("samples_per_sec") else r for r in rows]
    finally:
        st.close()
    out = {}
    for k in PARTS:
        xs = [r[k] for r in rows if isinstance(r.get(k), (int, float))]
        if xs:
            out[k] = statistics.median(xs)
    return out


def goal_line(sp: dict) -> str:
    """Whether the confirmed speedup meets the goal (GOAL_SPEEDUP, interval's low end GOAL_LOW)."""
    x, ci = sp.get("speedup"), sp.get("ci95")
    if x is None or not ci:
        return "goal not checked: no interval (fewer than 2 complete pairs)"
    ok = x >= GOAL_SPEEDUP and ci[0] >= GOAL_LOW
    return (f"goal ({GOAL_SPEEDUP}x, interval's lower end >= {GOAL_LOW}x): "
            f"{'met' if ok else 'not met'}: {x:.2f}x with the lower end at {ci[0]:.2f}x")


def tuned_goal_line(sp: dict) -> str:
    """Issue 40's goal for the winner against the tuned baseline (`sp`: its paired speedup with
    'reached' and 'test_accuracy_delta'): at least TUNED_GOAL x, the interval's lower end above
    TUNED_GOAL_LOW x, the target reached on every seed, test accuracy within TEST_MARGIN of it."""
    x, ci, reached, delta = sp.get("speedup"), sp.get("ci95"), sp.get("reached") or {}, sp.get("test_accuracy_delta")
    parts = {f">= {TUNED_GOAL}x": x is not None and x >= TUNED_GOAL,
             f"lower end > {TUNED_GOAL_LOW}x": bool(ci) and ci[0] > TUNED_GOAL_LOW,
             "every seed": bool(reached.get("pairs")) and reached.get("run") == reached.get("pairs"),
             f"test accuracy within {TEST_MARGIN * 100:.1f} points": bool(delta) and delta.get("mean") is not None
             and delta["mean"] >= -TEST_MARGIN}
    missed = [k for k, ok in parts.items() if not ok]
    return (f"goal vs tuned ({', '.join(parts)}): " + ("met" if not missed else f"not met: {', '.join(missed)}"))


def paired(comp: Optional[dict]) -> dict:
    """A stored comparison's result (engine.report.comparison.evaluate) with its time-to-accuracy
    'speedup' and 'ci95' and its 'headline' (engine.report.headline.comparison_headline) on top,
    as `goal_line`, `tuned_goal_line` and made_of_lines read it; {} without one."""
    from engine.report.headline import comparison_headline

    r = (comp or {}).get("result")
    if not r:
        return {}
    tta = r.get("time_to_accuracy") or {}
    return {**r, "speedup": tta.get("speedup"), "ci95": tta.get("ci95"), "verdict": r.get("verdict"),
            "headline": comparison_headline(r)["text"]}


def render(state: dict, command: str, loads: list[str], wall_s: Optional[float] = None,
           with_store: bool = True, comps: Optional[dict] = None) -> str:
    """Markdown for one invocation (see the module's docstring). loads: lines such
    as '07:39:50 1.24 1.11 2.87' (time, then the 1/5/15-min load averages). comps: the
    autopilot's stored comparisons (engine.autopilot.confirm.stored; None: read from the store
    at $SPEEDLAB_HOME), which every figure of the confirmation and the ablation comes from."""
    from engine.autopilot import confirm
    from engine.autopilot.explain import explanation

    if comps is None:
        from engine.store import Store

        with Store() as store:
            comps = confirm.stored(store, state.get("confirm"))
    now = dt.datetime.now(dt.timezone.utc)
    target = state.get("target_accuracy")
    out = [f"## {state.get('dataset')}, {state.get('model')}, target {target}: invocation of "
           f"{now:%Y-%m-%d %H:%M} UTC ({state.get('id')})", "", "```", command, "```", ""]
    if wall_s is not None:
        out.append(f"- wall time of the whole invocation: {wall_s:.0f} s ({wall_s / 60:.1f} min); search "
                   f"{state.get('search_wall_sec') or 0:.0f} s of its {state.get('budget_sec') or 0:.0f}-s budget")
    if loads:
        out.append(f"- load average (1, 5, 15 min) at start {loads[0]}; middle {loads[len(loads) // 2]}; "
                   f"end {loads[-1]} (2 cores, shared)")
    ml = state.get("max_lr") or {}
    if ml:
        out.append(f"- one-cycle max LR choices {', '.join(f'{x:.3g}' for x in ml['choices'])} from {ml['source']}")
    trials = state.get("trials") or []
    out += ["", f"### Search: {len(trials)} trials", "", "| trial | run | configuration | ended |", "| --- | --- | --- | --- |"]
    out += [f"| {t['trial']} | #{t['run_id']} | {t['label']} | {t['reason']} |" for t in trials]
    counts: dict = {}
    for n in state.get("notes") or []:  # once each, with how often (a run before the fix repeated one 3,919 times)
        n = "proposals skipped: " + n.split(" skipped: ", 1)[1] if n.startswith("proposal ") and " skipped: " in n else n
        counts[n] = counts.get(n, 0) + 1
    for n, k in counts.items():
        out.append(f"\nnote{f' (x{k})' if k > 1 else ''}: {n}")
    if state.get("phase") == "stopped":
        out.append("\n**stopped before the end**: what follows is what had been measured by then")
    ro = state.get("runoff") or {}
    if ro.get("runs"):
        out += ["", f"### Runoff (the finalists re-run on seeds {ro.get('seeds')}: the one that reached on the most "
                "seeds, then the lowest mean, wins)", ""]
        for r in ro["runs"]:
            secs = r.get("rerun_secs") or []
            hit = [x for x in secs if x is not None]
            mean = f", mean {sum(hit) / len(hit):.2f} s" if hit and len(hit) == len(secs) else ""
            out.append(f"- trial {r['trial']} ({_s(r['time_to_target_sec'])} in the search): "
                       f"{', '.join(_s(x) for x in secs)}; reached {len(hit)} of {len(secs)}{mean}")
    w = state.get("winner")
    if not w:
        out += ["", "no winner: no trial reached the target", ""]
        return "\n".join(out) + "\n"
    out += ["", "### Winner", "", f"trial {w['trial']} (run #{w['run_id']}): **{w['label']}**", "",
            "changes from the baseline: `" + json.dumps(w.get("changes") or {}) + "`"]
    conf = state.get("confirm") or {}
    sp = paired(comps.get("confirmation"))
    times = {n: [r["time_to_target_sec"] for r in conf.get("runs") or [] if r["name"] == n and r.get("time_to_target_sec")]
             for n in ("baseline", "winner")}
    medians = {n: statistics.median(t) if t else None for n, t in times.items()}
    ratios = [x for x in sp.get("pair_ratios") or [] if x]
    if conf.get("runs"):
        out += ["", "### Confirmation: interleaved pairs (AB, BA, ...) on fresh seeds", "",
                "| pair | order | seed | baseline | winner | ratio |", "| --- | --- | --- | --- | --- | --- |"]
        by_round: dict = {}
        for r in conf["runs"]:
            by_round.setdefault(r["round"], []).append(r)
        for rnd, rs in sorted(by_round.items()):
            t = {r["name"]: r.get("time_to_target_sec") for r in rs}
            if not {"baseline", "winner"} <= set(t):  # a pair cut short by Stop is no pair
                out.append(f"| {rnd} | – | {rs[0]['seed']} | stopped before the pair was complete | | |")
                continue
            ratio = t["baseline"] / t["winner"] if t.get("baseline") and t.get("winner") else None
            order = "".join("B" if r["name"] == "baseline" else "W" for r in rs if r["name"] in ("baseline", "winner"))
            out.append(f"| {rnd} | {order} | {rs[0]['seed']} | {_s(t.get('baseline'))} | {_s(t.get('winner'))} | {_x(ratio)} |")
        cid = (comps.get("confirmation") or {}).get("id")
        out += ["", f"- medians: baseline {_s(medians['baseline'])}, winner {_s(medians['winner'])}",
                f"- **confirmed speedup: {sp.get('headline')}** (comparison #{cid}: geometric mean of the pair "
                f"ratios, 95% t interval {_ci(sp.get('ci95'))}, verdict {sp.get('verdict')}); median of the pair "
                f"ratios {_x(statistics.median(ratios) if ratios else None)}, min {_x(min(ratios, default=None))}, "
                f"max {_x(max(ratios, default=None))}",
                f"- {goal_line(sp)}"]
        from engine.report import headline as report_headline

        out += [f"- {line}" for line in report_headline.made_of_lines(sp)]
        tuned = paired(((comps.get("extra") or {}).get(confirm.TUNED) or {}).get("winner"))
        if tuned and tuned.get("headline"):
            out += ["", f"- **vs {state.get('tuned_label') or 'the tuned baseline'}: {tuned['headline']}**"]
            out += [f"- {line}" for line in report_headline.made_of_lines(tuned, state.get("tuned_label") or "the tuned baseline")]
            out.append(f"- {tuned_goal_line(tuned)}")
    ab = confirm.ablation_entries(state.get("ablation") or [], comps.get("ablation") or {}, state)
    if ab:
        out += ["", "### Ablation: the winner with one technique switched back, in every confirming round; "
                "factor = its time / the winner's (a comparison each)", "",
                "| technique | comparison | time to target (median) | factor | 95% interval | verdict |",
                "| --- | --- | --- | --- | --- | --- |"]
        words = {"faster": "it helps", "slower": "faster without it", "inconclusive": "inconclusive",
                 "equivalent": "equivalent"}
        for a in ab:
            mine = [r["time_to_target_sec"] for r in conf.get("runs") or []
                    if r["name"] == f"without {a['label']}" and r.get("time_to_target_sec")]
            out.append(f"| {a['label']} | {'#' + str(a['comparison_id']) if a.get('comparison_id') else '–'} | "
                       f"{_s(statistics.median(mine) if mine else None)} | {_x(a.get('factor'))} | {_ci(a.get('ci95'))} | "
                       f"{words.get(a.get('verdict'), a.get('note') or '–')} |")
        line = explanation(ab)
        if line:
            out += ["", f"why: {line}"]
    if with_store and conf.get("runs"):
        out += ["", "### Where the time went (medians over the confirming runs, from the store)", "",
                "| side | time to target | warm-up | training | validation | epochs | steady samples/s | MFU | data wait |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        parts = {}
        for name in ("baseline", "winner"):
            runs = [r for r in conf["runs"] if r["name"] == name]
            # Only the runs that reached the target: a missed one trained its whole cycle.
            b = parts[name] = breakdown([r.get("run_id") for r in runs if r.get("time_to_target_sec")])
            tt = [r["time_to_target_sec"] for r in runs if r.get("time_to_target_sec")]
            if not b:
                continue

            def g(k, f):
                return f.format(b[k]) if k in b else "–"
            out.append(f"| {name} | {_s(statistics.median(tt) if tt else None)} | {g('warmup_sec', '{:.2f} s')} | "
                       f"{g('train_sec', '{:.2f} s')} | {g('validation_sec', '{:.2f} s')} | {g('epochs_run', '{:.0f}')} | "
                       f"{g('samples_per_sec', '{:.0f}')} | {g('mfu', '{:.0%}')} | {g('data_wait_share', '{:.1%}')} |")
        out += floor_lines(sp.get("speedup"), medians["winner"], parts.get("winner") or {})
    return "\n".join(out) + "\n"


def floor_lines(speedup: Optional[float], win_s: Optional[float], w: dict) -> list[str]:
    """What the confirmed speedup (`speedup`, x) would become if parts of the winner's
    time (`win_s`, its median s; its parts' medians `w`, see `breakdown`) went:
    without its warm-up, without its validation too, with its training at the best matmul
    measured here (training s x mfu_of_best_matmul) and at the theoretical peak (training s x
    MFU, PaLM's definition): speedup x win_s / the time left. Bounds, not forecasts: the
    baseline keeps its own time."""
    if not (speedup and win_s and w.get("warmup_sec") is not None and w.get("validation_sec") is not None):
        return []
    warm, val, train, mfu = w["warmup_sec"], w["validation_sec"], w.get("train_sec"), w.get("mfu")
    rows = [("as measured", win_s), ("without the winner's warm-up", win_s - warm),
            ("without its warm-up and validation", win_s - warm - val)]
    best = w.get("mfu_of_best_matmul")
    if train and best:
        rows += [("its training at the best matmul measured here, warm-up and validation kept",
                  warm + val + train * best)]
    if train and mfu:
        rows += [("its training at the theoretical peak (MFU 100%), warm-up and validation kept", warm + val + train * mfu),
                 ("only its training, at the theoretical peak", train * mfu)]
    out = ["", "### The floor: the speedup if parts of the winner's time went", "",
           "| the winner's time | s | the confirmed speedup would be |", "| --- | --- | --- |"]
    out += [f"| {k} | {v:.2f} | {speedup * win_s / v:.2f}x |" for k, v in rows if v > 0]
    return out


def write(text: str, path: Path, title: str) -> Path:
    """Append `text` to `path`, starting the file with `title` when it is new; each section
    starts with the machine's fingerprint line (engine.hardware.fingerprint.record_line: a later
    section of the same day may come from another CPU behind the same hostname)."""
    from engine.hardware.fingerprint import record_line

    path.parent.mkdir(parents=True, exist_ok=True)
    head = "" if path.exists() else f"# {title}\n\n"
    with path.open("a") as fh:
        fh.write(head + record_line() + "\n\n" + text + "\n")
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from-json", required=True, help="the autopilot's --json output (its last line is the state)")
    p.add_argument("--command", required=True, help="the command that produced it, as run")
    p.add_argument("--loadavg", help="file of 'HH:MM:SS 1min 5min 15min ...' lines sampled during the run")
    p.add_argument("--wall", type=float, help="wall seconds of the whole invocation")
    p.add_argument("--out", help="file to append to [benchmarks/results/<date>-autopilot-<dataset>.md]")
    a = p.parse_args()
    sys.path.insert(0, str(HERE.parent))
    lines = Path(a.from_json).read_text().strip().splitlines()
    state = json.loads(lines[-1]) if lines[-1].startswith("{") else json.loads("\n".join(lines))
    loads = [" ".join(x.split()[:4]) for x in Path(a.loadavg).read_text().splitlines()] if a.loadavg else []
    path = Path(a.out) if a.out else default_path(state.get("dataset") or "digits")
    write(render(state, a.command, loads, a.wall), path, f"Autopilot on {state.get('dataset')}")
    print(path)


if __name__ == "__main__":
    main()
