"""A launch the hardware will punish is stopped before it starts: mixed_bfloat16 on a CPU without
native bf16 asks for --allow-slow (CLI) or a second click (the Train page), with the cached
probe's measured slowdown; a CPU with native bf16 launches at once. The CPU is faked (fake_cpu)."""
from __future__ import annotations

import json

import pytest

from engine.config import RunConfig
from engine.config.preflight import slow_precision
from engine.hardware import verdicts
from engine.jobs import runner
from engine.jobs.launch import SlowHere, launch
from tests.helpers.pages import app, no_errors, texts
from tests.helpers.probe_cache import plant_probe

ZEN3 = {"avx2", "fma"}
ZEN4 = {"avx2", "fma", "avx512f", "avx512_bf16"}
BF16 = RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2)
# The probe's best matmuls on a Zen 3: 35 GFLOP/s in float32, 1 GFLOP/s in bfloat16.
PEAK = {"device": "CPU", "dtypes": {"float32": {"flops_per_sec": 35e9}, "bfloat16": {"flops_per_sec": 1e9}}}
SLOW = "bf16 here: about 35x slower than float32 in the probe (this CPU has no avx512_bf16/amx_bf16)"


@pytest.fixture
def no_queue(store_home, monkeypatch):
    monkeypatch.setattr(runner, "ensure_queue", lambda *a, **k: False)
    return store_home


def _probe(peak=PEAK):
    """The cached hardware probe of this (faked) machine, keyed as `python -m engine hardware` keys it."""
    plant_probe({"hostname": "vm", "peak": peak})


def test_the_line_comes_from_the_probe_or_the_flags(store_home):
    zen3 = {"gpus": 0, "cpu_bf16": False, "cpu_fp16": False}
    assert slow_precision(BF16, zen3, {"peak": PEAK}) == SLOW
    assert slow_precision(BF16, zen3, {}) == (
        "mixed_bfloat16 on this CPU without avx512_bf16/amx_bf16: emulated, expect it to be slower than float32 "
        "(the hardware check measures by how much)")
    assert slow_precision(BF16, {**zen3, "cpu_bf16": True}, {"peak": PEAK}) is None  # a Zen 4 or a Xeon
    assert slow_precision(BF16, {**zen3, "gpus": 1}, {}) is None  # a GPU: not this CPU's concern
    assert slow_precision(BF16.replace(precision="float32"), zen3, {}) is None
    f16 = {"device": "CPU", "dtypes": {"float32": {"flops_per_sec": 30e9}, "float16": {"flops_per_sec": 0.3e9}}}
    assert slow_precision(BF16.replace(precision="mixed_float16"), zen3, {"peak": f16}) == (
        "fp16 here: about 100x slower than float32 in the probe (this CPU has no avx512_fp16/amx_fp16)")


def test_launch_refuses_bf16_on_a_cpu_without_it_unless_allowed(no_queue, store, fake_cpu):
    fake_cpu(ZEN3)
    _probe()
    with pytest.raises(SlowHere) as e:
        launch(BF16)
    assert str(e.value) == SLOW and store.list_runs() == []  # nothing queued
    assert launch(BF16, allow_slow=True).what == "run"


def test_launch_lets_bf16_through_on_a_cpu_with_it(no_queue, store, fake_cpu):
    fake_cpu(ZEN4)
    _probe()
    assert launch(BF16).what == "run"


def test_the_cli_asks_for_allow_slow_in_one_line(no_queue, store, fake_cpu, capsys):
    from engine.cli.main import main

    fake_cpu(ZEN3)
    _probe()
    assert main(["run", "--model", "mlp", "--precision", "mixed_bfloat16", "--epochs", "2"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert f"error: not launched: {SLOW}; pass --allow-slow to launch it anyway" in err
    assert store.list_runs() == []


@pytest.mark.page
def test_the_train_page_shows_the_line_beside_launch_and_needs_the_box(no_queue, store, fake_cpu):
    fake_cpu(ZEN3)
    _probe()
    at = app()
    at.selectbox(key="model").set_value("mlp")
    at.selectbox(key="precision").set_value("mixed_bfloat16").run()
    no_errors(at)
    assert SLOW in texts(at.warning)
    at.button(key="launch").click().run()
    assert (f"Not launched: {SLOW}. Tick **Launch anyway (slow on this machine)** beside Launch to launch it."
            in texts(at.warning)) and store.list_runs() == []
    at.checkbox(key="allow_slow").check().run()
    at.button(key="launch").click().run()
    no_errors(at)
    assert len(store.list_runs()) > 0


@pytest.mark.page
def test_the_train_page_launches_bf16_at_once_on_a_cpu_with_it(no_queue, store, fake_cpu):
    fake_cpu(ZEN4)
    _probe()
    at = app()
    at.selectbox(key="precision").set_value("mixed_bfloat16").run()
    no_errors(at)
    assert "slower than float32" not in texts(at.warning)
    assert "allow_slow" not in [c.key for c in at.checkbox]


@pytest.mark.page
def test_the_hardware_page_and_command_name_the_machine(store_home, fake_cpu, monkeypatch, capsys):
    import argparse

    from engine.cli import hardware as cli_hardware
    from engine.hardware.fingerprint import fingerprint

    fake_cpu(ZEN3)
    fp = fingerprint()
    plant_probe({"hostname": "vm", "probed_at": 1_700_000_000.0, "host": {"cpu_flags": []}, "gpus": [],
                 "driver": {"gpus": [], "version": None}, "tpu": {}, "software": {}, "errors": []})
    monkeypatch.setattr(verdicts, "_stale", lambda facts: False)
    at = app("views/hardware/hardware.py")
    no_errors(at)
    assert f":material/fingerprint: Machine **{fp['name']}** · fingerprint `{fp['id']}`" in texts(at.markdown)
    monkeypatch.setattr(cli_hardware, "probe", lambda **kw: {"facts": {"hostname": "vm"}, "verdicts": []})
    parser = argparse.ArgumentParser()
    cli_hardware.add_parser(parser.add_subparsers())
    args = parser.parse_args(["hardware", "--json"])
    assert args.func(args) == 0
    got = json.loads(capsys.readouterr().out)["fingerprint"]
    assert (got["id"], got["name"], got["cpu"]["flags"]) == (fp["id"], fp["name"], ["avx2", "fma"])
    assert ", AVX2+FMA, no bf16, " in got["name"]


def test_presets_name_their_machine_and_flag_bf16_here():
    from engine.config import presets

    zen3 = {"gpus": 0, "cpu_bf16": False, "cpu_fp16": False}
    menu = {p["name"]: p for p in presets.menu("mnist5k", here="aaaaaaaaaaaa", machine=zen3, probe={"peak": PEAK})}
    win = menu["Autopilot winner"]
    assert win["line"] == ("recorded 2026-12-03: bf16 · 8 steps/execution · one-cycle to 0.013 over 3 epochs · "
                           "smoothing 0.1 · fused Adam; measured elsewhere (machine not recorded): check it here")
    assert "4.51x" not in win["line"] and win["elsewhere"] and win["machine"] == "machine not recorded"
    assert win["slow"] == SLOW and menu["Hand-made preset"]["slow"] == SLOW and menu["Baseline"]["slow"] is None
    mine = {"id": "aaaaaaaaaaaa", "name": "AMD EPYC Zen 4 (family 25 model 17), AVX-512, bf16, 2 cores"}
    row = {"learning_rate": 0.004, "result": {"fingerprint": mine}}
    tuned = presets.menu("mnist5k", row, here="aaaaaaaaaaaa", machine={**zen3, "cpu_bf16": True})[1]
    assert tuned["line"] == ("the baseline at its tuned constant learning rate 0.004 (tune-baseline); measured on "
                             f"this machine ({mine['name']})") and not tuned["elsewhere"] and tuned["slow"] is None


@pytest.mark.page
def test_the_presets_popover_flags_a_bf16_preset_on_a_cpu_without_it(store_home, fake_cpu):
    fake_cpu(ZEN3)
    _probe()
    at = app()
    at.selectbox(key="dataset").set_value("mnist5k").run()
    no_errors(at)
    captions = texts(at.caption)
    assert f":material/speed: slower here: {SLOW}" in captions
    assert "measured elsewhere (machine not recorded): check it here" in captions


@pytest.mark.page
def test_an_autopilot_winner_of_another_machine_reads_measured_elsewhere(store_home):
    from engine.autopilot import search as autopilot
    from engine.hardware.fingerprint import short
    from engine.jobs import background
    from tests.test_autopilot_page import done_state

    zen3 = {"id": "0123456789ab", "name": "AMD EPYC Zen 3 (family 25 model 1), AVX2+FMA, no bf16, 2 cores"}
    background.write_json(autopilot.progress_path(), {**done_state(), "fingerprint": zen3})
    at = app("views/autopilot.py")
    no_errors(at)
    assert f"Measured elsewhere ({zen3['name']}): check it here before you use its figures." in texts(at.warning)
    assert ("Measured elsewhere · Confirmation: the winner vs Keras-default Adam 1e-3, on seeds the search did not use"
            in texts(at.caption).splitlines())
    assert f":material/fingerprint: measured on {zen3['name']}" in texts(at.caption)
    background.write_json(autopilot.progress_path(), {**done_state(), "fingerprint": short()})
    at = app("views/autopilot.py")
    assert "Measured elsewhere" not in texts(at.warning) and "Measured elsewhere" not in texts(at.caption)
    assert f":material/fingerprint: measured on {short()['name']} (this machine)" in texts(at.caption)


@pytest.mark.page
def test_a_quick_benchmark_of_another_machine_reads_measured_elsewhere(store_home):
    from engine.bench import quick as bench
    from tests.test_hardware_page import cache, facts, saved_result

    cache(store_home, facts())
    saved_result()
    at = app("views/hardware/hardware.py")
    no_errors(at)
    assert "Measured elsewhere" not in texts(at.warning)  # saved on this machine
    path = store_home / "bench-latest.json"
    res = json.loads(path.read_text())
    path.write_text(json.dumps({**res, "fingerprint": {"id": "0123456789ab", "name": "AMD EPYC Zen 3"}}))
    assert bench.machine_caution(json.loads(path.read_text())) == (
        "Measured elsewhere (AMD EPYC Zen 3): check it here. This machine's CPU or devices differ, so these "
        "speedups are not this machine's until you run it again.")
    at = app("views/hardware/hardware.py")
    no_errors(at)
    assert texts(at.warning).startswith("Measured elsewhere (AMD EPYC Zen 3): check it here.")
