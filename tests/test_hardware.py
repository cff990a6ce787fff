"""Hardware verdicts from fixed facts, the probe cache, and one real probe."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from tests.helpers.hints import option_hint

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # until a root conftest/pytest config exists
from engine.cli import hardware as cli_hardware
from engine.hardware import verdicts as hardware
from engine.hardware import machine  # noqa: E402


def facts(gpus=(), flags=(), tpu_cores=0, tpu_hint=False, driver=None, cuda_build=True,
          os_name="Linux"):
    """A facts dict in the probe's layout; `gpus` is [(name, (major, minor), MiB)]."""
    gpu_rows = [{"name": n, "compute_capability": list(cc), "memory_mib": mib}
                for n, cc, mib in gpus]
    return {
        "hostname": "test",
        "host": {"cpu_model": "Test CPU", "physical_cores": 4, "logical_cores": 8,
                 "cpu_flags": sorted(flags), "ram_gib": 16.0, "os": os_name, "arch": "x86_64"},
        "software": {"python": "3.11.7", "tensorflow": "2.21.0", "keras": "3.15.1"},
        "build": {"is_cuda_build": cuda_build, "cuda_version": "12.5.1", "cudnn_version": "9"},
        "gpus": gpu_rows,
        "driver": {"gpus": [g["name"] for g in gpu_rows] if driver is None else driver,
                   "version": None},
        "tpu": {"hint": tpu_hint or bool(tpu_cores), "cores": tpu_cores, "error": None},
        "errors": [],
    }


def by_option(f, device="auto"):
    return {v["option"]: v["verdict"] for v in hardware.verdicts(f, device)}


T4 = ("Tesla T4", (7, 5), 15360)
A100 = ("NVIDIA A100-SXM4-40GB", (8, 0), 40960)
P100 = ("Tesla P100-PCIE-16GB", (6, 0), 16384)


def test_turing_gpu_float16_faster_bfloat16_slower():
    v = by_option(facts(gpus=[T4]))
    assert v["mixed_float16"] == "faster"
    assert v["mixed_bfloat16"] == "slower"
    assert v["xla"] == "faster"
    assert v["multi_device"] == "neutral"
    assert "7.5" in option_hint(facts(gpus=[T4]), "mixed_float16")


def test_ampere_gpu_both_faster_and_multi_gpu():
    v = by_option(facts(gpus=[A100, A100]))
    assert v["mixed_float16"] == "faster" and v["mixed_bfloat16"] == "faster"
    assert v["multi_device"] == "faster"
    assert "2 physical GPUs" in option_hint(facts(gpus=[A100, A100]), "devices")


def test_mixed_gpus_judged_by_the_weakest_and_old_gpu_neutral():
    assert by_option(facts(gpus=[A100, T4]))["mixed_bfloat16"] == "slower"
    assert by_option(facts(gpus=[P100]))["mixed_float16"] == "neutral"


@pytest.mark.parametrize("flag", ["avx512_bf16", "amx_bf16"])
def test_cpu_with_native_bf16(flag):
    f = facts(flags=["avx512f", flag])
    v = by_option(f)
    assert v["mixed_bfloat16"] == "faster"
    assert v["mixed_float16"] == "slower"
    assert v["xla"] == "measure"
    assert v["multi_device"] == "neutral"
    assert option_hint(f, "mixed_bfloat16") == (
        f"this CPU has native bf16 ({flag}): expect faster")


def test_cpu_without_bf16():
    f = facts(flags=["avx512f"])
    v = by_option(f)
    assert v["mixed_bfloat16"] == "slower"
    assert v["mixed_float16"] == "slower"
    assert "10-100x slower" in option_hint(f, "mixed_float16")
    assert by_option(facts(flags=["avx512_fp16"]))["mixed_float16"] == "measure"


def test_device_choice_and_tpu():
    gpu_box = facts(gpus=[T4], flags=["amx_bf16"])
    assert by_option(gpu_box, "cpu")["mixed_bfloat16"] == "faster"   # CPU judged, not the T4
    assert by_option(gpu_box, "gpu")["mixed_bfloat16"] == "slower"
    cpu_box = facts()
    assert set(by_option(cpu_box, "gpu").values()) == {"unavailable"}
    tpu_box = facts(tpu_cores=8)
    assert by_option(tpu_box)["tpu"] == "faster"
    v = by_option(tpu_box, "tpu")
    assert (v["mixed_bfloat16"], v["mixed_float16"], v["multi_device"]) == ("faster", "slower", "faster")
    assert by_option(cpu_box)["tpu"] == "unavailable"
    with pytest.raises(ValueError):
        hardware.verdicts(cpu_box, "npu")
    with pytest.raises(ValueError):
        option_hint(cpu_box, "fp8")
    assert [v["option"] for v in hardware.verdicts(cpu_box)] == list(hardware.OPTIONS)


def test_gpu_diagnosis():
    hidden = facts(driver=["NVIDIA A100-SXM4-40GB"])
    msg = hardware.gpu_diagnosis(hidden)
    assert 'pip install "tensorflow[and-cuda]==2.21.0"' in msg
    assert "NVIDIA A100-SXM4-40GB" in msg and "CUDA/cuDNN libraries" in msg
    assert "CPU-only build" in hardware.gpu_diagnosis(facts(driver=["nvidia0"], cuda_build=False))
    assert "WSL2" in hardware.gpu_diagnosis(facts(driver=["RTX 4090"], os_name="Windows"))
    assert hardware.gpu_diagnosis(facts(gpus=[A100])) is None
    assert hardware.gpu_diagnosis(facts()) is None
    # TF sees no GPU, so runs go to the CPU and are judged there.
    assert by_option(hidden)["mixed_float16"] == "slower"


def test_probe_cache_keyed_by_host_machine_and_tf_version(tmp_path, monkeypatch):
    monkeypatch.setenv("SPEEDLAB_HOME", str(tmp_path))
    monkeypatch.setattr(machine, "nvidia_gpus", lambda *a, **k: [])
    calls = []
    monkeypatch.setattr(hardware, "run_probe",
                        lambda timeout_s=60: calls.append(timeout_s) or facts(flags=["amx_bf16"]))
    first = hardware.probe(timeout_s=7)
    second = hardware.probe()
    assert calls == [7] and (first["cached"], second["cached"]) == (False, True)
    assert second["facts"] == first["facts"]
    jax = machine.installed_backends()["jax"]
    from engine.hardware.fingerprint import here_id

    # The fingerprint id too: another CPU behind the same hostname is probed afresh.
    assert first["key"] == (f"{__import__('socket').gethostname()}|{here_id()}|tensorflow-{hardware.tf_version()}"
                            + (f"|jax-{jax}" if jax else ""))
    assert hardware.probe(refresh=True)["cached"] is False and len(calls) == 2
    # An entry with a GPU diagnosis is re-probed: the fix keeps the TF version.
    monkeypatch.setattr(hardware, "run_probe", lambda timeout_s=60: facts(driver=["nvidia0"]))
    hardware.probe(refresh=True)
    monkeypatch.setattr(machine, "nvidia_gpus", lambda *a, **k: ["nvidia0"])
    assert hardware.probe()["cached"] is False


@pytest.mark.worker
def test_real_probe_on_this_machine(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPEEDLAB_HOME", str(tmp_path))
    result = hardware.probe(timeout_s=120, refresh=True)
    f = result["facts"]
    with open("/proc/cpuinfo") as fh:
        flags = set(next(ln for ln in fh if ln.startswith("flags")).split(":", 1)[1].split())
    assert set(f["host"]["cpu_flags"]) == flags & set(machine.LOW_PRECISION_FLAGS)
    assert f["host"]["logical_cores"] >= 1 and f["host"]["ram_gib"] > 0
    assert f["software"]["tensorflow"] == hardware.tf_version()
    assert f["software"]["keras"].startswith("3.")
    assert f["software"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert isinstance(f["build"]["is_cuda_build"], bool)
    assert f["driver"]["gpus"] == machine.nvidia_gpus()
    assert f["tpu"]["cores"] == 0 and f["errors"] == []
    # The matmul peak per dtype (engine.hardware.matmul_peak); whether it keeps its time
    # budget (BUDGET_S) is measured by benchmarks/matmul_peak_budget.py, not timed here.
    peak = f["peak"]
    assert peak["device"] == ("GPU" if f["gpus"] else "CPU")
    assert all(r["calls"] >= 2 for r in peak["dtypes"].values() if "flops_per_sec" in r)
    assert peak["dtypes"]["float32"]["flops_per_sec"] > 1e8  # any CPU of the last 20 years
    row = peak["dtypes"]["float32"]
    assert row["flops_per_sec"] == pytest.approx(2 * row["n"] ** 3 / row["best_sec"])
    assert row["flops_per_sec"] == max(row["by_n"].values())
    # Sizes grow until the rate stops rising (or the budget is spent): all of them, or a reason.
    assert len(row["by_n"]) == len(peak["sizes"]) or row["stopped"]
    assert sorted(int(n) for n in row["by_n"]) == list(peak["sizes"][:len(row["by_n"])])
    # MFU's denominator beside it: cores x the measured clock x FLOPs per cycle.
    cpu = f["theoretical"]["cpu"]["float32"]
    assert cpu["flops_per_sec"] == pytest.approx(cpu["cores"] * cpu["clock_hz"] * cpu["flops_per_cycle"])
    assert 0.8e9 < f["theoretical"]["clock"]["clock_hz"] < 6.5e9
    if not f["gpus"] and not flags & {"avx512_fp16", "amx_fp16"}:
        assert "skipped" in peak["dtypes"]["float16"]
    v = {x["option"]: x["verdict"] for x in result["verdicts"]}
    if not f["gpus"]:  # CPU-only machine: judged from its flags
        bf16 = bool(flags & {"avx512_bf16", "amx_bf16"})
        assert v["mixed_bfloat16"] == ("faster" if bf16 else "slower")
        assert v["mixed_float16"] in ("slower", "measure") and v["xla"] == "measure"
        assert v["multi_device"] == "neutral"
        assert (result["diagnosis"] is None) == (not f["driver"]["gpus"])
    else:
        assert all(g["compute_capability"] for g in f["gpus"])
    assert (tmp_path / "hardware.json").exists()
    # The CLI now reads the cache (no second subprocess) and prints the table.
    parser = argparse.ArgumentParser()
    cli_hardware.add_parser(parser.add_subparsers())
    args = parser.parse_args(["hardware"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "(cached; --refresh to re-probe)" in out
    assert f"mixed_bfloat16  {v['mixed_bfloat16']}" in out
    assert "Peak (theoretical)  " in out and "Best matmul  " in out and "float32 " in out and "FLOP/s" in out
