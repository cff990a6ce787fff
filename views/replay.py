"""Replay: play a stored baseline and run through the Train page's live charts,
at 1x, 2x, 5x or 10x, with pause and restart. Nothing trains: the charts show
the rows the store held at each moment of the recording (engine.report.replay),
which is how a talk shows runs recorded on a machine that is not on stage
(bring them with a run bundle: Runs page or `python -m engine import`).

The replay clock lives in $SPEEDLAB_HOME/replay.json, not in the browser
session: a reload or a second tab re-attaches to the replay that is playing.
"""
from __future__ import annotations

import time

import streamlit as st

from engine.base import plain
from engine.store import comparisons as cstore
from engine.charts import style as chart_style
from engine.report import replay
from engine.store import Store, started
from views.components import comparison as cmp_view
from views.components import presenter
from views.components.common import one_line_errors
from views.components.live_charts import render_comparison

REFRESH_S = 0.5  # the charts re-read the replay this often while it plays
FINAL = ("completed", "cancelled")
PICKER_RUNS = 500  # newest replayable runs offered in the pickers (older ones: Runs page, then Replay)


def _label(run: dict) -> str:
    """A picker's line: the run, and 'imported (run #N there)' for a run from a bundle. Not the
    bundle's hostname (engine.bundle.provenance): ours all say `vm`; the line above the charts
    names the machine (replay.recorded_label)."""
    origin = run.get("origin")
    return chart_style.run_label(run) + (f" · imported (run #{origin.get('run_id')} there)" if origin else "")


def _picked() -> None:
    """Selector callback: a new pair starts paused at 0."""
    b, r = st.session_state.get("replay_base"), st.session_state.get("replay_run")
    if b is not None and r is not None:
        old = replay.load_state()
        replay.save_state(replay.ReplayState(b, r, speed=old.speed if old else 1))


def _speed() -> None:
    state = replay.load_state()
    if state and st.session_state.get("replay_speed"):
        replay.save_state(state.with_speed(int(st.session_state["replay_speed"]), time.time()))


def replayable(store: Store) -> list[dict]:
    """The newest PICKER_RUNS runs that ended and ever trained, newest first: read in SQL,
    so the page costs the same with 100,000 stored runs (issue 42, item 1)."""
    final = ",".join(f"'{s}'" for s in FINAL)
    return store.query_runs(f"status IN ({final}) AND (status='completed' OR started IS NOT NULL)",
                            limit=PICKER_RUNS)


REPLAY_LINE_PX = 40  # px: the replay's one line above the presenter headline (where, speed, state)
REPLAY_WRAP_PX = 24  # px: each further line it wraps to (a long machine name: the recording's CPU)
REPLAY_LINE_ROOM_PX = 1180  # px: the line's width at 1280 px in presenter mode (no sidebar)


def line_px(text: str) -> int:
    """Height (px) the replay's line takes above the presenter headline: one line, or more
    where `text` (16 px) wraps at 1280 px, so that the charts below leave it that room."""
    import math

    lines = max(1, math.ceil(chart_style.text_px(text, 16) / REPLAY_LINE_ROOM_PX))
    return REPLAY_LINE_PX + REPLAY_WRAP_PX * (lines - 1)


def controls(runs: dict[int, dict], state: replay.ReplayState, duration: float, presenter_on: bool = False) -> None:
    """Pickers, speed, Play/Pause and Restart (and the presenter-mode toggle);
    every change goes to replay.json. `duration`: recorded seconds of the pair
    (Play at the end starts again). In presenter mode the pickers are left out
    (the pair stays as picked) and everything is one row."""
    # Follow the saved state (another tab, a reload) rather than this session's widgets.
    st.session_state["replay_base"] = state.baseline_id
    st.session_state["replay_run"] = state.run_id
    st.session_state["replay_speed"] = state.speed
    ids = list(runs)
    if presenter_on:
        c3, c4, c5, mode = st.columns([3.2, 1.2, 1.3, 2.0], vertical_alignment="center")
        presenter.toggle(mode)
    else:
        c1, c2, c3, c4, c5 = st.columns([3, 3, 2.2, 1.1, 1.1], vertical_alignment="bottom")
        c1.selectbox("Baseline", ids, key="replay_base", format_func=lambda i: _label(runs[i]), on_change=_picked)
        c2.selectbox("Run", ids, key="replay_run", format_func=lambda i: _label(runs[i]), on_change=_picked)
    c3.segmented_control("Speed", list(replay.SPEEDS), key="replay_speed", format_func=lambda s: f"{s}×",
                         on_change=_speed, required=True, label_visibility="collapsed" if presenter_on else "visible")
    # Callbacks: the state is saved before the page reruns, so the rerun draws the new
    # button at once (a click handled in the script drew Play and Pause both for a moment).
    if state.paused:
        c4.button("Play", icon=":material/play_arrow:", key="replay_play", type="primary", width="stretch",
                  on_click=_save, args=(lambda s, now: s.restart(now) if s.offset >= duration else s.play(now),))
    else:
        c4.button("Pause", icon=":material/pause:", key="replay_pause", type="primary", width="stretch",
                  on_click=_save, args=(lambda s, now: s.pause(now),))
    c5.button("Restart", icon=":material/replay:", key="replay_restart", width="stretch",
              on_click=_save, args=(lambda s, now: s.restart(now),))


def _save(change) -> None:
    """Apply `change(state, now)` to the saved replay state (a button's callback)."""
    state = replay.load_state()
    if state is not None:
        replay.save_state(change(state, time.time()))


def body(was_playing: bool, presenter_on: bool = False) -> None:
    """Body of the replay fragment: the comparison as it stood at the replay's
    current position; at the end the clock stops (and the page stops refreshing)."""
    with one_line_errors("Replay"):
        state = replay.load_state()
        if state is None:
            return
        playing = not state.paused
        if playing != was_playing:  # paused, played or restarted in another tab
            st.rerun()
        with Store() as store:
            now = time.time()
            view = replay.ReplayStore(store, [state.baseline_id, state.run_id], state.position(now), now)
            comp = cmp_view.lookup(store, store.get_run(state.run_id))  # the pairs this one belongs to
        t, end = min(view.t, view.duration), view.duration
        if playing and view.t >= end:  # the end: stop the clock there
            replay.save_state(replay.ReplayState(state.baseline_id, state.run_id, state.speed, offset=end, paused=True))
            st.rerun()
        base, run = view.get_run(state.baseline_id), view.get_run(state.run_id)
        where = "playing" if playing else ("finished" if t >= end else "paused")
        line = (f":material/replay: {plain.md(replay.recorded_label([base, run]))} · {t:,.1f} s of {end:,.1f} s recorded · "
                f"{state.speed}× · {where}")
        if presenter_on:  # one line, the label first: the charts keep their room
            st.markdown(line)
            presenter.comparison(view, base, run, source=view.source(), comp=comp, above_px=line_px(line))
            return
        st.progress(min(t / end, 1.0) if end else 1.0, text=line)
        render_comparison(view, [base, run] if base["id"] != run["id"] else [run], base, run, stop=False,
                          source=view.source(), comp=comp)


def recorded_offer(container=None) -> None:
    """One click plays the shipped mnist5k recording (engine.jobs.recorded_demo), at any time:
    imported first unless it is already in the store."""
    from engine.jobs import recorded_demo

    if (container or st).button("Show the recorded mnist5k comparison", icon=":material/smart_display:",
                                key="replay_recorded",
                                help="The bundled MNIST 28x28: its baseline and the hand-made preset in interleaved "
                                     "pairs, recorded to 0.965 on a 2-core CPU (docs/datasets.md)"):
        with one_line_errors("Recording"):
            with Store() as store:
                b, r = recorded_demo.open_recorded(store)
            replay.save_state(replay.ReplayState(b, r))
            st.rerun()


def main() -> None:
    presenter_on = presenter.is_on()
    if presenter_on:
        presenter.style()
    else:
        head, mode = st.columns([5, 1.3], vertical_alignment="bottom")
        head.markdown("### SpeedLab · Replay")
        presenter.toggle(mode)
    with Store() as store:  # a run cancelled before it started has nothing to replay
        stored = replayable(store)
        comps = cstore.list_all(store)
        saved = replay.load_state()
        for rid in (saved.baseline_id, saved.run_id) if saved else ():  # a pick older than the window stays
            r = store.get_run(rid) if rid not in {x["id"] for x in stored} else None
            if r and r["status"] in FINAL and started(r):
                stored.append(r)
    if not stored:
        st.info("Nothing to replay yet: finish a run with its baseline on **Train**, or import a run "
                "bundle recorded elsewhere on **Runs** (`python -m engine import FILE.zip`).",
                icon=":material/replay:")
        recorded_offer()
        return
    runs = {r["id"]: r for r in stored}
    state = saved
    if state is None or state.baseline_id not in runs or state.run_id not in runs:
        # The newest ended comparison's last complete pair: it has an interval to show.
        pair = replay.comparison_pair(comps, stored) or replay.default_pair(stored) or (stored[-1]["id"], stored[0]["id"])
        state = replay.ReplayState(*pair)
        replay.save_state(state)
    if not presenter_on:
        note, offer = st.columns([4, 1.6], vertical_alignment="center")
        note.caption("Plays a stored baseline and run through the live charts, both starting together, "
                     "from the rows they stored as they trained: nothing trains here.")
        recorded_offer(offer)
    with Store() as store:
        duration = replay.ReplayStore(store, [state.baseline_id, state.run_id], 0.0).duration
    controls(runs, state, duration, presenter_on)
    st.fragment(body, run_every=None if state.paused else REFRESH_S)(not state.paused, presenter_on)


if __name__ == "__main__":
    main()
