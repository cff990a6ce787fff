"""Hardware: what this machine has (host CPU, GPUs, TPU, versions), which speed
options should pay off on it, and a quick benchmark that measures them.

UI only: the probe and its verdicts come from engine.hardware.verdicts (the probe runs
in a child process and is cached; this page never imports TensorFlow), the
benchmark runs detached via engine.bench.quick.start_background and is followed by a
fragment that re-reads its progress file, figures come from engine.charts.hardware.
"""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from engine.base import plain
from engine.bench import quick as bench
from engine.charts import hardware as hardware_charts
from engine.hardware import fingerprint, verdicts as hardware
from engine.hardware.peaks import summary_rows as peaks_summary_rows
from engine.hardware.machine import quick_facts
from engine.jobs.background import ACTIVE_STATES
from engine.config import DEVICE_TYPES
from views.components import handoff
from views.components.common import one_line_errors

LIVE_REFRESH_S = 1.0   # while the benchmark runs
WATCH_REFRESH_S = 3.0  # idle: notice a benchmark started from another tab
NOISE_REFRESH_S = 5.0  # while the noise floor's A/A comparison runs
PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}

VERDICT_COLORS = {"faster": "green", "slower": "red", "neutral": "gray", "unavailable": "violet",
                  "measure": "orange"}
VERDICT_ICONS = {"faster": ":material/trending_up:", "slower": ":material/trending_down:",
                 "neutral": ":material/trending_flat:", "unavailable": ":material/block:",
                 "measure": ":material/straighten:"}
OPTION_NAMES = {"mixed_float16": "Mixed precision float16", "mixed_bfloat16": "Mixed precision bfloat16",
                "xla": "XLA (jit_compile)", "multi_device": "Several devices (data parallel)",
                "tpu": "TPU", "gradient_accumulation": "Gradient accumulation (vs a larger batch)",
                "muon": "Muon optimizer", "tta": "Test-time augmentation", "progressive_resizing": "Progressive resizing"}
FLAG_MEANING = {"avx512_bf16": "bfloat16 dot products (AVX-512)",
                "amx_bf16": "bfloat16 matrix tiles (AMX)",
                "avx512_fp16": "float16 arithmetic (AVX-512)", "amx_fp16": "float16 matrix tiles (AMX)",
                "avx512f": "AVX-512 foundation (wide float32 vectors)"}
BENCH_COLUMNS = {
    "best": st.column_config.TextColumn("", width="small"),
    "backend": st.column_config.TextColumn("backend"),
    "precision": st.column_config.TextColumn("precision"),
    "steps_per_execution": st.column_config.NumberColumn("steps / execution", format="%d"),
    "jit_compile": st.column_config.CheckboxColumn("XLA"),
    "devices": st.column_config.NumberColumn("devices", format="%d"),
    "samples_per_sec": st.column_config.NumberColumn("steady samples/s", format="%,.0f",
                                                     help="median over repeats of each cell's steady "
                                                          "median samples/s"),
    "speedup": st.column_config.NumberColumn("speedup (×)", format="%.2f",
                                             help="median over repeats of cell / baseline of the same "
                                                  "repeat"),
    "spread": st.column_config.TextColumn("spread (min–max ×)"),
    "warmup_sec": st.column_config.NumberColumn("warm-up (s)", format="%.2f"),
}




# --- the probe -------------------------------------------------------------------

def get_facts(refresh: bool) -> dict | None:
    """Cached facts, or a fresh probe (a child process, a few seconds) when
    there are none yet or `refresh`; None (after one line) when it fails."""
    facts = None if refresh else hardware.cached_facts()
    if facts is not None:
        return facts
    try:
        with st.spinner("Checking this machine's CPU, GPUs and TPU in a separate process "
                        "(a few seconds) ..."):
            return hardware.probe(refresh=refresh)["facts"]
    except hardware.ProbeError as e:
        first = (str(e).splitlines() or [""])[0]
        st.error(f"The hardware check failed: {first}. Run `python -m engine hardware --refresh` in a "
                 "terminal for the details.", icon=":material/error:")
        return None


def badge(verdict: str) -> str:
    color = VERDICT_COLORS.get(verdict, "gray")
    return f":{color}-badge[{VERDICT_ICONS.get(verdict, '')} {verdict}]"


def cpu_card(facts: dict) -> None:
    h = facts.get("host") or {}
    flags = list(h.get("cpu_flags") or [])
    st.markdown("**:material/memory: Host CPU**")
    st.markdown(h.get("cpu_model") or "unknown CPU")
    usable = h.get("usable_cpus")
    usable = f" ({usable} usable)" if usable not in (None, h.get("logical_cores")) else ""
    st.caption(f"{h.get('physical_cores') or '?'} physical / {h.get('logical_cores') or '?'} logical "
               f"cores{usable} · {h.get('ram_gib') or '?'} GiB RAM · {h.get('os') or '?'} {h.get('arch') or ''}")
    native = [f for f in flags if f in hardware.CPU_BF16_FLAGS + hardware.CPU_FP16_FLAGS]
    for f in flags:
        color = "green" if f in native else "gray"
        st.markdown(f":{color}-badge[{f}] :small[{FLAG_MEANING.get(f, '')}]")
    if not native:
        st.caption("No native bfloat16 or float16 instructions (avx512_bf16, amx_bf16, avx512_fp16, "
                   "amx_fp16): low precision is emulated on this CPU.")


def gpu_card(gpu: dict, index: int) -> None:
    cc = gpu.get("compute_capability")
    cc_text = ".".join(map(str, cc[:2])) if cc else "unknown"
    st.markdown(f"**:material/developer_board: GPU {index}**")
    st.markdown(gpu.get("name") or "unknown GPU")
    mem = gpu.get("memory_mib")
    st.caption(f"compute capability {cc_text} · "
               + (f"{mem / 1024:.0f} GiB memory" if mem else "memory unknown"))
    if cc:
        major_minor = tuple(int(x) for x in cc[:2])
        for dtype, need in (("float16", (7, 0)), ("bfloat16", (8, 0))):
            ok = major_minor >= need
            st.markdown(f":{'green' if ok else 'gray'}-badge[{dtype} Tensor Cores: "
                        f"{'yes' if ok else 'no'}] :small[needs {need[0]}.{need[1]}+]")


def no_gpu_card(facts: dict) -> None:
    driver = (facts.get("driver") or {}).get("gpus") or []
    st.markdown("**:material/developer_board_off: GPU**")
    st.markdown("none visible to TensorFlow")
    if driver:
        st.caption(f"The driver shows {', '.join(sorted(set(driver)))}: see the box below.")
    else:
        st.caption("No NVIDIA driver or device found: training runs on the CPU.")


def tpu_card(facts: dict) -> None:
    tpu = facts.get("tpu") or {}
    st.markdown("**:material/grid_view: TPU**")
    if tpu.get("cores"):
        st.markdown(f"{tpu['cores']} TPU cores")
        st.caption("use device type tpu with mixed_bfloat16")
    elif tpu.get("hint"):
        st.markdown("hinted, but not reachable")
        st.caption(plain.md(tpu.get("error") or "TensorFlow reported no cores"))
    else:
        st.markdown("none")
        st.caption("No TPU on this machine.")


def devices_section(facts: dict) -> None:
    cards = [lambda: cpu_card(facts)]
    gpus = facts.get("gpus") or []
    cards += [(lambda g=g, i=i: gpu_card(g, i)) for i, g in enumerate(gpus)] or [lambda: no_gpu_card(facts)]
    cards.append(lambda: tpu_card(facts))
    per_row = 4
    for start in range(0, len(cards), per_row):
        cols = st.columns(per_row, gap="small")
        for col, card in zip(cols, cards[start:start + per_row]):
            with col.container(border=True, height="stretch"):
                card()


def versions_line(facts: dict) -> str:
    sw, b = facts.get("software") or {}, facts.get("build") or {}
    build = (f"CUDA {b.get('cuda_version')}, cuDNN {b.get('cudnn_version')} build"
             if b.get("is_cuda_build") else "CPU-only build")
    driver = (facts.get("driver") or {}).get("version")
    parts = [f"Python {sw.get('python', '?')}", f"TensorFlow {sw.get('tensorflow') or 'not installed'} ({build})",
             *([f"JAX {sw['jax']}"] if sw.get("jax") else []), f"Keras {sw.get('keras', '?')}"]
    if driver:
        parts.append(f"NVIDIA driver {driver}")
    return " · ".join(parts)


def verdict_table(facts: dict, device: str) -> str:
    """The verdicts as a Markdown table with coloured badges."""
    rows = ["| Option | On this machine | Why |", "| --- | --- | --- |"]
    for v in [*hardware.verdicts(facts, device), *hardware.technique_verdicts(facts, device)]:
        reason = v["reason"].replace("|", "/")
        rows.append(f"| {OPTION_NAMES.get(v['option'], v['option'])} | {badge(v['verdict'])} | {reason} |")
    return "\n".join(rows)


def backend_table(facts: dict, device: str) -> str:
    """The installed Keras backends with their versions, devices and verdicts (Markdown)."""
    rows = ["| Backend | Version | Devices | On this machine | Why |", "| --- | --- | --- | --- | --- |"]
    for b in hardware.backend_verdicts(facts, device):
        name = {"tensorflow": "TensorFlow", "jax": "JAX"}.get(b["backend"], b["backend"])
        rows.append(f"| {name} | {b['version'] or 'not installed'} | {', '.join(b['devices']) or '–'} | "
                    f"{badge(b['verdict'])} | {b['reason'].replace('|', '/')} |")
    return "\n".join(rows)


def probe_section() -> None:
    head, btn = st.columns([6, 1], vertical_alignment="center")
    head.markdown("### SpeedLab · Hardware")
    refresh = btn.button("Re-check", icon=":material/refresh:", key="hw_recheck",
                         help="Probe again (a few seconds), e.g. after installing GPU support", width="stretch")
    facts = get_facts(refresh)
    if facts is None:
        return
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(facts.get("probed_at") or 0))
    st.markdown(f":material/fingerprint: Machine **{plain.md(fingerprint.fingerprint()['name'])}** · fingerprint `{fingerprint.here_id()}`")
    st.caption(f"Checked on **{plain.md(facts.get('hostname', '?'))}** at {when} in {facts.get('probe_seconds', '?')} s, "
               "in a separate process (TensorFlow is never loaded by the dashboard itself). "
               f"{versions_line(facts)}")
    devices_section(facts)
    diagnosis = hardware.gpu_diagnosis(facts)
    if diagnosis:
        st.error(diagnosis, icon=":material/warning:")
    for err in facts.get("errors") or []:
        st.warning(f"Probe: {plain.md(err)}", icon=":material/info:")
    peaks_section(facts)

    st.markdown("#### Which speed options should pay off")
    left, right = st.columns([1, 3], vertical_alignment="center")
    device = left.segmented_control("Judge for device type", DEVICE_TYPES, default="auto",
                                    key="hw_device", required=True)
    right.caption("auto = a GPU when TensorFlow lists one, else the CPU. These are expectations from "
                  "the hardware (TensorFlow's mixed precision guide, Intel's oneDNN bf16 guide); the "
                  "quick benchmark below measures them.")
    st.markdown(verdict_table(facts, device or "auto"))
    st.markdown("#### Keras backends")
    st.markdown(backend_table(facts, device or "auto"))


def peaks_section(facts: dict) -> None:
    """MFU's denominator per dtype (theoretical CPU peak with its parts, or the GPU's data
    sheet) beside the best matmul measured here (engine.hardware.peaks.summary_rows)."""
    rows = peaks_summary_rows(facts)
    if not rows:
        return
    st.markdown("#### Peak FLOP/s: what MFU divides by, and the best matmul beside it")
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption("MFU as PaLM defines it: model FLOP/s ÷ the theoretical peak (CPU: cores × the clock measured "
               "by a dependent-add chain × FLOPs per cycle of its vector or matrix units; GPU: the data sheet's "
               "dense figure). The best matmul grows its size until the rate stops rising; one measured while "
               "other work used the CPUs is marked and not kept. Details: docs/mfu.md.")


# --- the quick benchmark -------------------------------------------------------------

def bench_progress(was_running: bool) -> None:
    """Body of the benchmark fragment: re-reads the progress file every tick."""
    with one_line_errors("Benchmark progress"):
        p = bench.read_progress()
        running = bool(p) and p["state"] in ACTIVE_STATES
        if running != was_running:  # started elsewhere, or finished: redraw the page
            st.rerun()
        if running:
            done, total = p.get("done") or 0, p.get("total") or 0
            what = (f"measuring {p['current']}" if p.get("current")
                    else "finishing (summarising and saving the result)" if total and done >= total
                    else "starting the worker (TensorFlow, data, model)")
            left = bench.progress_left(p, time.time())
            text = (f":material/speed: {bench.step_label(done, total, p.get('repeats'))}: {what} · "
                    f"{p.get('elapsed', 0):.0f} s elapsed"
                    + (f" · about {left:.0f} s left" if left is not None else ""))
            st.progress(done / total if total else 0.0, text=text)
            last = p.get("last")
            if last and last.get("samples_per_sec"):
                st.caption(f"Last measured: {last['cell']}: {last['samples_per_sec']:,.0f} samples/s")
            return
        latest = bench.load_latest() or {}
        newer = p and (p.get("finished") or 0) > (latest.get("created") or 0)
        if p and newer and p["state"] == "failed":
            st.error(f"The last benchmark failed: {plain.md(p.get('error') or 'no message')}", icon=":material/error:")
        elif p and newer and p["state"] == "cancelled":
            st.caption(":material/stop_circle: The last benchmark was cancelled; the result below "
                       "(if any) is from an earlier one.")


def bench_table(cells: pd.DataFrame, best_i: int) -> pd.DataFrame:
    df = cells.copy()
    df["best"] = ["★ best" if i == best_i else "" for i in df.index]
    df["precision"] = df["precision"].astype(str) + [" (simulated)" if s else ""
                                                      for s in df.get("simulated", [False] * len(df))]
    df["spread"] = [f"{a:.2f}–{b:.2f}" if pd.notna(a) and pd.notna(b) else "–"
                    for a, b in zip(df["speedup_min"], df["speedup_max"])]
    return df


def bench_results(res: dict) -> None:
    cells = pd.DataFrame(res.get("cells") or [])
    if cells.empty or cells["speedup"].isna().all():
        st.warning("The last benchmark has no measured cells: run it again.", icon=":material/info:")
        return
    best_i = int(cells["speedup"].idxmax())
    best = res["cells"][best_i]
    w = res.get("workload") or {}
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(res.get("created") or 0))
    st.caption(f"Measured {when}: {bench.workload_text(w)} images, global batch "
               f"{w.get('batch_size')}, {w.get('steps')} steps × {w.get('epochs')} epochs per cell, "
               f"{res.get('repeats')} interleaved repeats, {res.get('wall_sec', 0):.0f} s in all. Each cell "
               "is compared with the float32 baseline of the same repeat; error bars show the spread.")
    for caution in [plain.md(c) for c in [bench.machine_caution(res)] if c] + [bench.baseline_caution(res)]:
        if caution:  # another machine's result (its CPU's name is outside text), or a busy machine's
            st.warning(caution, icon=":material/warning:")
    chart, side = st.columns([2.4, 1], gap="medium")
    chart.plotly_chart(hardware_charts.bench_figure(cells), key="bench_chart", config=PLOTLY_CONFIG)
    with side:
        # An arrow and a colour only for a verdict: 1.00x "+0%" with a green up-arrow read as a gain.
        moved = best.get("verdict") not in ("inconclusive", "equivalent") and round((best["speedup"] - 1) * 100) != 0
        st.metric("Best configuration", f"{best['speedup']:.2f}×", border=True,
                  delta=f"{(best['speedup'] - 1) * 100:+.0f}% vs baseline" + ("" if moved else " · within noise"),
                  delta_color="normal" if moved else "off", delta_arrow="auto" if moved else "off",
                  help="median over repeats of its samples/s / the baseline's")
        st.markdown(f"**{bench.cell_name(best)}**")
        if best["speedup"] <= 1.0:
            st.caption("Nothing beat the float32 baseline here: keep the defaults.")
        order = list(range(len(res["cells"])))
        pick = st.selectbox("Configuration to use", order, index=best_i, key="bench_pick", format_func=lambda i: bench.cell_name(
            res["cells"][i]) + (f": {res['cells'][i]['speedup']:.2f}×" if res["cells"][i]["speedup"] is not None else ""))
        if st.button("Use this configuration", type="primary", icon=":material/arrow_forward:",
                     key="bench_use", on_click=handoff.hand_over, width="stretch",
                     args=({**bench.to_config_changes(res["cells"][pick]), "workers": 1}, False),
                     help="Set precision, steps per execution, XLA and devices on the Train page "
                          "(your data, model and batch stay)"):
            handoff.go_to_train()
        st.caption("Measured on a small CNN: a larger model usually gains more from mixed precision "
                   "and XLA, a tiny one more from steps per execution. Launch on the Train page to "
                   "measure it on your own model.")
    st.dataframe(bench_table(cells, best_i), hide_index=True, column_config=BENCH_COLUMNS,
                 column_order=list(BENCH_COLUMNS), key="bench_table")


def bench_section() -> None:
    st.markdown("#### Quick benchmark")
    est, basis = bench.estimate_sec(cells=(cells := len(bench.plan_matrix(quick_facts()))))  # what it will run here
    st.caption("Measures every option combination that makes sense here (precision × steps per "
               "execution × XLA, and several devices when there are) with short runs on synthetic "
               f"data, each against the float32 single-device baseline: about {est:.0f} s ({basis}). "
               f"**On mnist5k** measures the same on the bundled real MNIST 28x28 (about "
               f"{bench.estimate_sec(dataset='mnist5k', cells=cells)[0]:.0f} s). "
               "It runs in the background: you can leave this page and come back.")
    p = bench.read_progress()
    running = bool(p) and p["state"] in ACTIVE_STATES
    c1, c4, c2, c3 = st.columns([1.3, 1.1, 1, 2.4], vertical_alignment="center")
    for col, dataset, label, key, kind in ((c1, "synthetic", "Run quick benchmark", "bench_start", "primary"),
                                           (c4, "mnist5k", "On mnist5k", "bench_start_mnist5k", "secondary")):
        if col.button(label, type=kind, icon=":material/speed:", key=key, disabled=running, width="stretch"):
            try:
                bench.start_background(full=False, repeats=2, dataset=dataset)
                st.rerun()
            except bench.BenchError as e:
                c3.warning(str(e), icon=":material/hourglass_top:")
    if running and c2.button("Cancel", icon=":material/stop:", key="bench_cancel", width="stretch"):
        bench.cancel_background()
        st.rerun()
    st.fragment(bench_progress, run_every=LIVE_REFRESH_S if running else WATCH_REFRESH_S)(running)
    res = bench.load_latest()
    if res:
        bench_results(res)
    elif not running:
        st.info("No benchmark yet: press **Run quick benchmark** to measure which options speed up "
                "training on this machine. Its result appears here as a chart and a table, with a "
                "button that puts the best configuration on the Train page.", icon=":material/speed:")


# --- the noise floor ------------------------------------------------------------------

def noise_progress(was_running: bool) -> None:
    """Body of the noise-floor fragment: the stored floor, or the A/A comparison's pairs so far."""
    from engine.jobs import noise
    from engine.store import Store

    with one_line_errors("Noise floor"):
        store = Store()
        try:
            comp = noise.running(store)
            if (comp is not None) != was_running:
                st.rerun()
            if comp is not None:
                done = (comp.get("result") or {}).get("pairs") or 0
                n = len(comp.get("plan") or [])
                st.progress(done / n if n else 0.0,
                            text=f":material/balance: Measuring the noise floor: A/A comparison #{comp['id']}, "
                                 f"pair {min(done + 1, n)} of {n} (the baseline against itself)")
                return
            info = noise.latest(store)
        finally:
            store.close()
    text = noise.floor_text(info)
    if info:
        st.markdown(f"**Noise floor ±{info['floor'] * 100:.1f}%**")
        st.caption(text[0].upper() + text[1:] + ". Train-page headlines under it say so.")
    else:
        st.caption(text[0].upper() + text[1:] + ".")


def noise_section() -> None:
    from engine.base.errors import ActiveRunError
    from engine.jobs import noise
    from engine.jobs import background
    from engine.store import Store

    st.markdown("#### This machine's noise floor")
    st.caption(f"An A/A comparison: the float32 baseline of digits/{noise.NOISE_MODEL} ({noise.NOISE_EPOCHS} epochs) "
               f"against itself, {noise.NOISE_PAIRS} interleaved pairs, each run in a fresh worker (a minute or two). "
               "The second side of each pair trains on another seed, so its time to accuracy carries the spread "
               "between seeds as a real comparison's does. Any verdict but \"equivalent\" or \"inconclusive\" "
               "would be wrong; its interval's half width is how small a "
               "speedup this machine can tell apart from noise.")
    store = Store()
    try:
        running = noise.running(store) is not None
    finally:
        store.close()
    c1, c2 = st.columns([1.3, 4.5], vertical_alignment="center")
    if c1.button("Measure noise floor", icon=":material/balance:", key="noise_start", disabled=running,
                 width="stretch"):
        why = background.busy()
        if why:
            c2.warning(f"Not started: {why}", icon=":material/hourglass_top:")
        else:
            try:
                noise.start()
                st.rerun()
            except ActiveRunError as e:
                c2.warning(f"Not started: {e}", icon=":material/hourglass_top:")
    # Progress every 5 s while it measures: the page must not slow the runs it measures.
    st.fragment(noise_progress, run_every=NOISE_REFRESH_S if running else None)(running)


def main() -> None:
    with one_line_errors("Hardware check"):
        probe_section()
    st.divider()
    with one_line_errors("Noise floor"):
        noise_section()
    st.divider()
    with one_line_errors("Quick benchmark"):
        bench_section()


if __name__ == "__main__":
    main()
