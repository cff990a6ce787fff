"""Replay: the clock, which rows are visible at replay time t, the stand-in
store, the label, and the Replay page (paused mid-way, finished, reload)."""
from __future__ import annotations

import base64
import json
import os
import re
import time

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from engine.config import RunConfig
from engine.report import replay
from engine.report.pair import compare
from engine.store import Store
from tests.helpers.apptest import app_test


# --- the clock --------------------------------------------------------------------

def test_clock_plays_pauses_changes_speed_and_restarts():
    s = replay.ReplayState(1, 2)
    assert s.paused and s.position(1000.0) == 0.0
    s = s.play(100.0)
    assert s.position(103.0) == 3.0                      # 1x: 3 s of wall time, 3 s of recording
    s = s.with_speed(10, 103.0)
    assert s.position(104.5) == 3.0 + 15.0               # then 10x
    s = s.pause(105.0)
    assert s.paused and s.position(500.0) == 23.0        # paused: the position stays
    s = s.play(600.0)
    assert s.position(601.0) == 33.0
    s = s.restart(700.0)
    assert not s.paused and s.position(700.0) == 0.0 and s.position(702.0) == 20.0
    with pytest.raises(ValueError, match="speed: 3 is not one of 1x, 2x, 5x, 10x"):
        s.with_speed(3, 0.0)


def test_state_survives_in_speedlab_home(store_home):
    assert replay.load_state() is None
    s = replay.ReplayState(4, 5, speed=5, offset=2.5, anchor=123.0, paused=False)
    replay.save_state(s)
    assert json.loads((store_home / "replay.json").read_text())["speed"] == 5
    assert replay.load_state() == s
    (store_home / "replay.json").write_text("{not json")
    assert replay.load_state() is None
    replay.save_state(None)
    assert not (store_home / "replay.json").exists()


# --- visible rows -------------------------------------------------------------------

def recorded(store: Store, role: str, rate: float, n: int = 10, epochs: int = 2, group: str = "g",
             host: str = "gpu-box-7", devices=("/GPU:0",), created: float | None = None) -> int:
    """A finished run as the worker stores it: n executions of 128 samples, one
    every 128/rate s (the first a 1 s warm-up), `epochs` epochs, one system sample a second."""
    cfg = RunConfig(epochs=epochs, target_accuracy=0.7,
                    **({} if role == "baseline" else {"precision": "mixed_bfloat16"}))
    rid = store.create_run(cfg.to_json(), role=role, group_id=group, status="running")
    rows, t = [], 0.0
    for i in range(n):
        d = 1.0 if i == 0 else 128 / rate
        t += d
        rows.append((i, i * epochs // n, i + 1, 1, t, d, 128 / d, 2.0 - i * 0.1, 1e-3, int(i == 0), None))
    ep = [(e, rows[(e + 1) * n // epochs - 1][4] + 0.05, (e + 1) * n // epochs, 1.0, 0.5, 0.9 - 0.1 * e,
           0.6 + 0.15 * e, 1e-3) for e in range(epochs)]
    sysrows = [(float(s), 90.0, 500.0, 10.0, None, 0) for s in range(int(t) + 1)]
    store.add_metrics(rid, rows, ep, sysrows)
    store.update_run(rid, environment={"hostname": host, "devices": list(devices), "device_kind": "GPU",
                                       "replicas_simulated": False},
                     plan={"total_steps": n, "steps_per_epoch": n // epochs, "epochs": epochs},
                     **({"created": created} if created else {}))
    store.finish_run(rid, "completed", summary={"samples_per_sec": rate, "wall_sec": ep[-1][1],
                                                "replicas": len(devices), "time_to_target_sec": ep[-1][1],
                                                "final_val_accuracy": ep[-1][6]})
    return rid


@pytest.fixture
def pair(store):
    """A baseline (1,000 samples/s) and a run (4,000 samples/s) of 10 executions."""
    b = recorded(store, "baseline", 1000.0)
    r = recorded(store, "run", 4000.0, devices=("/GPU:0", "/GPU:1"))
    return store, b, r


def test_visible_rows_are_those_recorded_by_t():
    rows = [{"t": 0.5}, {"t": 1.0}, {"t": 1.5}, {"t": None}]
    assert replay.visible(rows, 1.0) == [{"t": 0.5}, {"t": 1.0}]
    assert replay.visible(rows, 0.1) == []


def test_run_end_is_on_the_rows_clock():
    rows, epochs = [{"t": 3.7}], [{"t": 3.75}]
    assert replay.run_end({"summary": {}}, rows, epochs) == 3.75
    # wall_sec 14.2 s counts 10.5 s of setup before training: fit ends at 3.75 s, not 14.2 s.
    timeline = {"setup_sec": 10.47, "fit_sec": 3.75, "wall_sec": 14.22}
    assert replay.run_end({"summary": timeline}, rows, epochs) == 3.75
    assert replay.run_end({"summary": {"setup_sec": 10.0, "wall_sec": 14.5}}, rows, epochs) == 4.5
    assert replay.run_end({"summary": {"wall_sec": 4.0}}, rows, epochs) == 4.0   # older runs
    assert replay.run_end({}, [], []) == 0.0


def test_replay_store_shows_the_run_as_it_stood_at_t(pair):
    store, b, r = pair
    # Baseline: warm-up ends at 1.0 s, then one execution every 0.128 s: 2.152 s for 10.
    # Run: 1.0 s, then every 0.032 s: 1.288 s; its 2nd epoch ends at 1.338 s.
    view = replay.ReplayStore(store, [b, r], 1.1)
    assert view.ends == {b: pytest.approx(2.202), r: pytest.approx(1.338)}
    assert view.duration == pytest.approx(2.202)
    assert [x["idx"] for x in view.metrics("executions", b)] == [0]
    assert [x["idx"] for x in view.metrics("executions", r)] == [0, 1, 2, 3]   # 1.032, 1.064, 1.096
    assert view.metrics("epochs", r) == []                                      # first epoch ends at 1.178
    assert [x["t"] for x in view.metrics("system", r)] == [0.0, 1.0]
    run = view.get_run(r)
    assert run["status"] == "running" and run["summary"] == {"replicas": 2} and run["ended"] is None
    assert view.active_runs() == [] and [x["id"] for x in view.list_runs()] == [r, b]
    # Mid-way, the speedup is computed from the rows visible so far, as the live view does:
    # the run's steady executions (0.032 s each) over the baseline's (none steady yet).
    c = compare(view, b, r)
    assert c["samples_per_sec"] == pytest.approx(4000.0) and c["throughput_speedup"] is None
    view = replay.ReplayStore(store, [b, r], 1.4)
    assert view.get_run(r) == store.get_run(r)                                   # ended: the stored run
    assert compare(view, b, r)["baseline_samples_per_sec"] == pytest.approx(1000.0)
    assert view.frame("executions", b)["idx"].tolist() == [0, 1, 2, 3]
    # At the end: exactly what the store says.
    end = replay.ReplayStore(store, [b, r], view.duration)
    assert compare(end, b, r) == compare(store, b, r)
    assert compare(end, b, r)["throughput_speedup"] == pytest.approx(4.0)


def test_label_names_machine_devices_date_and_whether_it_is_this_machine(pair, monkeypatch):
    store, b, r = pair
    monkeypatch.delenv("SPEEDLAB_USE_UNKNOWN_MACHINE", raising=False)
    day = time.strftime("%Y-%m-%d", time.localtime(store.get_run(b)["created"]))
    # Stored before fingerprints, with no CPU model either: the hostname (gpu-box-7) is no machine's name.
    assert replay.recorded_label([store.get_run(b), store.get_run(r)]) == \
        f"replay of runs recorded on machine unknown, 1 GPU vs 2 GPUs, {day} · measured elsewhere, not on this machine"
    # The shipped recording's environment: a hostname every machine of ours has, and the CPU's model.
    old = {"id": 1, "created": store.get_run(b)["created"],
           "environment": {"hostname": "vm", "cpu_model": "Intel(R) Xeon(R) Processor", "device_kind": "CPU",
                           "devices": ["/device:CPU:0"], "logical_cores": 2}}
    assert replay.recorded_label([old], here="0123456789ab") == (
        f"replay of runs recorded on Intel(R) Xeon(R) Processor (no fingerprint), the CPU (2 cores), {day} · "
        "measured elsewhere, not on this machine")
    # A fingerprint names the machine; this machine's fingerprint id says it was measured here.
    xeon = {"id": "0123456789ab", "name": "Intel Xeon Sapphire Rapids (family 6 model 143), AVX-512+AMX, bf16, 2 cores"}
    new = {**old, "environment": {**old["environment"], "fingerprint": xeon}}
    assert replay.recorded_label([new], here="0123456789ab") == (
        f"replay of runs recorded on {xeon['name']}, the CPU (2 cores), {day} · measured on this machine")
    assert replay.recorded_label([new], here="fedcba987654").endswith("· measured elsewhere, not on this machine")
    assert replay.recorded_label([new, old], here="0123456789ab").endswith("· measured elsewhere, not on this machine")
    # Runs stored here before fingerprints may count as this machine's (opted in); one imported
    # from a bundle never does: its hostname is no evidence.
    monkeypatch.setenv("SPEEDLAB_USE_UNKNOWN_MACHINE", "1")
    mine = {**old, "environment": {**old["environment"], "hostname": os.uname().nodename}}
    assert replay.measured_here([mine], here="0123456789ab")
    assert not replay.measured_here([{**mine, "origin": {"host": "vm", "run_id": 10}}], here="0123456789ab")
    # A run whose MFU fields name its GPU (peak_device) is labelled with it.
    h200 = {**store.get_run(b), "summary": {**(store.get_run(b)["summary"] or {}), "peak_device": "NVIDIA H200"}}
    assert replay.devices_text(h200) == "1 GPU (NVIDIA H200)"
    sim = {"id": 9, "created": 86400 * 365.0, "config": {"devices": 2},
           "environment": {"hostname": "laptop", "device_kind": "CPU", "devices": ["a", "b"],
                           "replicas_simulated": True}}
    assert replay.devices_text(sim) == "2 CPU devices (simulated)"
    assert replay.devices_text({"environment": {"device_kind": "CPU", "devices": ["/device:CPU:0"],
                                                "logical_cores": 2}}) == "the CPU (2 cores)"
    assert replay.devices_text({"config": {"devices": 4, "workers": 2, "device_type": "gpu"}}) == \
        "2 workers × 4 GPUs"


def test_default_pair_is_the_newest_run_with_a_finished_baseline(store):
    b1 = recorded(store, "baseline", 1000.0, group="g1")
    r1 = recorded(store, "run", 2000.0, group="g1")
    assert replay.default_pair(store.list_runs()) == (b1, r1)
    r2 = recorded(store, "run", 3000.0, group="g2")  # reused baseline b1: linked by baseline_id
    store.update_run(r2, baseline_id=b1)
    assert replay.default_pair(store.list_runs()) == (b1, r2)
    store.create_run(RunConfig().to_json(), role="run", group_id="g3", status="running")
    assert replay.default_pair(store.list_runs()) == (b1, r2)
    assert replay.default_pair([]) is None


# --- the page -----------------------------------------------------------------------

def page() -> AppTest:
    at = app_test()
    at.switch_page("views/replay.py")
    return at.run()


def throughput_points(at: AppTest) -> int:
    """Markers in the throughput chart (steady points and warm-up crosses)."""
    (el,) = [el for el in at.get("plotly_chart") if el.proto.id.endswith("-throughput")]
    spec = json.loads(el.proto.spec)
    return sum(len(values(t.get("x"))) for t in spec["data"] if "markers" in t.get("mode", ""))


def values(v) -> list:
    """A trace's data array: Plotly sends NumPy arrays as base64 typed arrays."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v or [])


@pytest.mark.page
def test_replay_page_mid_way_and_at_the_end(pair):
    store, b, r = pair
    at = page()
    assert not at.exception
    day = time.strftime("%Y-%m-%d", time.localtime(store.get_run(b)["created"]))
    label = f"replay of runs recorded on machine unknown, 1 GPU vs 2 GPUs, {day} · measured elsewhere, not on this machine"
    # The default pair, paused at 0: both runs 'running', nothing drawn yet.
    assert (at.selectbox(key="replay_base").value, at.selectbox(key="replay_run").value) == (b, r)
    prog = re.sub(r"\\(.)", r"\1", at.get("progress")[0].proto.text)  # host names are escaped (engine.base.plain)
    assert label in prog and "0.0 s of 2.2 s recorded · 1× · paused" in prog
    assert {m.value for m in at.metric} == {"—"}                 # no speedup before any steady step
    assert not [x for x in at.button if x.key == "stop"]          # a replay has nothing to stop

    # Mid-way (paused at 1.1 s of recording): the rows recorded by then.
    replay.save_state(replay.ReplayState(b, r, offset=1.1))
    at = page()
    assert not at.exception
    assert "1.1 s of 2.2 s recorded" in at.get("progress")[0].proto.text
    assert throughput_points(at) == 1 + 4   # baseline: its warm-up; run: warm-up + 3 steady

    # The end: the headline numbers are the store's, as the Train page shows them.
    replay.save_state(replay.ReplayState(b, r, offset=10.0))
    at = page()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    cmp = compare(store, b, r)
    assert metrics["Steady"] == f"{cmp['steady_speedup']:.2f}×" == "4.00×"
    train = app_test().run()
    assert {m.label: m.value for m in train.metric} == metrics
    assert "2.2 s of 2.2 s recorded · 1× · finished" in at.get("progress")[0].proto.text


@pytest.mark.page
def test_a_paused_replay_at_step_0_has_no_clock_of_its_own(store_home):
    """Paused at 0.0 s, a run read '#20 ... step 0/120 · 5 s elapsed · warming up' and its seconds
    rose: a block whose script counts wall-clock seconds in the browser. Its elapsed time must
    be the replay's position, which stands still while paused."""
    at = page()
    at.button(key="replay_recorded").click().run(timeout=60)  # the shipped recording, paused at 0.0 s
    assert not at.exception and replay.load_state().paused and replay.load_state().offset == 0.0
    assert [h.proto.body[:40] for h in at.get("html") if "data-frames" in h.proto.body] == []
    lines = [p.proto.text for p in at.get("progress")[1:]]  # [0] is the replay's own line
    assert len(lines) == 2 and all(re.search(r"step 0/\d+ · 0\.0 s elapsed · warming up$", t) for t in lines), lines


@pytest.mark.page
def test_play_and_restart_buttons_write_the_clock(pair):
    store, b, r = pair
    at = page()
    saved = []
    real = replay.save_state
    replay.save_state = lambda state: (saved.append(state), real(state))
    try:
        at.button(key="replay_play").click().run()
    finally:
        replay.save_state = real
    # Play writes position 0, playing (the page drawn after it may already find a 2.2 s
    # recording at its end on a loaded machine: then it shows Play again, paused there).
    s = saved[0]
    assert not s.paused and s.offset == 0.0 and 0 < s.anchor <= time.time()
    if not replay.load_state().paused:
        assert [b.key for b in at.button if b.key in ("replay_play", "replay_pause")] == ["replay_pause"]
    at.segmented_control(key="replay_speed").set_value(10).run()
    assert replay.load_state().speed == 10
    at.button(key="replay_pause").click().run()
    assert replay.load_state().paused
    # A reload (a new session) finds the same clock.
    again = page()
    assert again.segmented_control(key="replay_speed").value == 10
    assert again.button(key="replay_play")
    saved = []
    real = replay.save_state
    replay.save_state = lambda state: (saved.append(state), real(state))
    try:
        again.button(key="replay_restart").click().run()
    finally:
        replay.save_state = real
    # Restart writes position 0, playing (at 10x a 2.2 s recording may already have run to
    # its end and been paused there by the time the page is drawn on a loaded machine).
    assert not saved[0].paused and saved[0].offset == 0.0


@pytest.mark.page
def test_replay_page_empty_store(store_home):
    at = page()
    assert not at.exception
    assert "Nothing to replay yet" in at.info[0].value


def test_replay_page_imports_the_recorded_mnist5k_pair_when_empty(store_home, monkeypatch):
    monkeypatch.delenv("SPEEDLAB_USE_UNKNOWN_MACHINE", raising=False)
    at = page()
    at.button(key="replay_recorded").click().run(timeout=60)
    assert not at.exception and not at.error
    st = Store()
    try:
        runs = st.list_runs()
    finally:
        st.close()
    assert sorted(r["role"] for r in runs) == ["baseline"] * 5 + ["run"] * 5   # a comparison of 5 pairs
    assert {r["config"]["dataset"] for r in runs} == {"mnist5k"}
    last = max(r["id"] for r in runs)  # the last pair (AB): its baseline, then its run
    # The page now plays the comparison's last pair, nothing left to import; the headline has its interval.
    assert not [i for i in at.info if "Nothing to replay" in i.value]
    assert (at.selectbox(key="replay_base").value, at.selectbox(key="replay_run").value) == (last - 1, last)
    assert at.selectbox(key="replay_run").options[0].startswith(f"#{last} mixed bf16 · spe 4 · one_cycle · imported")
    assert at.selectbox(key="replay_run").options[0].endswith(" · imported (run #10 there)")  # no hostname
    assert any("4 pairs" in c.value for c in at.caption) and any("5.70x faster" in m.value for m in at.markdown)
    # Its header names the recording's hardware (not the hostname every machine here has) and says
    # that its 5.70x was not measured on this machine.
    day = time.strftime("%Y-%m-%d", time.localtime(next(r for r in runs if r["id"] == last)["created"]))
    head = re.sub(r"\\(.)", r"\1", at.get("progress")[0].proto.text)
    assert head.startswith(f":material/replay: replay of runs recorded on Intel(R) Xeon(R) Processor (no fingerprint), "
                           f"the CPU (2 cores), {day} · measured elsewhere, not on this machine · 0.0 s of ")
    assert " vm" not in head
    at.button(key="replay_recorded").click().run(timeout=60)            # a second click plays it again
    assert not at.error and len(Store().list_runs()) == 10
