"""Issue 43: the pages tell the numbers' story. A stored baseline is used only when the user
asked for it (a plain run is never shown against one)."""
import pytest

from engine.config import RunConfig
from tests.helpers.pages import app, fake_run

pytestmark = pytest.mark.page  # lane: docs/testing.md


def _texts(at) -> str:
    return " ".join(str(getattr(e, "value", "") or getattr(e, "body", "") or "")
                    for kind in ("markdown", "warning", "caption", "metric", "info", "success")
                    for e in at.get(kind))


def test_a_plain_run_is_not_shown_against_a_stored_baseline(store):
    cfg = RunConfig(dataset="digits", precision="mixed_bfloat16", epochs=3)
    fake_run(store, RunConfig(dataset="digits", epochs=3), role="baseline", group="g1", rate=8_000.0, ttt=3.0)
    rid = fake_run(store, cfg, role="run", group="g2", rate=12_000.0, ttt=2.0)  # `engine run`, no --baseline
    from views.train.live import current_comparison

    group, base, run = current_comparison(store)
    assert run["id"] == rid and base is None
    at = app()
    text = _texts(at)
    assert "Stored baseline" not in text and "faster" not in text and not at.exception


def test_a_run_launched_against_a_stored_baseline_keeps_it(store):
    b = fake_run(store, RunConfig(dataset="digits", epochs=3), role="baseline", group="g1", rate=8_000.0, ttt=3.0)
    rid = store.create_run(RunConfig(dataset="digits", precision="mixed_bfloat16", epochs=3).to_json(),
                           role="run", group_id="g2", status="queued")
    store.conn.execute("UPDATE runs SET baseline_id=? WHERE id=?", (b, rid))  # as runner.submit stores it
    store.conn.commit()
    from views.train.live import current_comparison

    _, base, run = current_comparison(store)
    assert run["id"] == rid and base["id"] == b


def test_the_train_page_offers_the_data_sets_presets_and_a_click_fills_the_settings(store_home):
    from engine.config import presets

    at = app()
    at.selectbox(key="dataset").set_value("mnist5k").run()
    names = [b.label for b in at.button if b.key and b.key.startswith("preset_mnist5k_")]
    assert names == ["Baseline", "Tuned baseline", "Hand-made preset", "Autopilot winner"]
    assert at.button(key="preset_mnist5k_1").disabled                    # no tuned baseline stored yet
    at.button(key="preset_mnist5k_3").click().run()                      # the autopilot's recorded winner
    want = presets.AUTOPILOT_WINNERS["mnist5k"][0]
    assert at.selectbox(key="precision").value == "mixed_bfloat16"
    assert at.number_input(key="steps_per_execution").value == want["steps_per_execution"] == 8
    assert at.number_input(key="epochs").value == 3 and at.selectbox(key="schedule").value == "one_cycle"
    at.button(key="preset_mnist5k_0").click().run()                      # back to the baseline: defaults again
    assert at.selectbox(key="precision").value == "float32"
    assert at.number_input(key="steps_per_execution").value == 1 and at.number_input(key="epochs").value == 10
    assert at.selectbox(key="dataset").value == "mnist5k" and not at.exception


def test_a_tune_baseline_sweep_shows_as_the_sweeps_current_run_not_as_launched_here(store):
    """engine.autopilot.tune's runs (group tune-<hex>, role baseline) are the sweep's: the live
    view follows its running run alone, with no baseline, and one line says whose it is."""
    from engine.autopilot import tune
    from views.train.live import current_comparison

    base = RunConfig(dataset="digits", epochs=3, stop_at_target=True)
    done = fake_run(store, tune.config_for(base, "constant", 0.002, 0.0).replace(seed=900000), role="baseline",
                    group="tune-0a1b2c3d", ttt=2.0)
    now = fake_run(store, tune.config_for(base, "warmup_cosine", 0.004, 0.1).replace(seed=900000),
                   role="baseline", group="tune-0a1b2c3d", status="running")
    fake_run(store, tune.config_for(base, "one_cycle", 0.008, 0.0).replace(seed=900000), role="baseline",
             group="tune-0a1b2c3d", status="queued")
    group, b, run = current_comparison(store)
    assert [r["id"] for r in group] == [now] and b is None and run["id"] == now and done < now
    at = app()
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert (f"Run #{now} of the tune-baseline sweep tune-0a1b2c3d (python -m engine tune-baseline, not launched "
            "here): warmup_cosine, peak learning rate 0.004, label smoothing 0.1, seed 900000; 3 of its runs "
            "queued so far, 1 ended (all on the Runs page)") in captions
    # Not the plain-run advice to launch with a baseline: a sweep's run is a candidate baseline.
    assert not any(c.startswith("No baseline for this run") for c in captions)
    assert any(c.startswith("A run of the tune-baseline sweep: it is a candidate baseline") for c in captions)


def test_a_flops_count_xla_contradicts_shows_mfu_missing_with_the_reason(store):
    # A user's model's run whose layer count was more than 10% from XLA's (engine.training.build
    # .flops_plan): no FLOPs were kept, so no MFU, and the page says why.
    rid = fake_run(store, RunConfig(dataset="digits", epochs=3), rate=12_000.0)
    note = ("MFU not shown: the layer count (72,455,424 FLOPs/sample) and XLA's count of the step (14,794,527) "
            "differ by 390%, over 10%")
    run = store.get_run(rid)
    store.update_run(rid, plan={**run["plan"], "flops_per_sample": None, "flops_note": note})
    at = app()
    assert not at.exception
    assert f":material/speed: MFU -: {note}" in [c.value for c in at.caption]
