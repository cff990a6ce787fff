"""MFU on a GPU: the hardware check (data-sheet peak, best matmul) and the ResNet-style model
trained with the JAX backend in float32 and mixed_bfloat16, each a real SpeedLab run (its own
worker, stored, its summary with the time split and MFU), then exported as one bundle that
Replay plays. No TensorFlow needed (JAX with CUDA, Keras, numpy, pandas, psutil).

    python benchmarks/gpu_mfu.py --out DIR                    # GPU: resnet b512, 32x32x3 synthetic
    python benchmarks/gpu_mfu.py --out DIR --allow-cpu --small   # dry run of the same path on a CPU

Writes DIR/hardware.json (python -m engine hardware --json), DIR/run_<precision>.json (the
runs' --json summaries), DIR/<label>.zip (the bundle) and DIR/summary.json + a table on stdout:
steady samples/s, MFU against the peak it names, the fraction of the best matmul, the time split.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd: list[str], timeout: float, env: dict) -> tuple[int, str, str, float]:
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=str(ROOT))
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), \
            f"timed out after {timeout} s", time.time() - t0


def _last_json(text: str):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="gpu_mfu")
    p.add_argument("--allow-cpu", action="store_true")
    p.add_argument("--small", action="store_true", help="cnn on 8x8x1, batch 128: a dry run's workload")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--samples", type=int, default=30720, help="synthetic samples (60 steps of 512 per epoch)")
    p.add_argument("--run-timeout", type=float, default=150.0)
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    env.setdefault("SPEEDLAB_HOME", str(out / "home"))
    py = sys.executable
    t_all = time.time()

    code, so, se, sec = _run([py, "-m", "engine", "hardware", "--refresh", "--json", "--timeout", "90"], 100, env)
    try:
        hw = json.loads(so[so.index("{"):])
    except ValueError:
        hw = None
    (out / "hardware.json").write_text(so if hw is None else json.dumps(hw, indent=1, sort_keys=True))
    print(f"hardware check: exit {code}, {sec:.1f} s", flush=True)
    if hw is None:
        print(se[-2000:])
    peaks = (hw or {}).get("peaks") or {}
    for dtype, r in peaks.items():
        th, best = r.get("theoretical") or {}, r.get("best_matmul") or {}
        print(f"  {dtype}: peak {th.get('flops_per_sec')} ({th.get('kind')}: {th.get('text')}); best matmul "
              f"{best.get('flops_per_sec')} at n = {best.get('n')} under_load={best.get('under_load')}", flush=True)
    gpus = ((hw or {}).get("facts") or {}).get("gpus") or []
    gpu_name = gpus[0]["name"] if gpus else None
    if not gpu_name and not a.allow_cpu:
        print("no GPU: nothing to measure (--allow-cpu for a dry run)", file=sys.stderr)
        return 1

    model, shape, batch = ("cnn", "8,8,1", 128) if a.small else ("resnet", "32,32,3", 512)
    samples = 2048 if a.small else a.samples
    runs = {}
    for precision in ("float32", "mixed_bfloat16"):
        cmd = [py, "-m", "engine", "run", "--dataset", "synthetic", "--synthetic-shape", shape,
               "--synthetic-samples", str(samples), "--model", model, "--backend", "jax",
               "--precision", precision, "--batch-size", str(batch), "--epochs", str(2 if a.small else a.epochs),
               "--device-type", "gpu" if gpu_name else "cpu", "--no-stop-at-target", "--json", "--quiet"]
        code, so, se, sec = _run(cmd, a.run_timeout, env)
        s = _last_json(so)
        print(f"run {precision}: exit {code}, {sec:.1f} s", flush=True)
        if s is None:
            print((so + se)[-3000:], flush=True)
            continue
        (out / f"run_{precision}.json").write_text(json.dumps(s, indent=1, sort_keys=True, default=str))
        runs[precision] = s

    ids = [str(s.get("run_id")) for s in runs.values() if s.get("run_id")]
    label = ("h200" if gpu_name and "H200" in gpu_name else (gpu_name or "cpu").replace(" ", "_").lower())
    bundle = out / f"{label}_{model}_jax_fp32_bf16.zip"
    if ids:
        code, so, se, sec = _run([py, "-m", "engine", "export", "-o", str(bundle), *ids], 120, env)
        print(f"export {ids}: exit {code} -> {bundle.name if code == 0 else (so + se)[-1000:]}", flush=True)

    rows = {}
    for precision, s in runs.items():
        keys = ("run_id", "samples_per_sec", "samples_per_sec_iqr", "steady_executions", "wall_sec", "setup_sec",
                "warmup_sec", "train_sec", "validation_sec", "other_sec", "flops_per_sample", "model_flops_per_sec",
                "peak_flops_per_sec", "peak_kind", "peak_text", "peak_source", "peak_device", "mfu",
                "best_matmul_flops_per_sec", "best_matmul_n", "mfu_of_best_matmul", "compute_dtype",
                "device_kind", "bound_by")
        rows[precision] = {k: s.get(k) for k in keys}
        r = rows[precision]
        mfu = f"{100 * r['mfu']:.1f}%" if r.get("mfu") is not None else "-"
        best = f"{100 * r['mfu_of_best_matmul']:.1f}%" if r.get("mfu_of_best_matmul") is not None else "-"
        print(f"{precision:>15}: {r['samples_per_sec'] or 0:,.0f} samples/s steady; MFU {mfu} of "
              f"{(r['peak_flops_per_sec'] or 0) / 1e12:.1f} TFLOP/s {r['peak_kind']} ({r['peak_text']}); {best} of the "
              f"best matmul; wall {r['wall_sec']} s = setup {r['setup_sec']} + warm-up {r['warmup_sec']} + "
              f"train {r['train_sec']} + validation {r['validation_sec']} + other {r['other_sec']}", flush=True)
    summary = {"gpu": gpu_name, "model": model, "shape": shape, "batch_size": batch, "samples": samples,
               "backend": "jax", "peaks": peaks, "runs": rows, "bundle": bundle.name if ids else None,
               "seconds": round(time.time() - t_all, 1),
               "software": ((hw or {}).get("facts") or {}).get("software"),
               # the machine (docs/machines.md), as `python -m engine hardware --json` names it
               "fingerprint": (hw or {}).get("fingerprint")}
    fp = summary["fingerprint"] or {}
    print(f"Machine: {fp.get('name')} · fingerprint {fp.get('id')}" if fp else "Machine: machine not recorded",
          flush=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True, default=str))
    return 0 if len(runs) == 2 else 1


if __name__ == "__main__":
    sys.exit(main())
