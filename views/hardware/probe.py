"""The Hardware page's probe: this machine's CPU, GPUs and TPU and versions (probed in a child
process, engine.hardware.verdicts), its peak FLOP/s, and which speed options should pay off."""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from engine.base import plain
from engine.config import DEVICE_TYPES
from engine.hardware import fingerprint, verdicts as hardware
from engine.hardware.peaks import summary_rows as peaks_summary_rows

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
    st.markdown(plain.md(h.get("cpu_model") or "unknown CPU"))  # the OS's (a VM's) words: untrusted
    usable = h.get("usable_cpus")
    usable = f" ({usable} usable)" if usable not in (None, h.get("logical_cores")) else ""
    st.caption(f"{h.get('physical_cores') or '?'} physical / {h.get('logical_cores') or '?'} logical "
               f"cores{usable} · {h.get('ram_gib') or '?'} GiB RAM · {plain.md(h.get('os') or '?')} "
               f"{plain.md(h.get('arch') or '')}")
    native = [f for f in flags if f in hardware.CPU_BF16_FLAGS + hardware.CPU_FP16_FLAGS]
    for f in flags:
        color = "green" if f in native else "gray"
        st.markdown(f":{color}-badge[{plain.md(f)}] :small[{FLAG_MEANING.get(f, '')}]")
    if not native:
        st.caption("No native bfloat16 or float16 instructions (avx512_bf16, amx_bf16, avx512_fp16, "
                   "amx_fp16): low precision is emulated on this CPU.")


def gpu_card(gpu: dict, index: int) -> None:
    cc = gpu.get("compute_capability")
    cc_text = ".".join(map(str, cc[:2])) if cc else "unknown"
    st.markdown(f"**:material/developer_board: GPU {index}**")
    st.markdown(plain.md(gpu.get("name") or "unknown GPU"))
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
        st.caption(f"The driver shows {plain.md(', '.join(sorted(set(driver))))}: see the box below.")
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
        st.error(plain.md(diagnosis), icon=":material/warning:")  # names the driver's GPUs: untrusted
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

