"""The Runs page under AppTest: the table, scaling labels, deleting runs, the transfer section."""
from __future__ import annotations


import re

import pytest


from engine.config import RunConfig
from tests.helpers.pages import (app, charts_mod, demo_pair, fake_run, finished_pair, no_errors, plotly_specs, texts, values)


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
    assert any(re.fullmatch(r"This page's \d+ runs \(CSV\)", x) for x in labels) and "executions (CSV)" in labels
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


@pytest.mark.page
def test_the_runs_table_and_its_csv_have_the_schedule_peak_lr_and_label_smoothing(store):
    from engine.autopilot import tune

    base = RunConfig(dataset="digits", epochs=3, stop_at_target=True)
    one = fake_run(store, tune.config_for(base, "one_cycle", 0.008, 0.1).replace(seed=900001), role="baseline",
                   group="tune-0a1b2c3d")
    plain = fake_run(store, RunConfig(dataset="digits", epochs=3), role="baseline")
    at = app("views/runs/runs.py")
    no_errors(at)
    df = at.dataframe[0].value.set_index("id")  # the frame the CSV download writes (csv_safe.to_csv of it)
    assert list(df.loc[one, ["schedule", "learning_rate", "label_smoothing"]]) == ["one_cycle", 0.008, 0.1]
    assert list(df.loc[plain, ["schedule", "learning_rate", "label_smoothing"]]) == ["constant", 0.001, 0.0]
    at.get("button_group")[0].set_value(["schedule", "learning_rate", "label_smoothing"]).run()
    assert at.dataframe[0].proto.column_order[-3:] == ["schedule", "learning_rate", "label_smoothing"]


@pytest.mark.page
def test_runs_page_defaults_pick_runs_of_one_data_set_and_model_never_a_queued_one(store):
    digits = RunConfig(epochs=3, target_accuracy=0.7)
    b = fake_run(store, digits, "baseline", group="g1", rate=8000.0, ttt=2.0)
    r = fake_run(store, digits.replace(precision="mixed_bfloat16"), "run", group="g1", rate=12_000.0, ttt=1.0)
    sweep = fake_run(store, RunConfig(dataset="mnist5k", epochs=2), "baseline", group="sweep-1", rate=900.0)
    q = fake_run(store, digits, "run", group="g3", status="queued")
    at = app("views/runs/runs.py")
    no_errors(at)
    # The newest baseline is the mnist5k sweep run; the digits runs are read against the digits baseline.
    assert at.selectbox(key="speedup_baseline").value == b
    bars = plotly_specs(at)["speedup_bars"]["data"][0]
    tta = store.metrics("epochs", b)[1]["t"] / store.metrics("epochs", r)[1]["t"]  # to 0.7, the 2nd epoch
    assert [round(x, 3) for x in values(bars["x"])] == [1.0, round(tta, 3)]
    assert "Left out: 1 finished run(s) of another data set, model or script than the baseline" in texts(at.caption)
    # Overlay and Run metrics start from the newest started run (the sweep's), never the queued group.
    assert at.multiselect(key="overlay").value == [sweep]
    assert at.selectbox(key="export_run").value == sweep
    store.finish_run(q, "cancelled")
    assert r


@pytest.mark.page
def test_runs_page_speedup_says_there_is_no_baseline_of_the_same_data_set(store):
    fake_run(store, RunConfig(epochs=3), "run", group="g1")
    fake_run(store, RunConfig(dataset="mnist5k", epochs=2), "baseline", group="sweep-1", rate=900.0)
    at = app("views/runs/runs.py")
    no_errors(at)
    assert at.selectbox(key="speedup_baseline").value is None
    assert "speedup_bars" not in plotly_specs(at)
    assert ("No finished baseline with another finished run of its data set and model in the table: pick one "
            "above, or launch a comparison on the Train page.") in texts(at.caption)


def test_script_runs_are_one_subject_per_script():
    """A script run's data set and model are placeholders (synthetic, cnn): the speedup bars put
    keras-io's IMDB transformer beside an MNIST convnet baseline. Its script decides."""
    from views.runs.compare import subject

    def run(script=None):
        return {"config": {"dataset": "synthetic", "model": "cnn"},
                "plan": {"source": "callback", "script": script} if script else None}

    assert subject(run()) == ("synthetic", "cnn")
    assert subject(run("mnist_convnet.py")) == ("script run", "mnist_convnet.py") != subject(run("text_transformer.py"))


def test_the_runs_table_and_its_csv_carry_what_reproduces_a_run(store):
    """A new user's CSV had the configuration in words but no seed, optimizer, backend, group or
    machine: nothing to rerun it from, nor to tell which hardware a row came from."""
    from engine.base import csv_safe
    from engine.report.table import runs_frame

    rid = fake_run(store, RunConfig(model="mlp", optimizer="sgd", seed=7, backend="jax"), group="cmp-3")
    store.update_run(rid, environment={"hostname": "vm", "fingerprint": {"id": "fedcba987654", "name": "Zen 4 box"}})
    row = runs_frame(store).iloc[0]
    assert (row["backend"], row["optimizer"], row["seed"], row["group"]) == ("jax", "sgd", 7, "cmp-3")
    assert (row["machine"], row["machine_id"]) == ("Zen 4 box", "fedcba987654")
    header = [h.strip("\"") for h in csv_safe.to_csv(runs_frame(store)).splitlines()[0].split(",")]
    assert {"backend", "optimizer", "seed", "group", "machine", "machine_id"} <= set(header)
