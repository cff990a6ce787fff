"""Does the autopilot find a faster route to the target than the baseline and the hand-tuned preset?

One invocation on a bundled data set (--dataset, digits by default; cnn, baseline batch 128, Adam 1e-3, float32): the
autopilot searches for BUDGET seconds and re-runs its fastest trials once to choose
its winner (the runoff), then the winner, the baseline and the
hand-tuned preset of benchmarks/time_to_accuracy.py re-run alternately
(baseline, winner, preset; REPEATS rounds on fresh seeds). Prints every trial,
the median time to the target of each, and the winner's speedup over the
baseline and over the preset as their stored comparisons say it (engine.autopilot.confirm:
geometric mean, 95% interval, verdict).
Every run stops at the target (stop_at_target), so only the time to it is measured.

    python benchmarks/autopilot.py [--dataset digits] [--budget 180] [--repeats 3] [--target 0.95]
        [--explain] [--results FILE | --no-results]

The load average is printed before and after (and sampled every 30 s for the
results file): on a shared machine the figures are noisy. Each invocation is
appended to benchmarks/results/<UTC date>-autopilot-<dataset>.md
(benchmarks/autopilot_results.py, which also renders a `python -m engine
autopilot --json` output).
"""
from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import autopilot_results  # noqa: E402
from engine.config import RunConfig  # noqa: E402
from engine.config.presets import PRESETS  # noqa: E402  the hand-tuned presets

BASE = dict(dataset="digits", model="cnn", batch_size=128, epochs=20, learning_rate=1e-3, seed=0)


def _s(v) -> str:
    return "not reached" if v is None else f"{v:.2f} s"


def _ratio(comp: dict | None) -> str:
    """A stored comparison's headline (engine.report.headline.comparison_headline), with its id."""
    from engine.report.headline import comparison_headline

    if not comp or not comp.get("result"):
        return "no comparison stored"
    return f"{comparison_headline(comp['result'])['text']} (comparison #{comp['id']})"


def warmup_floor(conf: dict, target: float) -> None:
    """Per configuration, the median warm-up (tracing the training and evaluation
    steps) of its re-runs and its share of the time to the target: no setting can
    win back more than what is left after its own warm-up."""
    from engine.store import Store

    st = Store()
    try:
        for name in ("baseline", "winner", "preset"):
            rows = []
            for r in conf["runs"]:
                run = st.get_run(r["run_id"]) if r["name"] == name and r.get("run_id") else None
                summ = (run or {}).get("summary") or {}
                if r.get("time_to_target_sec") and summ.get("warmup_sec") is not None:
                    rows.append((summ["warmup_sec"], r["time_to_target_sec"]))
            if rows:
                w = statistics.median(x for x, _ in rows)
                share = statistics.median(x / t for x, t in rows)
                print(f"{name:>8}: warm-up median {w:.2f} s, {share:.0%} of its time to {target}")
    finally:
        st.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", type=float, default=180.0, help="search budget, s [180]")
    p.add_argument("--repeats", type=int, default=3, help="alternating re-run rounds [3]")
    p.add_argument("--dataset", default="digits", choices=sorted(PRESETS), help="bundled data set [digits]")
    p.add_argument("--target", type=float, help="[the data set's default: 0.95 on digits, 0.965 on mnist5k]")
    p.add_argument("--explain", action="store_true", help="also run the leave-one-out ablation")
    p.add_argument("--results", help="Markdown file to append this invocation to "
                                     "[benchmarks/results/<UTC date>-autopilot-<dataset>.md]")
    p.add_argument("--no-results", action="store_true", help="write no results file")
    a = p.parse_args()
    from engine.data.meta import target_for

    a.target = target_for(a.target, a.dataset)
    os.environ["SPEEDLAB_HOME"] = tempfile.mkdtemp(prefix="speedlab-autopilot-")
    # The queue and its warm spare (a TensorFlow process) leave 30 s after the last run, not
    # 10 min: a benchmark run next would otherwise share the CPU with the spare's start.
    os.environ.setdefault("SPEEDLAB_QUEUE_IDLE_S", "30")
    from engine.hardware.machine import cpu_model
    from engine.autopilot import search as autopilot

    base = RunConfig(**{**BASE, "dataset": a.dataset})
    tuned = PRESETS[a.dataset]
    preset = RunConfig(**{**tuned, "dataset": a.dataset, "seed": 0})
    loads: list[str] = []
    done = threading.Event()

    def sample_load():  # for the results file: start, middle, end
        while True:
            loads.append(f"{time.strftime('%H:%M:%S', time.gmtime())} "
                         + " ".join(f"{x:.2f}" for x in os.getloadavg()))
            if done.wait(30):
                break
    threading.Thread(target=sample_load, daemon=True).start()
    load0 = os.getloadavg()
    t0 = time.monotonic()
    printed = set()

    def on_update(state):
        for t in state["trials"]:
            if t["trial"] not in printed:
                printed.add(t["trial"])
                print(f"trial {t['trial']:>2} (run #{t['run_id']}): {t['label']}: {t['reason']}", flush=True)
        for r in (state.get("runoff") or {}).get("runs") or []:
            if ("r", r["trial"]) not in printed:
                printed.add(("r", r["trial"]))
                print(f"runoff: trial {r['trial']} (run #{r['run_id']}) re-run: {_s(r['rerun_sec'])} "
                      f"({_s(r['time_to_target_sec'])} in the search)", flush=True)
        for r in (state.get("confirm") or {}).get("runs") or []:
            key = ("c", r["round"], r["name"])
            if key not in printed:
                printed.add(key)
                print(f"re-run round {r['round']} {r['name']:>8} (run #{r['run_id']}, seed {r['seed']}): "
                      f"{_s(r['time_to_target_sec'])}", flush=True)

    ap = autopilot.Autopilot(base, a.target, a.budget, repeats=a.repeats, explain=a.explain,
                             extra={"preset": preset}, on_update=on_update)
    state = ap.run()
    done.set()
    load1 = os.getloadavg()
    loads.append(f"{time.strftime('%H:%M:%S', time.gmtime())} " + " ".join(f"{x:.2f}" for x in load1))
    if not a.no_results:
        path = autopilot_results.write(
            autopilot_results.render(state, "python " + shlex.join(sys.argv), loads, time.monotonic() - t0),
            autopilot_results.Path(a.results) if a.results else autopilot_results.default_path(a.dataset),
            f"Autopilot on {a.dataset}")
        print(f"results appended to {path}")
    print(f"machine: {cpu_model()}, {os.cpu_count()} logical cores; load average (1, 5, 15 min) "
          f"{', '.join(f'{x:.1f}' for x in load0)} before, {', '.join(f'{x:.1f}' for x in load1)} after; "
          f"{time.monotonic() - t0:.0f} s in all")
    print(f"search: {len(state['trials'])} trials in {state['search_wall_sec']:.0f} s (budget {a.budget:.0f} s); "
          f"one-cycle max LR {', '.join(f'{x:.3g}' for x in state['max_lr']['choices'])} from {state['max_lr']['source']}")
    w = state.get("winner")
    if not w:
        print(f"no trial reached {a.target}")
        return
    print(f"winner: {w['label']} ({_s(w['search_time_to_target_sec'])} in the search"
          + (f", {_s(w['runoff_sec'])} in the runoff)" if w.get("runoff_sec") else ")"))
    print(f"preset: {tuned}")
    conf = state.get("confirm") or {}
    if not conf:
        return
    for name in ("baseline", "winner", "preset"):
        times = [r["time_to_target_sec"] for r in conf["runs"] if r["name"] == name]
        xs = [x for x in times if x is not None]
        med = statistics.median(xs) if xs else None
        print(f"{name:>8}: time to {a.target}: median {_s(med)} over {times}")
    warmup_floor(conf, a.target)
    from engine.autopilot import confirm
    from engine.autopilot.explain import explanation
    from engine.store import Store

    with Store() as store:  # every figure of the confirmation from its stored comparisons
        comps = confirm.stored(store, conf)
    print(f"winner vs baseline: {_ratio(comps['confirmation'])}")
    print(f"winner vs preset:   {_ratio(comps['extra']['preset']['winner'])}")
    print(f"preset vs baseline: {_ratio(comps['extra']['preset']['vs_baseline'])}")
    line = explanation(confirm.ablation_entries(state.get("ablation") or [], comps["ablation"], state))
    if line:
        print(f"why: {line}")


if __name__ == "__main__":
    main()
