"""The Train page's settings under AppTest: validation before launch, devices and workers,
schedules, the LR finder, uploads, data set choices and starting from a saved run."""
from __future__ import annotations

import hashlib
import re
import time
import zipfile

import numpy as np
import pytest

from tests.helpers.hints import option_hint

from engine.base import plain
from engine.data import meta as datasets_meta
from engine.config import ConfigError, RunConfig
from engine.config.preflight import check_runnable
from tests.helpers.pages import (app, fake_run, lr_sweep, no_errors, npz_bytes, plotly_specs, registry, texts)
from tests.helpers.probe_cache import plant_probe
from tests.helpers.waiting import wait_for


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
@pytest.mark.parametrize("live_flags", [{"avx512_bf16", "avx512f"}, {"avx2", "fma"}], ids=["bf16", "no-bf16"])
def test_hardware_hint_from_the_cached_check(store_home, fake_cpu, live_flags):
    """The cached probe's hint stays beside precision whatever the live CPU says; where the
    live CPU lacks native bf16 its warning shows too (issue 52: it used to replace the hint)."""
    fake_cpu(live_flags)
    facts = {"gpus": [], "host": {"cpu_flags": ["avx512_bf16"]}, "tpu": {"cores": 0}}
    plant_probe(facts)
    at = app()
    at.selectbox(key="precision").set_value("mixed_bfloat16").run()
    no_errors(at)
    assert option_hint(facts, "mixed_bfloat16") in texts(at.caption)
    live_warning = ("mixed_bfloat16 on a CPU without native bf16 instructions (avx512_bf16/amx_bf16): "
                    "expect it to be slower than float32")
    assert (live_warning in texts(at.warning)) == ("avx512_bf16" not in live_flags)
    assert not at.button(key="launch").disabled


@pytest.mark.page
def test_hardware_link_when_no_check_is_cached_and_verdicts_when_it_is(store_home):
    at = app()
    no_errors(at)
    link = at.get("page_link")
    assert link and link[0].proto.label == "Run the hardware check" and link[0].proto.page == "hardware"
    facts = {"gpus": [], "host": {"cpu_flags": ["avx512_bf16"]}, "tpu": {"cores": 0}}
    plant_probe(facts)
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

    from engine.lr_find import range_test as lr_find

    at = app()
    at.selectbox(key="model").set_value("mlp").run()
    t0 = time.monotonic()
    at.button(key="lr_find_start").click().run()
    assert time.monotonic() - t0 < 5  # started, not waited for
    no_errors(at)
    try:
        from engine.jobs.background import ACTIVE_STATES

        # 'starting' until the detached process has patched its pid in (background.start_job).
        assert lr_find.read_progress()["state"] in ACTIVE_STATES
        assert "Sweeping the LR" in at.get("progress")[0].proto.text
        assert at.button(key="lr_find_cancel")
        wait_for(lambda: lr_find.read_progress()["state"] not in ACTIVE_STATES, 120, "the LR sweep to end", 0.1)
    finally:
        lr_find.cancel_background()
    assert lr_find.read_progress()["state"] == "done", lr_find.read_progress()
    at = app()
    at.selectbox(key="model").set_value("mlp").run()
    no_errors(at)
    assert "lr_find_chart" in plotly_specs(at) and at.button(key="lr_find_use")


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
    name = "stripes-" + hashlib.sha256(good).hexdigest()[:12]  # named by its content, as model uploads
    assert registry(store_home) == [name]
    sel = at.selectbox(key="dataset")
    assert f"user:{name}" in sel.options and sel.value == f"user:{name}"
    assert f"Registered **user:{name}**: 200 images of 6x5x1, 4 classes" in texts(at.success)
    assert "200 images of 6x5x1, 4 classes" in texts(at.caption)  # the selected data set described
    assert not at.button(key="launch").disabled  # a valid config on the new data
    assert not at.file_uploader[0].value  # emptied for the next upload
    # The same file again: the data set kept before, nothing new.
    at.file_uploader[0].upload("stripes.npz", good, "application/octet-stream")
    at.text_input(key="upload_name").input("stripes").run()  # the browser reruns after an upload
    at.button(key="upload_register").click().run()
    no_errors(at)
    assert registry(store_home) == [name]
    # Another file of the same name: kept beside it, never in its place.
    other = npz_bytes(x_train=rng.integers(0, 256, (200, 6, 5), dtype=np.uint8), y_train=np.repeat(np.arange(4), 50))
    at.file_uploader[0].upload("stripes.npz", other, "application/octet-stream")
    at.text_input(key="upload_name").input("stripes").run()
    at.button(key="upload_register").click().run()
    no_errors(at)
    second = "stripes-" + hashlib.sha256(other).hexdigest()[:12]
    assert registry(store_home) == sorted([name, second]) and at.selectbox(key="dataset").value == f"user:{second}"


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


def test_a_number_input_shows_every_digit_of_its_value():
    """Issue 57 item 9: a fixed "%.2f" showed a target of 0.965 as "0.96", "%.5f" a learning
    rate of 1e-7 as "0.00000"."""
    from views.components.common import number_format

    assert number_format(0.965, 0.01) % 0.965 == "0.965"
    assert number_format(1e-7, 1e-4) % 1e-7 == "0.0000001"
    assert number_format(None, 0.01) == "%.2f"                             # empty: the step's decimals
    assert number_format(0.15000000000000002, 0.05) % 0.15000000000000002 == "0.15"  # float noise is no digit
    assert number_format(12345.678, 0.5) % 12345.678 == "12345.7"          # 6 significant digits
    assert number_format(25.0, 5.0) % 25.0 == "25"


@pytest.mark.page
def test_the_sidebar_shows_a_target_and_a_learning_rate_in_full(store_home):
    at = app()
    assert at.number_input(key="learning_rate").proto.format == "%.4f"    # the default 1e-3 at step 1e-4
    at.number_input(key="target_accuracy").set_value(0.965)
    at.number_input(key="learning_rate").set_value(1e-7).run()
    no_errors(at)
    assert at.number_input(key="target_accuracy").proto.format == "%.3f"
    assert at.number_input(key="learning_rate").proto.format == "%.7f"
    assert at.number_input(key="learning_rate").value == 1e-7              # the value kept, not reset
