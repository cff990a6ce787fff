"""The Hardware page's noise floor: this machine's A/A comparison, started and followed."""
from __future__ import annotations

import streamlit as st

from views.components.common import one_line_errors

NOISE_REFRESH_S = 5.0  # while the noise floor's A/A comparison runs


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

