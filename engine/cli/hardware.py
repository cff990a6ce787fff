"""`python -m engine hardware`: host, devices, backends and option verdicts (no TF here).

Wire it up with ``cli_hardware.add_parser(subparsers)``; the parser's default
``func`` is `main`.
"""
from __future__ import annotations

import sys
import time

from engine.cli.printing import print_json, refuse_if_busy
from engine.hardware.peaks import flops_text
from engine.hardware.verdicts import ProbeError, probe


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("hardware", help="what this machine has and which speed options pay off",
                              description="Probe CPU, GPUs and TPU in a worker process (cached in "
                                          "$SPEEDLAB_HOME/hardware.json) and judge each option.")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument("--refresh", action="store_true", help="re-probe instead of using the cache")
    p.add_argument("--timeout", type=float, default=60.0, help="probe time limit, s (default 60)")
    p.add_argument("--noise", action="store_true",
                   help="also measure this machine's noise floor: a short A/A comparison (the float32 "
                        "baseline of digits/cnn, 10 epochs, against itself, 3 interleaved pairs, each "
                        "run in a fresh worker; a minute or two), stored for later headlines")
    p.set_defaults(func=main)


def format_table(result: dict) -> str:
    """The readable report: host, software, devices, verdicts, diagnosis."""
    f = result["facts"]
    h, sw, b = f.get("host", {}), f.get("software", {}), f.get("build", {})
    cores = f"{h.get('physical_cores')} physical / {h.get('logical_cores')} logical cores"
    if h.get("usable_cpus") not in (None, h.get("logical_cores")):
        cores += f", {h['usable_cpus']} usable by this process (affinity {h.get('affinity_cpus')}, " \
                 f"quota {h.get('cpu_quota') or 'none'})"
    cuda = (f"CUDA {b.get('cuda_version')}, cuDNN {b.get('cudnn_version')} build"
            if b.get("is_cuda_build") else "CPU-only build")
    gpus = [f"{g['name']} (CC {'.'.join(map(str, g['compute_capability'] or ['?']))}"
            + (f", {g['memory_mib'] / 1024:.0f} GiB)" if g.get("memory_mib") else ")")
            for g in f.get("gpus", [])]
    driver = (f.get("driver") or {}).get("gpus") or []
    tpu = f.get("tpu") or {}
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(f.get("probed_at", 0)))
    fp = result.get("fingerprint") or {}
    rows = [
        ("Machine", f"{fp.get('name')} (fingerprint {fp.get('id')})" if fp else "-"),
        ("Host", f"{f.get('hostname')} ({h.get('os')} {h.get('arch')})"),
        ("CPU", f"{h.get('cpu_model')}: {cores}, {h.get('ram_gib')} GiB RAM"),
        ("CPU flags", " ".join(h.get("cpu_flags") or []) or "no low-precision flags"),
        ("Software", f"Python {sw.get('python')}, TensorFlow {sw.get('tensorflow') or 'not installed'}"
                     + (f" ({cuda})" if sw.get("tensorflow") else "")
                     + (f", JAX {sw['jax']}" if sw.get("jax") else "") + f", Keras {sw.get('keras')}"),
        ("GPUs (TF)", "; ".join(gpus) or "none"),
        ("GPUs (driver)", ", ".join(driver) or "none"),
        ("TPU", f"{tpu['cores']} cores" if tpu.get("cores") else
         (f"hinted, not reachable: {tpu.get('error')}" if tpu.get("hint") else "none")),
        ("Peak (theoretical)", theoretical_line(result.get("peaks") or peaks_summary(f))),
        ("Best matmul", peak_line(f.get("peak"))),
        ("Probe", f"{f.get('probe_seconds')} s at {when}"
                  + (" (cached; --refresh to re-probe)" if result.get("cached") else "")),
    ]
    w = max(len(k) for k, _ in rows)
    lines = [f"{k:<{w}}  {v}" for k, v in rows]
    lines += ["", f"{'Option':<15} {'Verdict':<12} Why"]
    lines += [f"{v['option']:<15} {v['verdict']:<12} {v['reason']}" for v in result["verdicts"]]
    from engine.hardware.verdicts import backend_verdicts

    lines += ["", f"{'Backend':<15} {'Verdict':<12} Version, devices, why"]
    for b in result.get("backends") or backend_verdicts(f):
        where = f"{b['version']} on {', '.join(b['devices'])}" if b["version"] and b["devices"] else \
            (b["version"] or "-")
        lines.append(f"{b['backend']:<15} {b['verdict']:<12} {where}: {b['reason']}")
    for err in f.get("errors") or []:
        lines.append(f"probe error: {err}")
    if result.get("diagnosis"):
        lines += ["", "GPU problem: " + result["diagnosis"]]
    return "\n".join(lines)


def peaks_summary(facts: dict) -> dict:
    """engine.hardware.peaks.summary: per dtype, the theoretical peak with its parts and the best matmul."""
    from engine.hardware.peaks import summary

    return summary(facts)


def theoretical_line(peaks: dict) -> str:
    """'float32 460 GFLOP/s (2 cores x 3.59 GHz x 64 FLOPs/cycle), bfloat16 ...'."""
    parts = [f"{d} {flops_text(r['theoretical']['flops_per_sec'])} ({r['theoretical'].get('text')})"
             for d, r in peaks.items() if (r.get("theoretical") or {}).get("flops_per_sec")]
    return "; ".join(parts) or "unknown (re-probe: --refresh)"


def peak_line(peak) -> str:
    """'float32 45.4 GFLOP/s, bfloat16 89.2 GFLOP/s (tensorflow 1024x1024 matmul on CPU, 3.9 s)'
    from the probe's matmul peak (engine.hardware.matmul_peak), or why there is none."""
    if not peak:
        return "not measured (re-probe: --refresh)"
    parts = []
    for dtype, row in (peak.get("dtypes") or {}).items():
        if row.get("flops_per_sec"):
            parts.append(f"{dtype} {flops_text(row['flops_per_sec'])}")
        elif row.get("error"):
            parts.append(f"{dtype} failed ({row['error']})")
    for dtype, row in (peak.get("dtypes") or {}).items():
        if row.get("flops_per_sec"):
            parts[[p.split(" ")[0] for p in parts].index(dtype)] += f" at n = {row.get('n')}"
    sizes = "/".join(str(n) for n in peak.get("sizes") or [peak.get("n")])
    load = (f"; measured UNDER LOAD (others used {100 * peak.get('load_share', 0):.0f}% of the CPUs): not kept"
            if peak.get("under_load") else "")
    return (", ".join(parts) or "no dtype measured") + \
        f" ({peak.get('backend')} matmuls n = {sizes} until the rate stops rising, on {peak.get('device')}, " \
        f"{peak.get('seconds')} s{load})"


def main(args) -> int:
    """Print the report (or JSON with --json). Returns 0, or 1 when the probe fails."""
    try:
        result = probe(timeout_s=getattr(args, "timeout", 60.0),
                       refresh=getattr(args, "refresh", False))
    except ProbeError as e:
        print(f"hardware check failed: {e}", file=sys.stderr)
        return 1
    code = 0
    if getattr(args, "noise", False):
        code = measure_noise(quiet=getattr(args, "json", False))
    result["noise"] = stored_noise()
    result["peaks"] = peaks_summary(result["facts"])
    from engine.hardware.peak_store import fingerprint_with_clock

    result["fingerprint"] = fingerprint_with_clock()  # what every stored figure is matched on
    if getattr(args, "json", False):
        print_json(result, indent=2, sort_keys=True)
    else:
        print(format_table(result))
        print("", noise_line(result["noise"]), sep="\n")
    return code


def stored_noise():
    """engine.jobs.noise.latest of this host's store, or None."""
    from engine.jobs import noise
    from engine.store import Store

    store = Store()
    try:
        return noise.latest(store)
    finally:
        store.close()


def noise_line(info) -> str:
    from engine.jobs import noise

    text = noise.floor_text(info)
    return text[0].upper() + text[1:]


def measure_noise(quiet: bool = False) -> int:
    """Run the hardware check's A/A comparison (engine.jobs.noise) to its end,
    one progress line per pair on stderr unless `quiet`; Ctrl-C stops it (complete
    pairs are kept). Returns 0 with an interval, 1 without, 2 when the machine is busy."""
    from engine.jobs import noise
    from engine.jobs import comparison

    if refuse_if_busy():
        return 2
    cid = noise.start()  # a run queued since the check: ActiveRunError, engine.cli.main's one line
    if not quiet:
        print(f"measuring the noise floor: A/A comparison #{cid}, {noise.NOISE_PAIRS} pairs of "
              f"digits/{noise.NOISE_MODEL} ({noise.NOISE_EPOCHS} epochs), each run in a fresh worker ...", file=sys.stderr)
    shown = [0]

    def on_poll(comp):
        done = (comp.get("result") or {}).get("pairs") or 0
        if not quiet and done > shown[0]:
            shown[0] = done
            print(f"  pair {done}/{noise.NOISE_PAIRS} done", file=sys.stderr)

    from engine.cli.follow import until_done

    comp = until_done(lambda: comparison.wait(cid, poll_s=1.0, on_poll=on_poll), lambda: comparison.wait(cid),
                      "stopping the noise measurement (complete pairs are kept; more presses change nothing) ...",
                      quiet=True, name="the noise measurement")  # its progress is whole lines: no line to end
    return 0 if noise.floor_of(comp) is not None else 1
