"""RunConfig validation: every bad value gets one line naming field, value and fix."""
import importlib.util
import json

import pytest

from engine.config import ConfigError, RunConfig, baseline_config, nearest_divisible
from engine.config.preflight import check_runnable
from tests.helpers import cli


def err(**kw) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        RunConfig(**kw)
    return e.value


def test_defaults_are_valid_and_derived_sizes_match_digits():
    c = RunConfig()
    # 1,797 digits, ceil(0.2 x 1797) = ceil(359.4) = 360 held out of training (1,797 - 360 = 1,437):
    # 360 // 2 = 180 of them the fixed test set, the other 360 - 180 = 180 validation.
    assert c.data_sizes() == (1437, 180)
    assert c.test_size() == 180
    assert c.steps_per_epoch() == 12  # ceil(1437 / 128)
    assert c.per_replica_batch_size == 128


def test_multi_replica_drops_remainder_to_keep_batches_equal():
    c = RunConfig(devices=2, batch_size=256)
    assert c.steps_per_epoch() == 5  # floor(1437 / 256)
    assert c.dropped_per_epoch() == 1437 - 5 * 256  # 157
    assert c.per_replica_batch_size == 128


@pytest.mark.parametrize("kw, field, fragment", [
    (dict(devices=0), "devices", "use 1 to 64 devices"),
    (dict(precision="float8"), "precision", "mixed_bfloat16"),
    (dict(dataset="imagenet"), "dataset", "digits"),
    (dict(model="vit"), "model", "resnet"),
    (dict(steps_per_execution=13), "steps_per_execution", "at most 12"),
    (dict(devices=100000), "devices", "is out of range; use 1 to 64 devices"),  # said "at least 1"
    (dict(workers=100), "workers", "is out of range; use 1 (this process) to 64 worker processes"),
    (dict(batch_size=2000), "batch_size", "at most 1437"),
    (dict(jit_compile="auto"), "jit_compile", "true or false"),
    (dict(fused_optimizer=True, optimizer="rmsprop"), "fused_optimizer", "use optimizer adam or sgd"),
    (dict(fused_optimizer=True, backend="jax"), "fused_optimizer", "XLA already fuses"),
    (dict(fused_optimizer=True, optimizer="sgd"), None, None),
    (dict(learning_rate=0.0), "learning_rate", "(0.0, 10.0]"),
    (dict(validation_fraction=0.9), "validation_fraction", "0.5"),
    (dict(schedule="constant", reduce_on_plateau=True, warmup_epochs=0.0), None, None),
    (dict(schedule="one_cycle", reduce_on_plateau=True), "reduce_on_plateau", "constant"),
    (dict(synthetic_shape=(32, 32), dataset="synthetic"), "synthetic_shape", "H, W, C"),
    # From a JSON config: 3.0 is whole, only written as a decimal (it read "is not a whole number").
    (dict(validation_seed=3.0), "validation_seed", "validation_seed: 3.0 is written as a decimal; write it as 3"),
    (dict(seed="x"), "seed", "is not a whole number; use an integer between 0 and 2147483647"),
    (dict(validation_seed=-1), "validation_seed", "is out of range; use a value between 0 and 2147483647"),
])
def test_bad_values_name_field_value_and_fix(kw, field, fragment):
    if field is None:
        RunConfig(**kw)  # allowed: a plateau reducer with a constant LR; a fused SGD update
        return
    e = err(**kw)
    assert e.field == field
    assert fragment in str(e)
    assert "\n" not in str(e)
    assert str(e).startswith(f"{field}: ")


def test_batch_not_divisible_suggests_nearest_valid_sizes():
    e = err(devices=3, batch_size=128)
    assert e.field == "batch_size"
    assert "use 126 or 129" in str(e)
    assert nearest_divisible(128, 3) == (126, 129)
    assert nearest_divisible(130, 4) == (128, 132)


def test_json_round_trip_and_unknown_keys_rejected():
    c = RunConfig(precision="mixed_bfloat16", devices=2, batch_size=256, target_accuracy=0.9,
                  dataset="synthetic", synthetic_shape=(16, 16, 3), synthetic_samples=512)
    assert RunConfig.from_json(c.to_json()) == c
    d = json.loads(c.to_json())
    d["batchsize"] = 1
    with pytest.raises(ConfigError) as e:
        RunConfig.from_dict(d)
    assert e.value.field == "batchsize"


def test_config_is_frozen():
    with pytest.raises(Exception):
        RunConfig().devices = 4


def test_baseline_is_like_for_like():
    c = RunConfig(precision="mixed_bfloat16", devices=2, batch_size=256, steps_per_execution=4,
                  jit_compile=True, schedule="one_cycle", label_smoothing=0.1, mixup_alpha=0.2,
                  fused_optimizer=True)
    b = baseline_config(c)
    assert (b.precision, b.devices, b.steps_per_execution, b.jit_compile) == ("float32", 1, 1, False)
    assert (b.fused_optimizer, b.optimizer) == (False, "adam")  # Keras's own update, same optimizer
    assert (b.schedule, b.label_smoothing, b.mixup_alpha) == ("constant", 0.0, 0.0)
    assert (b.dataset, b.model, b.batch_size, b.epochs, b.seed) == (c.dataset, c.model, 256, c.epochs, c.seed)
    assert baseline_config(c.replace(init_from=7, freeze_epochs=2)).init_from is None


def test_machine_checks():
    cpu_only = {"gpus": 0, "tpu": False, "cpu_bf16": False}
    with pytest.raises(ConfigError, match="No TPU detected"):
        check_runnable(RunConfig(device_type="tpu"), cpu_only)
    with pytest.raises(ConfigError, match="no GPU is visible"):
        check_runnable(RunConfig(device_type="gpu"), cpu_only)
    w = check_runnable(RunConfig(precision="mixed_float16", devices=2, batch_size=128), cpu_only)
    assert any("100x" in x for x in w) and any("simulated" in x for x in w)
    assert check_runnable(RunConfig(precision="mixed_bfloat16"), {**cpu_only, "cpu_bf16": True}) == []
    assert len(check_runnable(RunConfig(precision="mixed_bfloat16"), cpu_only)) == 1
    two_gpus = {"gpus": 2, "tpu": False, "cpu_bf16": False}
    assert check_runnable(RunConfig(precision="mixed_float16", devices=2, batch_size=128), two_gpus) == []


@pytest.mark.parametrize("argv, field", [
    (["--devices", "0"], "devices"),
    (["--precision", "fp8"], "precision"),
    (["--devices", "3", "--batch-size", "128"], "batch_size"),
    (["--device-type", "tpu"], "device_type"),
])
def test_cli_rejects_bad_input_with_exit_2_and_one_line(argv, field, store_home):
    out = cli.engine("run", *argv)  # in the unit lane: refused before TensorFlow is imported
    assert out.returncode == 2
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: "), out.stderr
    assert "Traceback" not in out.stderr
    assert not (store_home / "runs.sqlite").exists() or "tensorflow" not in out.stderr


def test_xla_over_simulated_devices_is_rejected_up_front():
    cpu_only = {"gpus": 0, "tpu": False, "cpu_bf16": False}
    with pytest.raises(ConfigError, match="jit_compile: True cannot run over 2 simulated"):
        check_runnable(RunConfig(jit_compile=True, devices=2, batch_size=128), cpu_only)
    assert check_runnable(RunConfig(jit_compile=True, devices=2, batch_size=128),
                          {"gpus": 2, "tpu": False, "cpu_bf16": False}) == []


def test_schedule_conflicts_are_rejected():
    assert err(schedule="one_cycle", warmup_epochs=1.0).field == "warmup_epochs"
    assert err(reduce_on_plateau=True, warmup_epochs=1.0).field == "reduce_on_plateau"
    assert err(schedule="cyclic", learning_rate=0.1, max_lr=0.01).field == "max_lr"


def test_tpu_suggests_steps_per_execution():
    tpu = {"gpus": 0, "tpu": True, "cpu_bf16": False}
    w = check_runnable(RunConfig(device_type="tpu"), tpu)
    assert any("steps_per_execution 32" in x for x in w)
    assert check_runnable(RunConfig(device_type="tpu", steps_per_execution=4), tpu) == []


@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="JAX is not installed: pip install -r requirements-dev.txt")
@pytest.mark.parametrize("flags, field", [
    (["--backend", "torch"], "backend: 'torch' is not supported yet; from the public registry it brings about 6 GB"),
    (["--backend", "jax", "--workers", "2"], "workers: 2 needs backend tensorflow"),
    (["--backend", "jax", "--device-type", "tpu"], "device_type: 'tpu' needs backend tensorflow"),
])
def test_unsupported_combinations_are_one_line_exit_2(store_home, flags, field):
    # In the unit lane (moved from the JAX matrix module, now tests/test_build.py): the lane guard proves no framework was imported.
    proc = cli.engine("run", *flags, "--quiet")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: " + field), proc.stderr
    assert "Traceback" not in proc.stderr
