"""The Hardware page under streamlit.testing.v1.AppTest: the probe's cards and
verdicts (from fixed facts, never a real probe), the GPU diagnosis, the quick
benchmark's progress, result, and 'Use this configuration' on the Train page."""
from __future__ import annotations

import os
import time

import psutil
import pytest

from engine.base import plain
from engine.jobs import background
from engine.bench import quick as bench
from engine.hardware import verdicts as hardware
from engine.config import RunConfig
from tests.helpers.pages import app, no_errors, plotly_specs, texts, values
from tests.helpers.probe_cache import plant_probe

pytestmark = pytest.mark.page  # lane: docs/testing.md

PAGE = "views/hardware/hardware.py"


def facts(gpus=(), flags=("avx512_bf16", "avx512f"), driver=None, cuda_build=True):
    """Probe facts in engine.hardware.probe's layout; `gpus` is [(name, (major, minor), MiB)]."""
    rows = [{"name": n, "compute_capability": list(cc), "memory_mib": mib} for n, cc, mib in gpus]
    return {
        "hostname": "testhost", "probed_at": 1_700_000_000.0, "probe_seconds": 3.2,
        "host": {"cpu_model": "Test EPYC", "physical_cores": 4, "logical_cores": 8,
                 "cpu_flags": list(flags), "ram_gib": 16.0, "os": "Linux", "arch": "x86_64"},
        "software": {"python": "3.11.7", "tensorflow": "2.21.0", "keras": "3.15.1"},
        "build": {"is_cuda_build": cuda_build, "cuda_version": "12.5.1", "cudnn_version": "9"},
        "gpus": rows,
        "driver": {"gpus": [g["name"] for g in rows] if driver is None else driver, "version": None},
        "tpu": {"hint": False, "cores": 0, "error": None}, "errors": [],
    }


def cache(store_home, f: dict) -> None:
    """Pre-write the probe cache for this machine, as `python -m engine hardware` would."""
    plant_probe(f)


def saved_result() -> dict:
    """A quick-benchmark result through engine.bench.quick.summarize (2 repeats), saved."""
    cells = bench.plan_matrix({"gpus": 0, "tpu": False, "cpu_bf16": True})  # 8 cells, cells[0] baseline
    rates = {0: 1000.0, 1: 900.0, 2: 1500.0, 3: 800.0, 4: 1400.0, 5: 700.0, 6: 2200.0, 7: 1100.0}
    samples = [{"cell": i, "repeat": r, "samples_per_sec": rates[i] * (1.0 + 0.1 * r), "warmup_sec": 1.0}
               for r in range(2) for i in range(len(cells))]
    result = bench.summarize(cells, samples)
    result.update(workload=bench.QUICK, machine={"gpus": 0}, wall_sec=70.0, repeats=2)
    bench.save(result)
    return result


def test_renders_on_an_empty_store_without_a_cached_probe(store_home, monkeypatch):
    """No cache yet: the page probes once (here a stand-in for the child process)
    and shows the cards, the verdicts and how to start the benchmark."""
    calls = []
    monkeypatch.setattr(hardware, "run_probe", lambda timeout_s=60: calls.append(1) or facts())
    at = app(PAGE)
    no_errors(at)
    assert calls == [1]
    md = texts(at.markdown)
    assert "**:material/memory: Host CPU**" in md and "Test EPYC" in md
    assert ":green-badge[avx512_bf16]" in md and ":gray-badge[avx512f]" in md
    assert "none visible to TensorFlow" in md
    assert "TensorFlow 2.21.0 (CUDA 12.5.1, cuDNN 9 build)" in texts(at.caption)
    table = next(m.value for m in at.markdown if m.value.startswith("| Option"))
    assert "| Mixed precision bfloat16 | :green-badge[:material/trending_up: faster] |" in table
    assert "| Mixed precision float16 | :red-badge[:material/trending_down: slower] |" in table
    assert ":orange-badge[:material/straighten: measure]" in table  # XLA on a CPU
    assert "No benchmark yet: press **Run quick benchmark**" in texts(at.info)
    assert not at.button(key="bench_start").disabled
    assert not plotly_specs(at)
    at.run()  # the probe is cached now: no second probe on a rerun
    assert calls == [1] and hardware.cached_facts()["hostname"] == "testhost"


def test_failed_probe_is_one_line(store_home, monkeypatch):
    def fail(timeout_s=60):
        raise hardware.ProbeError("hardware probe failed (exit code 1); stderr tail:\nTraceback (most "
                                  "recent call last):\n  File ...\nImportError: libcuda")

    monkeypatch.setattr(hardware, "run_probe", fail)
    at = app(PAGE)
    assert not at.exception
    err = texts(at.error)
    assert "The hardware check failed: hardware probe failed (exit code 1); stderr tail:." in err
    assert "Traceback" not in err and "\n" not in err
    assert at.button(key="bench_start")  # the benchmark section still renders


def test_gpu_cards_verdicts_per_device_and_diagnosis(store_home):
    cache(store_home, facts(gpus=[("NVIDIA A100-SXM4-40GB", (8, 0), 40960), ("Tesla T4", (7, 5), 15360)]))
    at = app(PAGE)
    no_errors(at)
    md = texts(at.markdown)
    assert "**:material/developer_board: GPU 0**" in md and "NVIDIA A100-SXM4-40GB" in md
    assert "Tesla T4" in md and "compute capability 7.5 · 15 GiB memory" in texts(at.caption)
    assert ":green-badge[bfloat16 Tensor Cores: yes]" in md and ":gray-badge[bfloat16 Tensor Cores: no]" in md
    table = next(m.value for m in at.markdown if m.value.startswith("| Option"))
    assert "2 physical GPUs" in table  # several devices: faster
    at.segmented_control(key="hw_device").set_value("cpu").run()
    table = next(m.value for m in at.markdown if m.value.startswith("| Option"))
    assert "this CPU has native bf16 (avx512_bf16): expect faster" in table
    # The driver sees a GPU that TensorFlow does not: the diagnosis box with the fix.
    broken = facts(driver=["Tesla T4"], cuda_build=False)
    cache(store_home, broken)
    at = app(PAGE)
    assert plain.md(hardware.gpu_diagnosis(broken)) in texts(at.error)  # it names the driver's GPUs: plain text
    assert "The driver shows Tesla T4" in texts(at.caption)


def test_saved_benchmark_shows_chart_table_and_best(store_home):
    cache(store_home, facts())
    res = saved_result()
    at = app(PAGE)
    no_errors(at)
    spec = plotly_specs(at)["bench_chart"]
    by = {t["name"]: t for t in spec["data"]}
    assert values(by["baseline (fp32, spe 1, XLA off)"]["y"]) == [1.0]
    best = res["best"]
    assert (best["precision"], best["steps_per_execution"], best["jit_compile"]) == ("mixed_bfloat16", 8, False)
    assert f"best: mixed bf16 · spe 8 · XLA off · 1 device ({best['speedup']:.2f}×)" in by
    assert spec["layout"]["yaxis"]["title"]["text"] == "speedup vs float32 baseline (×)"
    table = at.dataframe[0].value
    assert len(table) == 8 and list(table["best"]).count("★ best") == 1
    assert table.loc[table["best"] == "★ best", "speedup"].iloc[0] == pytest.approx(best["speedup"])
    assert {m.label: m.value for m in at.metric}["Best configuration"] == f"{best['speedup']:.2f}×"
    assert at.selectbox(key="bench_pick").value == 6  # the best cell is preselected
    assert "repeats differ" not in texts(at.warning)  # baseline 1,000 and 1,100 samples/s: 1.1x, quiet enough


def test_a_busy_baseline_is_cautioned_above_the_result(store_home):
    cache(store_home, facts())
    cells = bench.plan_matrix({"gpus": 0, "tpu": False, "cpu_bf16": True})
    # The baseline's repeats as a new user saw them on a busy machine; every cell moves with it.
    base = [1680.0, 3017.0]
    rates = {0: 1.0, 1: 0.9, 2: 1.5, 3: 0.8, 4: 1.4, 5: 0.7, 6: 1.52, 7: 1.1}
    samples = [{"cell": i, "repeat": r, "samples_per_sec": base[r] * rates[i], "warmup_sec": 1.0}
               for r in range(2) for i in range(len(cells))]
    result = bench.summarize(cells, samples)
    result.update(workload=bench.QUICK, machine={"gpus": 0}, wall_sec=70.0, repeats=2)
    bench.save(result)
    at = app(PAGE)
    no_errors(at)
    assert texts(at.warning) == ("The baseline's own repeats differ 1.8x (1,680 to 3,017 samples/s): the machine "
                                 "was busy; speedups under ~1.8x are within that noise. Run it again on a quieter "
                                 "machine.")
    assert {m.label: m.value for m in at.metric}["Best configuration"] == "1.52×"  # still shown, cautioned


def test_use_this_configuration_fills_the_train_page(store_home):
    cache(store_home, facts())
    saved_result()
    at = app()  # the Train page first, with other speed options set by hand
    at.selectbox(key="precision").set_value("mixed_float16")
    at.toggle(key="jit_compile").set_value(True)
    at.number_input(key="epochs").set_value(3).run()
    at.switch_page(PAGE)
    at.run()
    at.button(key="bench_use").click().run()
    no_errors(at)
    assert "SpeedLab · Train" in at.markdown[0].value
    assert at.selectbox(key="precision").value == "mixed_bfloat16"
    assert at.number_input(key="steps_per_execution").value == 8
    assert at.toggle(key="jit_compile").value is False
    assert at.number_input(key="devices").value == 1
    assert at.number_input(key="epochs").value == 3  # the rest of the settings stay
    assert at.query_params["precision"] == "mixed_bfloat16"
    assert at.query_params["steps_per_execution"] == "8"


def test_use_this_configuration_fits_steps_per_execution_to_the_users_epoch(store_home):
    """A new user's steps: the digits preset (batch 256), then the benchmark's best cell (spe 8,
    measured on synthetic 16x16 at batch 64). digits at batch 256: 1,797 samples, ceil(0.2 x 1,797)
    = 360 held out, 1,437 to train, ceil(1,437 / 256) = 6 steps an epoch: spe 8 cannot launch."""
    cache(store_home, facts())
    saved_result()
    at = app()
    at.button(key="preset_digits_2").click().run()  # the hand-made preset: batch 256, spe 2
    assert (at.number_input(key="batch_size").value, at.selectbox(key="dataset").value) == (256, "digits")
    at.switch_page(PAGE)
    at.run()
    use = at.button(key="bench_use")
    assert use.help.startswith("Changes on the Train page: backend, precision, steps per execution, XLA and "
                               "devices (1 worker). Keeps your data, model, batch size, epochs and every other "
                               "setting. Measured on cnn on synthetic 16x16x3 at batch 64: ")
    use.click().run()
    no_errors(at)
    assert "SpeedLab · Train" in at.markdown[0].value
    assert at.number_input(key="steps_per_execution").value == 6  # clamped to one epoch
    assert at.selectbox(key="precision").value == "mixed_bfloat16"  # the rest of the cell as measured
    assert at.number_input(key="batch_size").value == 256 and at.selectbox(key="dataset").value == "digits"
    assert at.query_params["steps_per_execution"] == "6"
    assert "Launch is disabled" not in texts(at.error) and not at.button(key="launch").disabled
    assert texts(at.info).count("from the benchmark") == 1
    assert ("steps per execution 8 from the benchmark → 6: 8 is more than the 6 steps in one epoch "
            "(digits at batch 256)") in texts(at.info)
    at.switch_page("views/train/train.py")  # AppTest reruns the page it was told of, not the one switched to
    at.run()
    assert "from the benchmark" in texts(at.info)  # the note stays while the setting holds its value
    at.number_input(key="steps_per_execution").set_value(3).run()  # changed by hand: the note has done its job
    assert "SpeedLab · Train" in at.markdown[0].value and "from the benchmark" not in texts(at.info)
    at.button(key="preset_digits_2").click().run()  # another handoff: the note is gone for good
    at.number_input(key="steps_per_execution").set_value(6).run()
    assert "SpeedLab · Train" in at.markdown[0].value and "from the benchmark" not in texts(at.info)


def test_running_benchmark_shows_progress_and_blocks_a_second_start(store_home):
    cache(store_home, facts())
    me = psutil.Process()  # a live process stands in for the benchmark's
    background.write_json(bench.progress_path(), {
        "state": "running", "pid": os.getpid(), "pid_started": me.create_time(), "started": 1.0,
        "done": 5, "total": 16, "current": "mixed bf16 · spe 1 · XLA off · 1 device, repeat 1/2",
        "last": {"cell": "fp32 · spe 8 · XLA on · 1 device", "samples_per_sec": 2345.0}, "error": None,
        # The CLI's estimate from the samples so far (bench.estimate_left), written "now" (an hour
        # ahead, so that it has not counted down yet when the page reads it).
        "left_sec": 40.0, "left_written": time.time() + 3600})
    at = app(PAGE)
    no_errors(at)
    bar = at.get("progress")[0].proto
    assert bar.value == round(100 * 5 / 16) or abs(bar.value - 5 / 16) < 0.01
    assert "Cell 6 of 16: measuring mixed bf16 · spe 1 · XLA off · 1 device, repeat 1/2" in bar.text
    assert "about 40 s left" in bar.text
    assert "Last measured: fp32 · spe 8 · XLA on · 1 device: 2,345 samples/s" in texts(at.caption)
    assert at.button(key="bench_start").disabled and at.button(key="bench_cancel")
    job = background.read_json(bench.progress_path())
    background.write_json(bench.progress_path(), {**job, "done": 16, "current": None})
    at = app(PAGE)  # every cell measured: the process is saving, not starting another worker
    assert "Cell 16 of 16: finishing (summarising and saving the result)" in at.get("progress")[0].proto.text
    # The Train page refuses to launch meanwhile (both measurements would be spoilt).
    at.switch_page("views/train/train.py")
    at.run()
    at.button(key="launch").click().run()
    assert "Not launched: the quick benchmark is running (16/16 cells)" in texts(at.warning)
    from engine.store import Store

    s = Store()
    try:
        assert s.list_runs() == []
    finally:
        s.close()
    background.write_json(bench.progress_path(), {"state": "done", "pid": None, "started": 1.0})


def test_benchmark_refused_while_a_run_is_active_and_failures_shown(store):
    cache(store.path.parent, facts())
    rid = store.create_run(RunConfig().to_json(), status="queued")
    at = app(PAGE)
    at.button(key="bench_start").click().run()
    no_errors(at)
    assert f"not started: run #{rid} is queued" in texts(at.warning)
    assert bench.read_progress() is None
    store.finish_run(rid, "cancelled", "test")
    # A failed benchmark (newer than any result) says why in one line.
    background.write_json(bench.progress_path(), {"state": "failed", "pid": None, "started": 1.0,
                                                  "finished": 2.0, "error": "benchmark worker exited "
                                                  "with code 1: ResourceExhaustedError: OOM"})
    at = app(PAGE)
    assert ("The last benchmark failed: benchmark worker exited with code 1: ResourceExhaustedError: OOM"
            in texts(at.error))


def _best_metric(store_home, ratio, repeats: int):
    """The page's Best configuration metric and the saved result of a benchmark whose cell i
    runs at ratio(i, repeat) x the baseline's 1,000 samples/s."""
    cache(store_home, facts())
    cells = bench.plan_matrix({"gpus": 0, "tpu": False, "cpu_bf16": True})
    samples = [{"cell": i, "repeat": r, "warmup_sec": 1.0, "samples_per_sec": 1000.0 * (1.0 if i == 0 else ratio(i, r))}
               for r in range(repeats) for i in range(len(cells))]
    result = bench.summarize(cells, samples)
    result.update(workload=bench.QUICK, machine={"gpus": 0}, wall_sec=70.0, repeats=repeats)
    bench.save(result)
    at = app(PAGE)
    no_errors(at)
    return {m.label: m for m in at.metric}["Best configuration"], result


def test_a_best_configuration_within_noise_has_no_arrow(store_home):
    # Issue 57: "1.00x ↑ +0%" with a green up-arrow read as a gain.
    # Cell 6 against the baseline per repeat: 0.98, 1.002, 1.03 (median 1.002, interval holds 1); the rest 0.9.
    m, result = _best_metric(store_home, lambda i, r: (0.98, 1.002, 1.03)[r] if i == 6 else 0.9, 3)
    assert m.value == "1.00×" and m.proto.delta == "+0% vs baseline · within noise"
    assert m.proto.color == 2 and m.proto.direction == 2  # MetricProto: delta colour GRAY, direction NONE
    assert result["best"]["speedup"] == pytest.approx(1.002) and result["best"]["verdict"] == "inconclusive"


def test_a_best_configuration_of_two_repeats_is_a_sample_without_an_arrow(store_home):
    """The default quick benchmark: 2 repeats, so no interval and no verdict (3 pairs are the
    fewest). Its best of 10 cells at 1.52x read as a green "+52%" gain."""
    m, result = _best_metric(store_home, lambda i, r: 1.52 if i == 6 else 0.9, 2)
    assert result["best"]["verdict"] is None and result["best"]["speedup"] == pytest.approx(1.52)
    assert m.value == "1.52×" and m.proto.delta == "+52% vs baseline · no interval"  # as short as "within noise"
    assert "2 repeats give no interval (3 are the fewest): a sample" in m.proto.help
    assert m.proto.color == 2 and m.proto.direction == 2  # grey, no arrow
