"""Dashboard pages under streamlit.testing.v1.AppTest: empty and filled stores,
validation, launching (one tiny real run), the Runs page, and no TensorFlow
in the app process."""
from __future__ import annotations

import base64
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.hints import option_hint
from streamlit.testing.v1 import AppTest

from engine.base import plain
from engine.data import meta as datasets_meta
from engine.jobs import runner
from engine.config import ConfigError, RunConfig
from engine.config.preflight import check_runnable
from engine.report.measure import steady_state
from engine.store import SYSTEM_COLS, Store
from tests.helpers.apptest import app_test


ROOT = Path(__file__).resolve().parents[1]


# --- helpers -------------------------------------------------------------------

def fake_run(store: Store, cfg: RunConfig, role="run", group="g1", rate=10_000.0, n_exec=None,
             status="completed", simulated=False, ttt=None, wait=None, val_acc=None) -> int:
    """Store a run as the worker would (plan, metrics, summary), without training.

    One execution per step; the first is a 1 s warm-up; `rate` in samples/s;
    `wait`: share of each execution spent waiting for data (None: not measured,
    as multi-worker runs store it); `val_acc`: validation accuracy per epoch.
    """
    rid = store.create_run(cfg.to_json(), role=role, group_id=group,
                           status="running" if status != "queued" else "queued")
    if status == "queued":
        return rid
    spe = cfg.steps_per_epoch()
    total = spe * cfg.epochs
    n = n_exec or total
    plan = {"steps_per_epoch": spe, "total_steps": max(total, n), "epochs": cfg.epochs,
            "replicas": cfg.devices, "replicas_simulated": simulated,
            "per_replica_batch_size": cfg.per_replica_batch_size, "device_kind": "CPU"}
    store.update_run(rid, plan=plan, environment={"hostname": os.uname().nodename})
    bs, t, rows, durs = cfg.batch_size, 0.0, [], []
    for i in range(n):
        d = 1.0 if i == 0 else bs / rate * (1.0, 0.95, 1.05)[i % 3]  # noisy, median exact
        t += d
        durs.append(d)
        rows.append((i, i * cfg.epochs // n, i + 1, 1, t, d, bs / d, 2.3 * math.exp(-3 * i / n),
                     cfg.learning_rate, int(i == 0), None if wait is None else wait * d))
    accs = val_acc or [0.6 + 0.1 * e for e in range(cfg.epochs)]
    ep = [(e, t * (e + 1) / cfg.epochs, (e + 1) * n // cfg.epochs, 1.0 / (e + 1), 0.5 + 0.1 * e,
           0.9 / (e + 1), accs[e], cfg.learning_rate) for e in range(cfg.epochs)]
    sample = {"cpu_percent": 95.0, "rss_mb": 800.0, "mem_percent": 20.0, "worker": 0}
    sysrows = [tuple({**sample, "t": float(s)}.get(c) for c in SYSTEM_COLS) for s in range(int(t) + 2)]
    store.add_metrics(rid, rows, ep, sysrows)
    summary = {**steady_state(durs, [1] * n, bs), "wall_sec": t, "replicas": cfg.devices,
               "replicas_simulated": simulated, "final_val_accuracy": accs[-1],
               "time_to_target_sec": ttt, "warnings": []}
    if status == "running":
        store.update_run(rid, summary=summary, pid=os.getpid(), pid_started=_my_start())
    else:
        store.finish_run(rid, status, None if status == "completed" else "cancelled by the user",
                         summary=summary)
    return rid


def _my_start() -> float:
    import psutil

    return psutil.Process().create_time()


def finished_pair(store: Store, n_exec=None) -> tuple[int, int]:
    """A baseline and a mixed_bfloat16 2-device (simulated) run, 1.5x faster."""
    cfg = RunConfig(epochs=3, precision="mixed_bfloat16", devices=2, target_accuracy=0.7)
    base = RunConfig(epochs=3, target_accuracy=0.7)
    b = fake_run(store, base, "baseline", rate=8000.0, n_exec=n_exec, ttt=2.0)
    r = fake_run(store, cfg, "run", rate=12_000.0, n_exec=n_exec, simulated=True, ttt=1.0)
    return b, r


def two_pair_comparison(store: Store, group: str, first_run: str) -> tuple[int, list[int]]:
    """A running comparison of 2 planned pairs (AB, BA; target 0.7) as the queue stores it:
    pair 1's baseline completed (10,000 samples/s) and its run `first_run` ('running': this
    process stands in for its worker; 'completed'; or 'queued'), at 20,000 samples/s; pair 2
    queued; no result counted yet. Returns (comparison id, [b0, r0, b1, r1])."""
    from engine.store import comparisons as cstore

    base = RunConfig(epochs=3, target_accuracy=0.7)
    run = RunConfig(epochs=3, target_accuracy=0.7, precision="mixed_bfloat16")
    b0 = fake_run(store, base, "baseline", group=group)
    r0 = fake_run(store, run, "run", group=group, status=first_run, rate=20_000.0)
    r1 = fake_run(store, run, "run", group=group, status="queued")
    b1 = fake_run(store, base, "baseline", group=group, status="queued")
    for rid in (b0, r0) if first_run != "queued" else (b0,):  # as the queue does when it starts them
        store.update_run(rid, started=time.time() - 30)
    plan = [{"pair": 0, "seed": 0, "order": "AB", "baseline_id": b0, "run_id": r0},
            {"pair": 1, "seed": 1, "order": "BA", "baseline_id": b1, "run_id": r1}]
    cid = cstore.create(store, "ab", group, {"pairs": 2, "max_pairs": 2, "target_half_width": 0.1,
                                             "budget_s": None, "min_pairs": 2}, plan, os.uname().nodename)
    return cid, [b0, r0, b1, r1]


def app(page: str | None = None) -> AppTest:
    at = app_test()
    if page:
        at.switch_page(page)
    return at.run()


def plotly_specs(at: AppTest) -> dict[str, dict]:
    """{widget key: figure JSON} of every Plotly chart on the page."""
    out = {}
    for el in at.get("plotly_chart"):
        key = el.proto.id.rsplit("-", 1)[-1]
        out[key] = json.loads(el.proto.spec)
    return out


def values(v) -> list:
    """A trace's data array: Plotly sends NumPy arrays as base64 typed arrays."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v or [])


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def no_errors(at: AppTest) -> None:
    """No exception, and no section caught one (pages show those as '<what> failed: ...')."""
    assert not at.exception, [e.value for e in at.exception]
    caught = [e.value for e in at.error if " failed: " in e.value]
    assert not caught, caught


# --- Train page ------------------------------------------------------------------

@pytest.mark.page
def test_train_page_empty_store(store_home):
    at = app()
    no_errors(at)
    assert "No runs yet: set options on the left and press **Launch**" in texts(at.info)
    launch = at.button(key="launch")
    assert launch.label == "Launch" and not launch.disabled
    assert at.toggle(key="with_baseline").value is True  # compare with baseline: on by default
    assert set(plotly_specs(at)) <= {"lr_preview"}  # no run charts yet


@pytest.mark.page
def test_train_page_shows_finished_comparison(store):
    b, r = finished_pair(store)
    at = app()
    no_errors(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Steady"] == "1.50×"
    # Time to 0.7 val accuracy, read off the stored epochs (2nd epoch ends at 2/3 of each run).
    ep = {rid: store.metrics("epochs", rid)[1]["t"] for rid in (b, r)}
    assert metrics["time to 0.7 val accuracy"] == f"{ep[b] / ep[r]:.2f}× faster"
    # End-to-end: all samples over the last execution's time (fakes have no timeline).
    e2e = {rid: sum(x["samples_per_sec"] * x["duration"] for x in store.metrics("executions", rid))
           / store.metrics("executions", rid)[-1]["t"] for rid in (b, r)}
    assert metrics["End-to-end"] == f"{e2e[r] / e2e[b]:.2f}×"
    status = texts(at.markdown)
    assert f"#{b} baseline fp32**: completed" in status and f"#{r} mixed bf16 · 2 dev (sim)**: completed" in status
    specs = plotly_specs(at)
    assert {"throughput", "loss_t", "loss_step", "lr", "cpu", "mem"} <= set(specs)
    # Plotly's tool bar covered the titles of the three small charts in a row: none there.
    bars = {el.proto.id.rsplit("-", 1)[-1]: json.loads(el.proto.config).get("displayModeBar")
            for el in at.get("plotly_chart")}
    assert [bars[k] for k in ("lr", "cpu", "mem", "throughput")] == [False, False, False, None]
    tp = specs["throughput"]
    names = {t.get("name") for t in tp["data"]}
    assert {f"#{b} baseline fp32", f"#{r} mixed bf16 · 2 dev (sim)", "warm-up (compile)"} <= names
    assert tp["layout"]["yaxis"]["title"]["text"] == "throughput (samples/s)"
    assert not [b for b in at.button if b.key == "stop"]  # nothing to stop


@pytest.mark.page
def test_a_measuring_comparison_shows_its_pair_chart_from_the_first_complete_pair(store):
    """Before the first complete pair the pair chart is a box that says so (no empty Plotly
    chart drawn in the measured window); from the first complete pair on, the chart."""
    from engine.store import comparisons as cstore
    from engine.jobs import comparison

    cid, (b0, r0, b1, r1) = two_pair_comparison(store, "cmp-t", "running")
    try:
        at = app()
        no_errors(at)
        assert "Quiet while measuring" in texts(at.caption)
        assert "Pairs: time to accuracy speedup" in texts(at.markdown)
        assert "Waiting for the first complete pair" in texts(at.caption)
        assert "cmp_pairs" not in plotly_specs(at)
        assert "(2 pairs asked)" in texts(at.caption)
        store.finish_run(r0, "completed", summary=store.get_run(r0)["summary"])
        comparison.finish_if_done(store, cstore.get(store, cid))  # as the queue does after each run
        at = app()
        no_errors(at)
        assert "Waiting for the first complete pair" not in texts(at.caption)
        # Between two pairs (the next one queued) the page stays quiet, with Stop: the pair shown has
        # ended, but the comparison has not (it drew its block twice and lost Stop for a moment).
        assert "Quiet while measuring" in texts(at.caption)
        assert [b.key for b in at.button if b.key == "stop"] == ["stop"]
        assert "throughput" not in plotly_specs(at)
        chart = plotly_specs(at)["cmp_pairs"]
        assert chart["layout"]["title"]["text"] == "Pairs: time to accuracy speedup"
        # One pair: 0.7 is first reached at the 2nd epoch's end, 2/3 of each run's 1 s warm-up
        # + 35 executions of 128 samples at 10,000 and 20,000 samples/s: (1.448 / 1.224) = 1.183.
        ep = {rid: store.metrics("epochs", rid)[1]["t"] for rid in (b0, r0)}
        assert ep[b0] / ep[r0] == pytest.approx(1.448 / 1.224)
        (pair,) = [t for t in chart["data"] if t.get("name") == "one pair"]
        assert pair["x"] == [1] and pair["y"] == [pytest.approx(1.448 / 1.224)]
    finally:
        for rid in (r1, b1):
            store.finish_run(rid, "cancelled", "test over")


@pytest.mark.page
def test_a_comparison_stopped_before_any_pair_completed_says_so_where_the_chart_would_be(store):
    from engine.store import comparisons as cstore
    from engine.jobs import comparison

    cid, (b0, r0, b1, r1) = two_pair_comparison(store, "cmp-u", "queued")  # stopped after pair 1's baseline
    for rid in (r0, b1, r1):
        store.finish_run(rid, "cancelled", "cancelled before it started")
    comp = comparison.finish_if_done(store, cstore.get(store, cid))
    assert comp["status"] == "stopped" and comp["result"]["pairs"] == 0
    at = app()
    no_errors(at)
    assert "No pair of this comparison completed, so there is no ratio to show." in texts(at.caption)
    assert "Waiting for the first complete pair" not in texts(at.caption) and "cmp_pairs" not in plotly_specs(at)
    # Pair 1's run never started: said so (it read "cancelled at step 0/?"), and pair 2's baseline,
    # never run either, is not listed as measured.
    assert f"#{r0} mixed bf16**: cancelled before it started" in texts(at.markdown)
    # A clock time (a relative "30 s ago" froze where it was drawn), and how long before the draw.
    import re

    assert re.search(rf"Baselines measured fresh in this comparison \(#{b0}\), first at \d\d:\d\d:\d\d "
                     r"\(3\d s ago when drawn\)", texts(at.caption))


def test_the_stop_toast_names_running_runs_and_counts_queued_ones():
    from views.components.live_charts import stop_toast

    assert stop_toast(["run 3 cancelled", "run 4 cancelled before it started",
                       "run 5 cancelled before it started"]) == "run 3 cancelled; 2 queued runs cancelled before they started"
    assert stop_toast(["run 9 cancelled before it started"]) == "1 queued run cancelled before it started"
    assert stop_toast([]) == "nothing to stop"


@pytest.mark.page
def test_stop_pressed_just_after_a_pair_ended_is_not_lost_to_the_redraw(store):
    """The live fragment reruns the page when a pair has ended since main() drew it. A click on
    Stop in that fragment rerun was consumed by the redraw and lost: the comparison ran on to
    its pair limit (seen in test_browser). Stop acts in its callback, before the body runs."""
    from benchmarks.live_view import fragment_run, live_fragment_id
    from engine.store import comparisons as cstore
    from engine.jobs import comparison

    cid, (b0, r0, b1, r1) = two_pair_comparison(store, "cmp-s", "completed")
    at = app()  # drawn with no pair counted yet
    no_errors(at)
    assert "Quiet while measuring" in texts(at.caption)
    comparison.finish_if_done(store, cstore.get(store, cid))  # the queue counts pair 1: a redraw is due
    fid = live_fragment_id(at)
    assert fid is not None
    at.button(key="stop").click()
    fragment_run(at, fid)  # the fragment's tick with the click, as the browser sends it
    no_errors(at)
    assert [store.get_run(i)["status"] for i in (b1, r1)] == ["cancelled", "cancelled"]
    assert [t.value for t in at.toast] == ["2 queued runs cancelled before they started"]
    # From now on the page reads the store every second (it must say "stopped" at once), and the
    # next read shows the comparison ended.
    assert "stop_clicked_at" in at.session_state
    at.run()
    no_errors(at)
    assert "stopped by the user; 1 complete pair kept" in texts(at.caption)
    assert "Quiet while measuring" not in texts(at.caption)


@pytest.mark.page
def test_a_run_that_is_its_own_baseline_shows_no_speedup(store):
    b = fake_run(store, RunConfig(epochs=3, target_accuracy=0.95), "baseline", val_acc=[0.6, 0.8, 0.886])
    at = app()
    no_errors(at)
    # "1.00x" read as a measured result, here for a run that never reached 0.95.
    assert {m.label: m.value for m in at.metric}["Time to 0.95 val accuracy"] == "—"
    assert "Not reached in 3 epochs. This run is its own baseline: nothing to compare." in texts(at.caption)
    # One that reached it shows its own time (a first user's default Launch showed only "—").
    store.delete_run(b)
    fake_run(store, RunConfig(epochs=3, target_accuracy=0.95), "baseline", val_acc=[0.6, 0.96, 0.97])
    at = app()
    no_errors(at)
    epochs = store.metrics("epochs", store.list_runs()[0]["id"])
    assert {m.label: m.value for m in at.metric}["Time to 0.95 val accuracy"] == f"{epochs[1]['t']:.2f} s"
    assert "Not reached" not in texts(at.caption) and "This run is its own baseline" in texts(at.caption)


@pytest.mark.page
def test_a_baseline_config_launched_again_is_compared_with_the_baseline_it_reused(store):
    """Launched against stored baseline #b, a run of the very baseline settings is compared
    with #b, finished as while it ran (it used to become "its own baseline" once completed)."""
    cfg = RunConfig(epochs=3, target_accuracy=0.7)
    b = fake_run(store, cfg, "baseline", group="g1", rate=8000.0, ttt=2.0)
    r = fake_run(store, cfg, "run", group="g2", rate=10_000.0, ttt=1.6)
    store.update_run(r, baseline_id=b)
    at = app()
    no_errors(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Steady"] == "1.25×"
    assert "This run is its own baseline" not in texts(at.caption)


@pytest.mark.page
def test_failed_and_cancelled_runs_keep_their_charts(store):
    b = fake_run(store, RunConfig(epochs=3), "baseline", rate=8000.0)
    r = fake_run(store, RunConfig(epochs=3, steps_per_execution=4), "run", status="cancelled")
    at = app()
    no_errors(at)
    assert f"#{r} fp32 · spe 4**: cancelled at step" in texts(at.markdown)
    assert "throughput" in plotly_specs(at)
    store.finish_run(b, "failed", "out of memory: OOM when allocating; use a smaller batch_size")
    at = app()
    no_errors(at)
    assert "failed: out of memory: OOM when allocating; use a smaller batch_size" in texts(at.markdown)


@pytest.mark.page
def test_long_runs_are_downsampled_for_display(store):
    finished_pair(store, n_exec=6000)
    specs = plotly_specs(app())
    for key in ("throughput", "loss_t", "loss_step", "lr"):
        longest = max(len(values(t.get("x"))) for t in specs[key]["data"])
        assert 1000 < longest <= 2000 + 3, key


@pytest.mark.page
def test_invalid_settings_disable_launch_and_show_the_engine_message(store_home):
    at = app()
    at.number_input(key="devices").set_value(3).run()
    no_errors(at)
    with pytest.raises(ConfigError) as err:
        RunConfig(devices=3)
    msg = str(err.value)  # "batch_size: 128 is not divisible by 3 replicas; use 126 or 129 ..."
    assert msg in texts(at.error)
    assert at.button(key="launch").disabled
    # Another field: steps per execution beyond one epoch.
    at.number_input(key="devices").set_value(1)
    at.number_input(key="steps_per_execution").set_value(1000).run()
    assert "steps_per_execution: 1000 is more than the 12 steps in one epoch" in texts(at.error)
    assert at.button(key="launch").disabled
    at.number_input(key="steps_per_execution").set_value(4).run()
    assert not at.error and not at.button(key="launch").disabled


@pytest.mark.page
def test_missing_device_is_refused_before_launch(store_home):
    from engine.hardware.machine import quick_facts

    if quick_facts()["gpus"]:
        pytest.skip("this machine has a GPU")
    at = app()
    at.selectbox(key="device_type").set_value("gpu").run()
    no_errors(at)
    assert "device_type: 'gpu' was requested but no GPU is visible" in texts(at.error)
    assert at.button(key="launch").disabled


@pytest.mark.page
def test_simulated_devices_are_explained(store_home):
    at = app()
    at.number_input(key="devices").set_value(2).run()
    no_errors(at)
    for w in check_runnable(RunConfig(devices=2)):  # e.g. "2 replicas will be simulated ..."
        assert w in texts(at.warning)
    assert "Per-replica batch: **64** samples on each of 2 replicas" in texts(at.markdown)


@pytest.mark.page
def test_schedule_expander_previews_the_learning_rate(store_home):
    pytest.importorskip("engine.config.lr_math")
    at = app()
    at.selectbox(key="schedule").set_value("one_cycle")
    at.selectbox(key="optimizer").set_value("sgd").run()
    no_errors(at)
    spec = plotly_specs(at)["lr_preview"]
    assert spec["data"][0]["name"] == "learning rate (left)" and len(spec["data"]) == 2  # lr + momentum
    # A schedule conflict is shown next to its control and blocks Launch.
    at.number_input(key="warmup_epochs").set_value(1.0).run()
    assert "warmup_epochs: 1.0 does not apply to schedule 'one_cycle'" in texts(at.error)
    assert at.button(key="launch").disabled


@pytest.mark.page
def test_hardware_hint_from_the_cached_check(store_home):
    hardware = pytest.importorskip("engine.hardware.verdicts")
    facts = {"gpus": [], "host": {"cpu_flags": ["avx512_bf16"]}, "tpu": {"cores": 0}}
    (store_home / "hardware.json").write_text(json.dumps({hardware.cache_key(): facts}))
    at = app()
    at.selectbox(key="precision").set_value("mixed_bfloat16").run()
    no_errors(at)
    assert option_hint(facts, "mixed_bfloat16") in texts(at.caption)


@pytest.mark.page
def test_hardware_link_when_no_check_is_cached_and_verdicts_when_it_is(store_home):
    hardware = pytest.importorskip("engine.hardware.verdicts")
    at = app()
    no_errors(at)
    link = at.get("page_link")
    assert link and link[0].proto.label == "Run the hardware check" and link[0].proto.page == "hardware"
    facts = {"gpus": [], "host": {"cpu_flags": ["avx512_bf16"]}, "tpu": {"cores": 0}}
    (store_home / "hardware.json").write_text(json.dumps({hardware.cache_key(): facts}))
    at = app()
    assert not at.get("page_link")
    captions = texts(at.caption)
    # float32 selected: the faster low precision is suggested; XLA and devices judged too.
    assert ":green-badge[tip] mixed_bfloat16 should be faster here" in captions
    assert ":orange-badge[measure] " + option_hint(facts, "jit_compile") in captions
    assert ":gray-badge[neutral] " + option_hint(facts, "devices") in captions


@pytest.mark.page
def test_workers_times_devices_gives_the_replicas(store_home):
    at = app()
    at.number_input(key="workers").set_value(2).run()
    no_errors(at)
    assert "Per-replica batch: **64** samples on each of 2 replicas (1 device × 2 workers)" in texts(at.markdown)
    assert "replicas = devices x workers" in texts(at.caption)  # the field's help
    from engine.hardware.machine import quick_facts

    if not quick_facts()["gpus"]:  # 2 devices x 2 workers on a CPU: refused by the engine
        at.number_input(key="devices").set_value(2).run()
        assert "devices: 2 per worker on a CPU with 2 workers" in texts(at.error)
        assert at.button(key="launch").disabled


@pytest.mark.page
def test_each_schedule_shows_its_own_settings_and_advanced_fields(store_home):
    at = app()
    keys = lambda: {w.key for w in [*at.number_input, *at.selectbox, *at.toggle]}  # noqa: E731
    assert "reduce_on_plateau" in keys() and "cyclic_mode" not in keys()
    assert {"seed", "validation_fraction"} <= keys()
    at.toggle(key="reduce_on_plateau").set_value(True)
    at.number_input(key="warmup_epochs").set_value(1.0).run()
    assert "reduce_on_plateau: True conflicts with a learning-rate warmup" in texts(at.error)
    at.toggle(key="reduce_on_plateau").set_value(False)
    at.number_input(key="warmup_epochs").set_value(0.0)
    at.selectbox(key="schedule").set_value("cyclic").run()
    no_errors(at)
    assert {"cyclic_mode", "half_cycle_epochs"} <= keys() and "cyclic_gamma" not in keys()
    assert "reduce_on_plateau" not in keys()
    at.selectbox(key="cyclic_mode").set_value("exp_range").run()
    assert "cyclic_gamma" in keys()
    at.selectbox(key="schedule").set_value("one_cycle").run()
    assert {"one_cycle_pct_start", "one_cycle_div_factor", "one_cycle_final_div_factor"} <= keys()
    at.number_input(key="one_cycle_pct_start").set_value(1.0).run()
    assert "one_cycle_pct_start: 1.0 is out of range" in texts(at.error)
    at.number_input(key="one_cycle_pct_start").set_value(0.25)
    at.selectbox(key="schedule").set_value("warmup_step").run()
    assert {"step_decay_epochs", "step_decay_rate"} <= keys()
    at.number_input(key="seed").set_value(7)
    at.number_input(key="validation_fraction").set_value(0.6).run()
    assert "validation_fraction: 0.6 is out of range" in texts(at.error)
    assert at.button(key="launch").disabled


def lr_sweep(n=80, suggested=3e-3) -> dict:
    """An LR range test result as engine.lr_find.range_test.run saves it."""
    from engine.lr_find import range_test as lr_find

    lrs = [1e-6 * (1e6 ** (i / 99)) for i in range(n)]
    loss = [2.3 - 1.8 / (1 + math.exp(-(math.log10(x) + 3) * 3)) for x in lrs]
    res = {"lr": lrs, "loss": loss, "smoothed": loss, "stopped": "diverged", "config": RunConfig().to_dict(),
           "suggestion": lr_find.suggest(lrs, loss), "created": 2e9}
    res["suggestion"]["suggested"] = suggested
    lr_find.save(res)
    return res


@pytest.mark.page
def test_lr_finder_chart_and_use_as_max_lr(store_home):
    lr_sweep()
    at = app()
    at.selectbox(key="schedule").set_value("one_cycle").run()
    no_errors(at)
    spec = plotly_specs(at)["lr_find_chart"]
    assert spec["layout"]["xaxis"]["type"] == "log"
    assert [t["name"] for t in spec["data"]] == ["raw", "smoothed", "minimum", "suggested"]
    assert "Suggested max LR **0.003**" in texts(at.caption)
    at.button(key="lr_find_use").click().run()
    no_errors(at)
    assert at.number_input(key="max_lr").value == pytest.approx(3e-3)
    assert not at.error and not at.button(key="launch").disabled  # a valid config
    # Another model than the sweep's: flagged, with what to do.
    at.selectbox(key="model").set_value("mlp").run()
    assert "This sweep used other settings (model)" in texts(at.caption)


@pytest.mark.worker
def test_lr_finder_runs_in_the_background(store_home):
    """A real sweep (mlp on digits) started from the page; the page is not
    blocked, and shows the chart once the detached process is done."""
    import time

    from engine.lr_find import range_test as lr_find

    at = app()
    at.selectbox(key="model").set_value("mlp").run()
    t0 = time.monotonic()
    at.button(key="lr_find_start").click().run()
    assert time.monotonic() - t0 < 5  # started, not waited for
    no_errors(at)
    try:
        assert lr_find.read_progress()["state"] == "running"
        assert "Sweeping the LR" in at.get("progress")[0].proto.text
        assert at.button(key="lr_find_cancel")
        deadline = time.monotonic() + 120
        while lr_find.read_progress()["state"] == "running" and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        lr_find.cancel_background()
    assert lr_find.read_progress()["state"] == "done", lr_find.read_progress()
    at = app()
    at.selectbox(key="model").set_value("mlp").run()
    no_errors(at)
    assert "lr_find_chart" in plotly_specs(at) and at.button(key="lr_find_use")


@pytest.mark.page
def test_tuned_baseline_toggle_launches_against_the_stored_tuned_baseline(store, monkeypatch):
    from engine.store import tuned_baselines
    from engine.jobs import comparison

    at = app()
    no_errors(at)
    toggle = at.toggle(key="tuned_baseline")
    assert toggle.disabled and "python -m engine tune-baseline" in toggle.help  # nothing tuned yet
    tuned_baselines.put(store, RunConfig(), 0.0049, 0.95, {"seeds": [0, 1]}, "vm")
    calls = []
    monkeypatch.setattr(comparison, "start", lambda cfg, **kw: calls.append(kw) or 1)
    monkeypatch.setattr(__import__("engine.store.comparisons", fromlist=["get"]), "get",
                        lambda _s, _cid: {"plan": [{"baseline_id": 1, "run_id": 2}]})
    at = app()
    at.selectbox(key="precision").set_value("mixed_bfloat16").run()
    toggle = at.toggle(key="tuned_baseline")
    assert not toggle.disabled and "constant learning rate 0.0049, stored" in toggle.help
    toggle.set_value(True).run()
    at.button(key="launch").click().run()
    no_errors(at)
    assert [c["baseline_kind"] for c in calls] == ["tuned"]
    assert at.session_state["launched"]["msg"].startswith(
        "Queued comparison #1: up to 1 interleaved pairs of the tuned baseline and run (first: baseline #1, run #2)")
    # Off again: the Keras-default baseline, as before.
    at.toggle(key="tuned_baseline").set_value(False).run()
    at.button(key="launch").click().run()
    assert [c["baseline_kind"] for c in calls] == ["tuned", "default"]


@pytest.mark.page
def test_active_run_reattaches_blocks_a_second_launch_and_stops(store):
    rid = fake_run(store, RunConfig(epochs=2), "baseline", status="queued")
    at = app()  # a fresh session (like a reload or a second tab) finds the run in the store
    no_errors(at)
    assert f"#{rid} baseline fp32**: queued" in texts(at.markdown)
    at.button(key="launch").click().run()
    assert f"Run #{rid} (#{rid} baseline fp32) is queued" in texts(at.warning)
    assert len(store.list_runs()) == 1  # nothing new was queued
    at.button(key="stop").click().run()
    no_errors(at)
    assert store.get_run(rid)["status"] == "cancelled"
    at.run()
    assert "cancelled" in texts(at.markdown)


@pytest.mark.page
def test_running_run_shows_progress_and_holds_the_speedup_back(store):
    base = fake_run(store, RunConfig(epochs=3), "baseline", rate=8000.0)
    rid = fake_run(store, RunConfig(epochs=3, steps_per_execution=4), "run", rate=16_000.0,
                   status="running")
    at = app()
    no_errors(at)
    bar = at.get("progress")
    assert bar and "epoch 3/3" in bar[0].proto.text and "s left" in bar[0].proto.text
    # Mid-run ratios mean nothing (end-to-end read 0.06x, 0.30x, 0.41x before settling near 0.9x).
    assert {m.label: m.value for m in at.metric} == {"Speedup of this pair · in progress": "—"}
    assert at.button(key="stop")
    store.finish_run(rid, "completed")  # keep the Stop button from signalling this process
    assert base


@pytest.mark.worker
def test_real_run_launched_from_the_train_page(store_home):
    """A tiny real baseline + run (digits, mlp, 2 epochs) through the page."""
    at = app()
    at.selectbox(key="model").set_value("mlp")
    at.number_input(key="epochs").set_value(2)
    at.number_input(key="steps_per_execution").set_value(4).run()
    at.button(key="launch").click().run()
    no_errors(at)
    assert "Queued comparison #1: up to 5 interleaved pairs" in texts(at.success)
    assert "(first: baseline #1, run #2)" in texts(at.success)
    try:
        for rid in (1, 2):
            assert runner.wait(rid, poll_s=0.25, timeout_s=180)["status"] == "completed"
    finally:
        runner.cancel_active()  # Stop after the first pair: it is kept
    from engine.store import comparisons as cstore
    from engine.jobs import comparison

    comp = comparison.wait(1, timeout_s=60)
    assert comp["status"] == "stopped" and comp["result"]["pairs"] == 1
    at = app()  # a new session re-attaches from the store
    no_errors(at)
    metrics = {m.label: m.value for m in at.metric}
    value = metrics["Steady"]
    assert value.endswith("×") and float(value[:-1]) > 0
    # mlp on digits does not reach 0.95 in 2 epochs: no number, the reason instead.
    assert metrics["this pair: time to 0.95 val accuracy"] == "—"
    assert "not reached in 2 epochs" in texts(at.caption)
    assert "stopped by the user; 1 complete pair kept" in texts(at.caption)
    assert cstore.get(Store(), 1)["result"]["end_to_end"]["pairs"] == 1
    parts = plotly_specs(at)["time_parts"]["data"]
    assert [t["name"] for t in parts] == ["setup", "warm-up", "training", "data wait", "validation", "other"]
    specs = plotly_specs(at)
    steady = [t for t in specs["throughput"]["data"] if t.get("mode") == "lines+markers"]
    assert len(steady) == 2 and all(len(values(t["x"])) > 1 for t in steady)
    assert any(t.get("name", "").endswith("val") for t in specs["loss_step"]["data"])


# --- Train page: data, upload, pipeline, transfer, data wait ------------------------

def npz_bytes(**arrays) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def registry(store_home: Path) -> list[str]:
    """Everything under the registry folder, hidden temporary folders included."""
    d = store_home / "datasets"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


@pytest.mark.page
def test_upload_registers_a_good_npz_and_selects_it(store_home):
    rng = np.random.default_rng(0)
    good = npz_bytes(x_train=rng.integers(0, 256, (200, 6, 5), dtype=np.uint8),
                     y_train=np.repeat(np.arange(4), 50))
    at = app()
    assert "user:stripes" not in at.selectbox(key="dataset").options
    at.file_uploader[0].upload("stripes.npz", good, "application/octet-stream")
    at.text_input(key="upload_name").input("stripes").run()  # the browser reruns after an upload
    at.button(key="upload_register").click().run()
    no_errors(at)
    assert registry(store_home) == ["stripes"]
    sel = at.selectbox(key="dataset")
    assert "user:stripes" in sel.options and sel.value == "user:stripes"
    assert "Registered **user:stripes**: 200 images of 6x5x1, 4 classes" in texts(at.success)
    assert "200 images of 6x5x1, 4 classes" in texts(at.caption)  # the selected data set described
    assert not at.button(key="launch").disabled  # a valid config on the new data
    assert not at.file_uploader[0].value  # emptied for the next upload
    # The same name again: refused with the engine's line, nothing replaced.
    at.file_uploader[0].upload("stripes.npz", good, "application/octet-stream")
    at.text_input(key="upload_name").input("stripes").run()  # the browser reruns after an upload
    at.button(key="upload_register").click().run()
    assert "a data set named 'stripes' is already registered; pick another name or replace it" in texts(at.error)
    assert registry(store_home) == ["stripes"]


@pytest.mark.page
def test_upload_of_a_bad_npz_shows_one_line_per_fault_and_registers_nothing(store_home):
    bad = npz_bytes(x_train=np.zeros((1000, 8, 8), np.uint8), y_train=np.arange(999) % 10)
    at = app()
    at.file_uploader[0].upload("bad.npz", bad, "application/octet-stream").run()
    at.button(key="upload_register").click().run()  # no name given: taken from the file name
    no_errors(at)
    errors = [e.value for e in at.error]
    assert "x_train has 1000 samples but y_train has 999; give one label per image" in errors
    assert errors == ["x_train has 1000 samples but y_train has 999; give one label per image"]
    assert "**bad.npz was not registered** (1 problem); nothing was kept:" in texts(at.caption)
    assert registry(store_home) == []  # no half-registered data set, no temporary folder
    assert at.selectbox(key="dataset").options == list(datasets_meta.DATASET_NAMES)
    # Several faults: one line each.
    worse = npz_bytes(x_train=np.full((20, 4, 4), 3.2, np.float32), y_train=np.eye(20)[:, :3])
    at.file_uploader[0].upload("worse.npz", worse, "application/octet-stream").run()
    at.button(key="upload_register").click().run()
    errors = [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]  # the lines are escaped (engine.base.plain)
    assert "x_train values go from 3.2 to 3.2; float pixels must lie in [0, 1] (or give uint8 pixels 0..255)" \
        in errors
    assert "y_train has shape (20, 3); give integer class labels of shape (N,), not one-hot" in errors
    assert len(errors) == 2 and "**worse.npz was not registered** (2 problems)" in texts(at.caption)
    assert registry(store_home) == []


@pytest.mark.page
def test_label_subset_pipeline_and_model_controls(store_home):
    at = app()
    at.text_input(key="label_subset").input("5-9").run()
    no_errors(at)
    assert "896 images of 8x8x1, 5 classes (labels 5,6,7,8,9)" in texts(at.caption)
    assert not at.button(key="launch").disabled
    assert "labels 5,6,7,8,9" in texts(at.caption)  # the launch line names the subset
    at.text_input(key="label_subset").input("5,12").run()
    assert plain.md("label_subset: [5, 12] has label 12 but digits has labels 0..9") in texts(at.error)  # as plain text
    assert at.button(key="launch").disabled
    at.text_input(key="label_subset").input("")
    at.toggle(key="data_prefetch").set_value(False)
    at.toggle(key="data_cache").set_value(True).run()
    assert "cache · no prefetch" in texts(at.caption)
    # Backbones: image size and ImageNet weights; the engine judges them.
    keys = lambda: {w.key for w in [*at.number_input, *at.toggle, *at.selectbox]}  # noqa: E731
    assert "image_size" not in keys() and "pretrained" not in keys()
    at.selectbox(key="model").set_value("mobilenetv2")
    at.run()
    assert {"image_size", "pretrained"} <= keys()
    at.number_input(key="image_size").set_value(16).run()
    assert "image_size: 16 is below the 32 pixels keras.applications backbones accept" in texts(at.error)
    at.number_input(key="image_size").set_value(32)
    at.toggle(key="pretrained").set_value(True).run()
    assert {"freeze_epochs", "finetune_lr_factor"} <= keys()
    from engine.data import keras_data

    if keras_data.find_weights("mobilenetv2", 32) is None and not keras_data.online("storage.googleapis.com"):
        assert "pretrained: True needs the ImageNet weights of mobilenetv2" in texts(at.error)


@pytest.mark.page
def test_keras_data_set_availability_is_the_engines_message(store_home, monkeypatch):
    from engine.data import keras_data

    monkeypatch.setenv("SPEEDLAB_OFFLINE", "1")
    monkeypatch.setenv("KERAS_HOME", str(store_home / "keras"))
    if keras_data.find_cached("fashion_mnist") is not None:
        pytest.skip("fashion_mnist is cached here")
    at = app()
    at.selectbox(key="dataset").set_value("fashion_mnist").run()
    no_errors(at)
    with pytest.raises(ConfigError) as err:
        check_runnable(RunConfig(dataset="fashion_mnist"))
    assert plain.md(str(err.value)) in texts(at.error)
    assert "not in the Keras cache: downloaded on first use" in texts(at.caption)
    assert at.button(key="launch").disabled


@pytest.mark.page
def test_start_from_a_saved_run(store):
    from engine.jobs import demo as transfer

    cfgs = transfer.demo_configs(epochs=3, pretrain_epochs=3)
    plain = fake_run(store, RunConfig(epochs=2), group="g0")
    pid = fake_run(store, cfgs["pretrain"].replace(model="mlp"), group="g1")
    with zipfile.ZipFile(store.run_dir(pid) / "model.keras", "w") as z:  # only its listing is checked
        z.writestr("config.json", "{}")
    at = app()
    no_errors(at)
    sel = at.selectbox(key="init_from")
    assert sel.options == ["no: fresh weights", f"#{pid} · digits labels 0,1,2,3,4 · mlp · val acc 0.800"]
    assert plain not in sel.options and "freeze_epochs" not in {w.key for w in at.number_input}
    at.selectbox(key="init_from").set_value(pid).run()
    no_errors(at)
    assert at.selectbox(key="model").value == "mlp"  # the source run's model follows
    assert {"freeze_epochs", "finetune_lr_factor"} <= {w.key for w in at.number_input}
    assert not at.button(key="launch").disabled
    assert f"from run #{pid}" in texts(at.caption)
    at.selectbox(key="model").set_value("cnn").run()
    assert f"model: 'cnn' differs from run {pid}'s model 'mlp'" in texts(at.error)
    at.selectbox(key="model").set_value("mlp")
    at.number_input(key="epochs").set_value(2)
    at.number_input(key="freeze_epochs").set_value(3).run()
    assert "freeze_epochs: 3 is out of range; use 0 (never frozen) up to epochs (2)" in texts(at.error)


@pytest.mark.page
def test_live_view_shows_data_wait_vs_compute_and_a_verdict(store):
    b = fake_run(store, RunConfig(epochs=3), "baseline", rate=8000.0, wait=0.05)
    r = fake_run(store, RunConfig(epochs=3, data_prefetch=False), "run", rate=8000.0, wait=0.63)
    at = app()
    no_errors(at)
    specs = plotly_specs(at)
    assert {f"data_wait_{b}", f"data_wait_{r}"} <= set(specs)
    fig = specs[f"data_wait_{r}"]
    wait, compute = fig["data"][0], fig["data"][1]
    assert (wait["name"], compute["name"]) == ("waiting for data", "compute")
    assert fig["layout"]["yaxis"]["title"]["text"] == "time per execution (s)"
    assert fig["layout"]["xaxis"]["title"]["text"] == "batches run (steps)"
    dur = [d for d in store.frame("executions", r)["duration"][1:]]  # steady ones
    assert np.allclose(values(wait["y"]), [0.63 * d for d in dur])
    assert np.allclose(values(compute["y"]), [0.37 * d for d in dur])
    md = texts(at.markdown)
    assert ":red-badge[input-bound] 63% of step time waiting for data" in md
    assert ":green-badge[compute-bound] only 5% of step time waiting for data" in md


@pytest.mark.page
def test_live_view_notes_unmeasured_data_wait(store):
    fake_run(store, RunConfig(epochs=3), "baseline", rate=8000.0)
    r = fake_run(store, RunConfig(epochs=3, workers=2), "run", rate=8000.0)  # wait=None: NULL, as multi-worker
    at = app()
    no_errors(at)
    assert not [k for k in plotly_specs(at) if k.startswith("data_wait")]
    assert f"#{r} fp32 · 2 workers** · data wait vs compute: not measured for multi-worker runs" in texts(at.caption)


@pytest.mark.page
def test_the_train_page_says_before_launch_that_the_quick_benchmark_holds_the_machine(store_home):
    import time

    from engine.jobs import background

    background.write_json(store_home / background.BENCH_FILE,
                          {"state": "running", "pid": os.getpid(), "pid_started": _my_start(),
                           "started": time.time(), "done": 3, "total": 12})
    at = app()
    no_errors(at)
    assert ("Launch waits: the quick benchmark is running (3/12 cells): wait for it to end or cancel it "
            "on the Hardware page.") in texts(at.info)


@pytest.mark.page
def test_launch_is_refused_while_the_transfer_demo_runs(store_home):
    import time

    from engine.jobs import background
    from engine.jobs import demo as transfer

    background.write_json(transfer.demo_job_path(), {"state": "running", "pid": os.getpid(),
                                                     "pid_started": _my_start(), "started": time.time(),
                                                     "log": str(store_home / "demo.log")})
    at = app()
    at.button(key="launch").click().run()
    no_errors(at)
    assert "Not launched: the transfer demo is running" in texts(at.warning)
    assert Store().list_runs() == []


# --- Runs page -------------------------------------------------------------------

@pytest.mark.page
def test_runs_page_empty_store(store_home):
    at = app("views/runs/runs.py")
    no_errors(at)
    assert "No runs yet" in texts(at.info)


@pytest.mark.page
def test_runs_page_with_finished_runs(store):
    b, r = finished_pair(store)
    at = app("views/runs/runs.py")
    no_errors(at)
    table = at.dataframe[0].value
    assert list(table["id"]) == [r, b]
    assert "mixed bf16 · 2 devices (simulated)" in table["config"].iloc[0]
    specs = plotly_specs(at)
    assert {"overlay_throughput", "overlay_loss", "speedup_bars", "scaling"} <= set(specs)
    bars = specs["speedup_bars"]["data"][0]
    # Time to 0.7 val accuracy by default: the 2nd stored epoch's t of each run.
    tta = store.metrics("epochs", b)[1]["t"] / store.metrics("epochs", r)[1]["t"]
    assert [round(x, 3) for x in values(bars["x"])] == [1.0, round(tta, 3)]
    assert specs["speedup_bars"]["layout"]["xaxis"]["title"]["text"] == "speedup (×, time to accuracy)"
    scaling = specs["scaling"]["data"]
    steady = [t for t in scaling if "simulated" in (t.get("name") or "")][0]
    assert [round(y, 3) for y in values(steady["y"])] == [1.5]  # scaling: the steady speedup
    sim = [t for t in scaling if "simulated" in (t.get("name") or "")]
    assert sim and values(sim[0]["x"]) == [2] and sim[0]["marker"]["symbol"] == "circle-open"
    labels = [d.label for d in at.get("download_button")]
    assert "Table (CSV)" in labels and "executions (CSV)" in labels
    # Filters narrow the table.
    at.multiselect(key="filter_precision").set_value(["float32"]).run()
    assert list(at.dataframe[0].value["id"]) == [b]


@pytest.mark.page
def test_runs_page_scaling_labels_multi_worker_runs(store):
    b = fake_run(store, RunConfig(epochs=3), "baseline", rate=8000.0)
    r = fake_run(store, RunConfig(epochs=3, workers=2), "run", rate=7000.0)
    for i in range(2):
        store.set_worker(r, i, "completed", host="hostA")
    at = app("views/runs/runs.py")
    no_errors(at)
    scaling = plotly_specs(at)["scaling"]
    mw = [t for t in scaling["data"] if "2 workers" in (t.get("name") or "")]
    assert mw and values(mw[0]["x"]) == [2]  # replicas = 1 device x 2 workers
    assert mw[0]["text"][0] == "2 workers × 1 device (one host)"
    assert mw[0]["marker"]["symbol"] == "square-open"  # one host: the workers share its cores
    assert scaling["layout"]["xaxis"]["title"]["text"] == "replicas (devices × workers)"
    assert b


@pytest.mark.page
def test_runs_page_deletes_finished_runs_but_not_active_ones(store):
    b, r = finished_pair(store)
    q = fake_run(store, RunConfig(epochs=2), "run", group="g2", status="queued")
    at = app("views/runs/runs.py")
    at.multiselect(key="delete_ids").set_value([q, r]).run()  # a new pick unticks "sure"
    at.checkbox(key="delete_sure").check().run()
    at.button(key="delete").click().run()
    no_errors(at)
    assert f"#{q} are still active" in texts(at.error)
    assert {x["id"] for x in store.list_runs()} == {b, r, q}
    at.multiselect(key="delete_ids").set_value([r]).run()
    at.checkbox(key="delete_sure").check().run()
    at.button(key="delete").click().run()
    no_errors(at)
    assert f"Moved 1 run to the trash: #{r}. Restore them under Trash below." in texts(at.success)
    assert {x["id"] for x in store.list_runs()} == {b, q}
    assert [t["id"] for t in store.trashed_runs()] == [r]
    assert not store.frame("executions", r).empty  # kept until the trash is emptied


@pytest.mark.page
def test_runs_page_delete_clears_the_deleted_runs_from_every_picker(store):
    b, r = finished_pair(store)
    x = fake_run(store, RunConfig(epochs=3, steps_per_execution=4), "run", group="g2")
    at = app("views/runs/runs.py")
    at.multiselect(key="overlay").set_value([b, r, x])
    at.multiselect(key="bundle_ids").set_value([b, x])
    at.multiselect(key="delete_ids").set_value([x]).run()
    at.selectbox(key="export_run").set_value(x)
    at.checkbox(key="delete_sure").check().run()
    at.button(key="delete").click().run()
    no_errors(at)
    assert f"Moved 1 run to the trash: #{x}. Restore them under Trash below." in texts(at.success)
    assert at.selectbox(key="export_run").value == r  # the newest run left, not the deleted one
    # Set (not dropped): the browser shows what the server uses.
    assert at.multiselect(key="overlay").value == [b, r]
    assert at.multiselect(key="bundle_ids").value == [b]
    assert at.multiselect(key="delete_ids").value == []
    assert at.checkbox(key="delete_sure").value is False
    assert x not in at.multiselect(key="delete_ids").options and x not in at.selectbox(key="export_run").options
    assert "Export 1 run (.zip)" in [d.label for d in at.get("download_button")]


@pytest.mark.page
def test_runs_page_baseline_that_missed_the_target_gets_no_bar(store):
    cfg = RunConfig(epochs=3, target_accuracy=0.95)
    b = fake_run(store, cfg, "baseline", rate=8000.0, val_acc=[0.6, 0.8, 0.9])
    r = fake_run(store, cfg.replace(precision="mixed_bfloat16"), "run", rate=10_000.0, val_acc=[0.7, 0.96, 0.97])
    at = app("views/runs/runs.py")
    no_errors(at)
    specs = plotly_specs(at)
    # Neither a "1.00x" for a baseline that never got there nor a bar for the run measured against it.
    assert not specs["speedup_bars"]["data"]
    assert "no speedup to draw" in specs["speedup_bars"]["layout"]["annotations"][0]["text"]
    assert (f"No bar: #{b} baseline fp32: not reached in 3 epochs; "
            f"#{r} mixed bf16: baseline not reached in 3 epochs") in texts(at.caption)
    assert specs["scaling"]["layout"]["yaxis"]["title"]["text"] == "steady speedup vs baseline (×)"
    assert r


def demo_pair(store: Store) -> tuple[int, int, int]:
    """The stored outcome of `python -m engine demo-transfer`, written directly:
    pretraining (digits 0-4), then fine-tuned and from-scratch runs on 5-9."""
    from engine.jobs import demo as transfer

    cfgs = transfer.demo_configs(epochs=4, pretrain_epochs=3)
    pid = fake_run(store, cfgs["pretrain"], group="pre")
    fid = fake_run(store, cfgs["finetune"].replace(init_from=pid), group="demo", ttt=3.36,
                   val_acc=[0.29, 0.9, 0.96, 0.978], wait=0.02)
    sid = fake_run(store, cfgs["scratch"], group="demo", ttt=1.75, val_acc=[0.85, 0.96, 0.98, 0.994], wait=0.02)
    return pid, fid, sid


@pytest.mark.page
def test_runs_page_transfer_section_draws_the_demo_pair(store):
    pid, fid, sid = demo_pair(store)
    at = app("views/runs/runs.py")
    no_errors(at)
    spec = plotly_specs(at)["transfer_curves"]
    curves = {t["name"]: t for t in spec["data"] if t.get("mode") == "lines+markers"}
    assert set(curves) == {f"run #{fid}: fine-tuned from run #{pid}", f"run #{sid}: from scratch"}
    assert values(curves[f"run #{fid}: fine-tuned from run #{pid}"]["y"]) == [0.29, 0.9, 0.96, 0.978]
    assert curves[f"run #{sid}: from scratch"]["line"]["color"] == charts_mod().run_color(sid)
    stars = [t for t in spec["data"] if (t.get("marker") or {}).get("symbol") == "star"]
    assert sorted(values(t["x"])[0] for t in stars) == [1.75, 3.36]
    assert any(s.get("y0") == 0.95 and s.get("y1") == 0.95 for s in spec["layout"]["shapes"])  # the target
    assert spec["layout"]["xaxis"]["title"]["text"] == "wall time since training start (s)"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics[f"Fine-tuned (run #{fid})"] == "3.36 s" and metrics[f"From scratch (run #{sid})"] == "1.75 s"
    assert "**Time to 0.95 validation accuracy**" in texts(at.markdown)
    assert "**Training from scratch reached 0.95 1.92× sooner.**" in texts(at.markdown)
    assert at.button(key="demo_start")


@pytest.mark.page
def test_train_page_with_the_demo_runs_as_newest_group(store):
    """The fine-tuned run's like-for-like baseline is the from-scratch run (a baseline
    trains from scratch): both are drawn, each once, with no error."""
    pid, fid, sid = demo_pair(store)
    at = app()
    no_errors(at)
    specs = plotly_specs(at)
    assert "throughput" in specs
    assert sorted(k for k in specs if k.startswith("data_wait")) == sorted([f"data_wait_{fid}", f"data_wait_{sid}"])
    assert f"#{fid} fp32 · from #{pid}**: completed" in texts(at.markdown)


@pytest.mark.page
def test_runs_page_transfer_empty_state_and_the_demo_button_refuses_while_busy(store):
    b = fake_run(store, RunConfig(epochs=2))
    at = app("views/runs/runs.py")
    no_errors(at)
    assert "No transfer demo yet. Run `python -m engine demo-transfer`" in texts(at.info)
    assert "transfer_curves" not in plotly_specs(at)
    q = fake_run(store, RunConfig(epochs=2), group="g2", status="queued")
    at.button(key="demo_start").click().run()
    no_errors(at)
    assert f"not started: run #{q} is queued" in texts(at.warning)
    assert [r["id"] for r in store.list_runs()] == [q, b]  # nothing else was queued
    store.finish_run(q, "cancelled")


def charts_mod():
    from engine.report import chart_style

    return chart_style


# --- no TensorFlow in the app process ----------------------------------------------

@pytest.mark.worker
def test_pages_never_import_tensorflow(store_home):
    """Import every page module, then render every page on a filled store, in a
    fresh interpreter: neither may pull in TensorFlow or Keras."""
    pages = re.findall(r'st\.Page\("([^"]+)"', (ROOT / "app.py").read_text())  # app.py's PAGES
    assert "views/train/train.py" in pages and "views/replay.py" in pages, pages
    script = textwrap.dedent(f"""
        import importlib.util, sys
        sys.path.insert(0, {str(ROOT)!r})
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from pathlib import Path
        pages = {pages!r}
        for path in sorted(Path({str(ROOT)!r}, "views").rglob("*.py")):
            name = ".".join(path.relative_to({str(ROOT)!r}).with_suffix("").parts)
            importlib.import_module(name.removesuffix(".__init__"))
        from engine.store import SYSTEM_COLS, Store
        from test_pages import finished_pair, app, demo_pair
        finished_pair(Store())
        demo_pair(Store())
        for page in [None] + pages:
            at = app(page)
            assert not at.exception, (page, [e.value for e in at.exception])
        bad = [m for m in ("tensorflow", "keras") if m in sys.modules]
        assert not bad, bad
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                         timeout=180, env={**os.environ, "SPEEDLAB_HOME": str(store_home)})
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


@pytest.mark.worker
def test_after_launch_the_previous_speedup_is_gone(store):
    b, r = finished_pair(store)
    at = app()
    assert {m.label: m.value for m in at.metric}["Steady"] == "1.50×"  # the previous comparison
    at.selectbox(key="model").set_value("mlp")
    at.selectbox(key="precision").set_value("mixed_bfloat16")
    at.number_input(key="epochs").set_value(2).run()
    at.button(key="launch").click().run()
    try:
        no_errors(at)
        assert f"(first: baseline #{r + 1}, run #{r + 2})" in texts(at.success)
        metrics = {m.label: m.value for m in at.metric}
        # The new comparison measures: the page is quiet (no run metrics), never the old 1.50×.
        assert "Steady" not in metrics and "1.50×" not in metrics.values()
        assert "Quiet while measuring" in texts(at.caption)
        assert f"#{r + 1}" in texts(at.markdown)  # the page follows the new runs
    finally:
        runner.cancel_active()
        for rid in (r + 1, r + 2):
            runner.wait(rid, timeout_s=120)
