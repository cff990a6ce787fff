"""How often does a comparison give a wrong verdict here, and how wide are its intervals?

Runs real comparisons on this machine through engine.jobs.comparison (the same
queue, workers, pairs and statistics as `python -m engine run --baseline`):

1. an A/A comparison, the baseline against itself, --aa-pairs pairs: any
   'faster' or 'slower' verdict is wrong by construction;
2. an A/B comparison, --precision against the float32 baseline, --ab-pairs pairs.

It prints each comparison's pair ratios, central value, 95% interval, half width
and verdict, then the false-verdict rate of real A/A data: every sub-comparison
of SUB pairs drawn from the A/A pairs (all combinations, t interval as `--pairs
SUB` uses) is judged, and the share that reads 'faster' or 'slower' is printed
(nominal: 5%; a higher figure says the real noise is not what the interval
assumes, e.g. drift within a pair). The A/B sub-comparisons give the interval
widths a user gets from SUB pairs. Statistics: engine.report.stats.

    python benchmarks/comparison_noise.py [--aa-pairs 8] [--ab-pairs 6] [--sub 4] [--epochs 10]
        [--model cnn] [--precision mixed_bfloat16]

Each pair is two fresh workers (about 10-20 s each for digits/cnn/10 epochs here,
more under load); the machine's load average is printed before and after.
"""
from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def run_comparison(cfg, kind: str, pairs: int, home: Path) -> dict:
    from engine.jobs import comparison

    cid = comparison.start(cfg, kind=kind, pairs=pairs, store_path=home / "runs.sqlite")
    comp = comparison.wait(cid, store_path=home / "runs.sqlite", poll_s=1.0)
    return comp


def describe(name: str, comp: dict) -> tuple[list, str]:
    from engine.report import headline as report_headline

    r = comp["result"]
    m = r["measure"]
    s = r[m]
    ratios = [x for x in s["pair_ratios"] if x is not None]
    print(f"{name}: comparison #{comp['id']} ({comp['status']}, {comp['ended_by']}), {report_headline.MEASURE_NAMES[m]}")
    print(f"  pair ratios: {', '.join(f'{x:.3f}' for x in ratios)}"
          + (f"  ({s['not_reached']} pairs without a ratio)" if s["not_reached"] else ""))
    print(f"  {report_headline.comparison_headline(r)['text']}"
          + (f"; half width ±{s['half_width'] * 100:.1f}%" if s["half_width"] is not None else ""))
    for other in ("end_to_end", "steady"):
        o = r[other]
        if o["ci95"]:
            print(f"  {report_headline.MEASURE_NAMES[other]}: {report_headline.ratio_text(o['speedup'], digits=3)} [{o['ci95'][0]:.3f}–{o['ci95'][1]:.3f}] "
                  f"{o['verdict']}")
    return ratios, m


def sub_comparisons(ratios: list, k: int) -> tuple[float, list]:
    """(share of k-pair sub-comparisons whose verdict is 'faster' or 'slower', their half widths)."""
    from engine.report import stats

    verdicts, widths = [], []
    for combo in itertools.combinations(ratios, k):
        ci = stats.log_ratio_interval(combo)
        verdicts.append(stats.verdict(ci))
        widths.append(stats.half_width(ci))
    wrong = sum(v in ("faster", "slower") for v in verdicts) / len(verdicts) if verdicts else float("nan")
    return wrong, widths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--aa-pairs", type=int, default=8)
    p.add_argument("--ab-pairs", type=int, default=6)
    p.add_argument("--sub", type=int, default=4, help="pairs per sub-comparison [4]")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--model", default="cnn")
    p.add_argument("--precision", default="mixed_bfloat16")
    args = p.parse_args(argv)

    from engine.config import RunConfig

    cfg = RunConfig(dataset="digits", model=args.model, epochs=args.epochs, precision=args.precision)
    home = Path(tempfile.mkdtemp(prefix="speedlab-noise-"))
    os.environ["SPEEDLAB_HOME"] = str(home)
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}; store {home}")
    t0 = time.monotonic()
    aa = run_comparison(cfg, "aa", args.aa_pairs, home)
    aa_ratios, _ = describe("A/A (baseline vs itself)", aa)
    ab = run_comparison(cfg, "ab", args.ab_pairs, home)
    ab_ratios, _ = describe(f"A/B ({args.precision} vs float32)", ab)
    print()
    if len(aa_ratios) >= args.sub:
        wrong, widths = sub_comparisons(aa_ratios, args.sub)
        n = len(list(itertools.combinations(aa_ratios, args.sub)))
        print(f"A/A false-verdict rate over {n} sub-comparisons of {args.sub} real pairs: {wrong * 100:.1f}% "
              f"(nominal 5%); half width median ±{statistics.median(widths) * 100:.1f}%, "
              f"range ±{min(widths) * 100:.1f}–{max(widths) * 100:.1f}%")
    if len(ab_ratios) >= args.sub:
        _, widths = sub_comparisons(ab_ratios, args.sub)
        print(f"A/B half width over sub-comparisons of {args.sub} pairs: median ±{statistics.median(widths) * 100:.1f}%, "
              f"range ±{min(widths) * 100:.1f}–{max(widths) * 100:.1f}%")
    print(f"took {time.monotonic() - t0:.0f} s; load average after: {open('/proc/loadavg').read().split()[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
