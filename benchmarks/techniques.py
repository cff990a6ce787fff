"""What do today's record-setting techniques buy on this machine? Each against the baseline.

For each technique (Muon, schedule-free AdamW, LAMB, weight EMA, CutMix, test-time
augmentation, gradient accumulation on mnist5k; progressive resizing and gradient
accumulation on synthetic data, throughput only), runs a comparison of interleaved pairs
(AB BA AB ..., seed i for pair i; engine.jobs.comparison) of the technique against the
plain baseline: float32, 1 device, Adam at its learning rate, constant schedule, none of
the techniques. For the optimizers that is Adam, not the same optimizer: `baseline_config`
keeps a run's optimizer, so this script hands the comparison its baseline itself.

Printed and written to benchmarks/results/DATE-techniques.md (and .json): per technique
the time-to-accuracy ratio (baseline / technique, > 1 = faster) with its 95% interval and
verdict (engine.report.stats), how many runs reached the target, and the split of that
ratio into throughput (steady samples/s), sample efficiency (samples to the target) and
the time outside steady training (`factors` of the comparison's result). A synthetic
comparison has no target: its headline is steady samples/s.

--baseline tuned takes the baseline's learning rate from `python -m engine tune-baseline`
(engine.store.tuned_baselines) when this store holds one for the configuration; otherwise it
falls back to the default baseline and says so in the results.

    python benchmarks/techniques.py [--pairs 3] [--epochs 4] [--target 0.95] [--only NAME ...]
        [--home DIR] [--baseline default|tuned] [--note TEXT]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from engine.report.headline import ratio_text  # noqa: E402

# name -> (data set, RunConfig changes, what it is)
TECHNIQUES = {
    "muon": ("mnist5k", {"optimizer": "muon"}, "Muon, conv filters reshaped to 2-D (airbench94_muon)"),
    "muon_keras": ("mnist5k", {"optimizer": "muon", "muon_conv": "adamw"},
                   "keras.optimizers.Muon as shipped (conv kernels get AdamW)"),
    "schedule_free_adamw": ("mnist5k", {"optimizer": "schedule_free_adamw"}, "schedule-free AdamW"),
    "lamb": ("mnist5k", {"optimizer": "lamb"}, "LAMB"),
    "ema": ("mnist5k", {"ema_momentum": 0.9}, "weight EMA 0.9, validated on the average"),
    "cutmix": ("mnist5k", {"cutmix_factor": 1.0}, "CutMix factor 1.0"),
    "tta": ("mnist5k", {"tta": "translate"}, "test-time translate averaging (3 views)"),
    "accumulation": ("mnist5k", {"gradient_accumulation_steps": 2}, "gradient accumulation 2 (effective batch 256)"),
    "progressive_synthetic": ("synthetic", {"model": "resnet", "progressive_epochs": 1, "progressive_scale": 0.5},
                              "progressive resizing: 1 of 2 epochs at 16 px (resnet, synthetic 32x32x3)"),
    "accumulation_synthetic": ("synthetic", {"gradient_accumulation_steps": 2},
                               "gradient accumulation 2 (throughput only)"),
}
DEFAULT_ONLY = [k for k in TECHNIQUES if k != "muon_keras"]


def base_config(dataset: str, changes: dict, epochs: int, target: float):
    from engine.config import RunConfig

    if dataset == "synthetic":  # throughput only: small, so a pair takes seconds
        model = changes.get("model", "cnn")
        return RunConfig(dataset="synthetic", model=model, synthetic_shape=(32, 32, 3), synthetic_samples=1280,
                         epochs=2, batch_size=128)
    return RunConfig(dataset="mnist5k", model="cnn", epochs=epochs, target_accuracy=target, stop_at_target=True)


def compare(name: str, pairs: int, epochs: int, target: float, baseline_kind: str, home: Path) -> dict:
    """One comparison of interleaved pairs: technique `name` against the plain baseline."""
    from engine.config import baseline_config
    from engine.base.errors import ConfigError
    from engine.jobs import comparison

    dataset, changes, _ = TECHNIQUES[name]
    base = base_config(dataset, changes, epochs, target)
    cfg = base.replace(**changes)
    plain = baseline_config(base)  # Adam, none of the techniques
    store = home / "runs.sqlite"
    kind_used, note = baseline_kind, None
    if baseline_kind == "tuned":
        try:
            tuned, _ = comparison.baseline_of(plain, "tuned", store)
        except ConfigError as e:
            kind_used, note = "default", f"no tuned baseline stored ({e}); the default baseline was used"
    original = comparison.baseline_of

    def baseline_of(c, kind="default", store_path=None):  # the plain baseline, whatever the technique
        return original(plain, kind, store_path)

    comparison.baseline_of = baseline_of
    try:
        t0 = time.monotonic()
        cid = comparison.start(cfg, "ab", pairs=pairs, store_path=store, baseline_kind=kind_used)
    finally:
        comparison.baseline_of = original
    comp = comparison.wait(cid, store)
    res = comp.get("result") or {}
    return {"technique": name, "what": TECHNIQUES[name][2], "dataset": dataset, "config_changes": changes,
            "comparison_id": cid, "status": comp["status"], "baseline_kind": kind_used, "note": note,
            "measure": res.get("measure"), "pairs": res.get("pairs"), "speedup": _headline(res, "speedup"),
            "ci95": _headline(res, "ci95"), "verdict": res.get("verdict"), "factors": res.get("factors"),
            "reached": res.get("reached"), "steady_speedup": res.get("steady_speedup"),
            "steady_ci95": res.get("steady_ci95"), "test_accuracy_delta": res.get("test_accuracy_delta"),
            "wall_sec": time.monotonic() - t0}


def _headline(res: dict, key: str):
    m = res.get("measure")
    return (res.get(m) or {}).get(key) if m else None


def fmt_ratio(x, ci) -> str:
    return ratio_text(x) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if x is not None and ci else "")


def factor_cell(f: dict, key: str) -> str:
    if not f or not f.get(key):
        return "-"
    return fmt_ratio(f[key]["speedup"], f[key]["ci95"])


def table(rows: list[dict]) -> list[str]:
    out = ["| technique | data | measure | ratio [95% CI] | verdict | reached (base/run of pairs) | throughput "
           "| sample efficiency | outside training | steady samples/s |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        reached = r.get("reached")
        rc = f"{reached['baseline']}/{reached['run']} of {reached['pairs']}" if reached else "-"
        out.append(f"| {r['what']} | {r['dataset']} | {r['measure'] or '-'} | {fmt_ratio(r['speedup'], r['ci95'])} "
                   f"| {r['verdict'] or '-'} | {rc} | {factor_cell(r['factors'], 'throughput')} | "
                   f"{factor_cell(r['factors'], 'sample_efficiency')} | {factor_cell(r['factors'], 'outside_training')} "
                   f"| {fmt_ratio(r['steady_speedup'], r['steady_ci95'])} |")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--epochs", type=int, default=4, help="epoch cap of the mnist5k runs (each stops at the target)")
    p.add_argument("--target", type=float, default=0.95)
    p.add_argument("--only", nargs="*", default=DEFAULT_ONLY, choices=list(TECHNIQUES))
    p.add_argument("--home", default=None, help="SpeedLab home for the runs (default: a fresh temporary one)")
    p.add_argument("--baseline", default="default", choices=["default", "tuned"])
    p.add_argument("--note", default="", help="a line for the results file (e.g. the machine was shared)")
    p.add_argument("--out", default=None, help="results file stem (default benchmarks/results/DATE-techniques)")
    a = p.parse_args()
    import tempfile

    home = Path(a.home or tempfile.mkdtemp(prefix="speedlab-techniques-")).resolve()
    os.environ["SPEEDLAB_HOME"] = str(home)
    load0 = os.getloadavg()
    rows = []
    for name in a.only:
        r = compare(name, a.pairs, a.epochs, a.target, a.baseline, home)
        rows.append(r)
        print(f"{name}: {r['measure']} {fmt_ratio(r['speedup'], r['ci95'])} {r['verdict']}; throughput "
              f"{factor_cell(r['factors'], 'throughput')}, sample efficiency "
              f"{factor_cell(r['factors'], 'sample_efficiency')} ({r['wall_sec']:.0f} s)", flush=True)
    load1 = os.getloadavg()
    stem = Path(a.out) if a.out else ROOT / "benchmarks" / "results" / f"{datetime.date.today()}-techniques"
    from engine.hardware.fingerprint import record_line

    head = [f"# Techniques against the baseline ({datetime.date.today()})", "", record_line(), "",
            f"Command: `python benchmarks/techniques.py --pairs {a.pairs} --epochs {a.epochs} --target {a.target} "
            f"--baseline {a.baseline} --only {' '.join(a.only)}`", "",
            f"Load average before {load0[0]:.1f}, after {load1[0]:.1f} on {os.cpu_count()} cores. {a.note}", "",
            "Ratio: baseline time / technique time to the target (> 1 = faster), 95% interval over the pairs; "
            "synthetic rows (no target): end-to-end samples/s, technique / baseline, with the steady ratio in "
            "the last column. Throughput x sample efficiency x outside training = the time-to-accuracy ratio "
            "(engine.report.comparison.factors_of_rows).", ""]
    notes = sorted({r["note"] for r in rows if r["note"]})
    lines = head + table(rows) + ([""] + [f"- {n}" for n in notes] if notes else [])
    mode = "a" if stem.with_suffix(".md").exists() else "w"
    with open(stem.with_suffix(".md"), mode, encoding="utf-8") as fh:
        fh.write(("\n\n" if mode == "a" else "") + "\n".join(lines) + "\n")
    prev = json.loads(stem.with_suffix(".json").read_text()) if stem.with_suffix(".json").exists() else []
    stem.with_suffix(".json").write_text(json.dumps(prev + rows, indent=1, default=str))
    print("\n".join(table(rows)))


if __name__ == "__main__":
    main()
