"""One handoff to the Train page (views/components/handoff.py): the Autopilot, Hardware and
Presets all go through it; what it hands over is exactly what differs from the defaults."""
from __future__ import annotations

from pathlib import Path

from engine.config import RunConfig
from views.components import handoff

ROOT = Path(__file__).resolve().parents[1]


def test_differing_names_every_field_a_winner_changed_and_nothing_else():
    cfg = RunConfig(backend="jax", ema_momentum=0.9, tta="translate", batch_size=128, epochs=12).to_dict()
    # batch_size 128 is the default: not handed over; epochs 12 is not; a JAX run always compiles with XLA.
    assert handoff.differing(cfg) == {"backend": "jax", "jit_compile": True, "ema_momentum": 0.9, "tta": "translate",
                                      "epochs": 12}


def test_query_params_spell_values_as_the_url_does():
    assert handoff.query_params({"jit_compile": True, "scale_lr": False, "learning_rate": 0.004,
                                 "synthetic_shape": (8, 8, 1)}) == {
        "jit_compile": "true", "scale_lr": "false", "learning_rate": "0.004", "synthetic_shape": "8,8,1"}


def test_no_page_opens_the_train_page_but_through_the_handoff():
    callers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "views").rglob("*.py")
                     if "switch_page(" in p.read_text() and p.name != "handoff.py")
    assert callers == []
    users = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "views").rglob("*.py") if "handoff." in p.read_text())
    assert users == ["views/autopilot.py", "views/hardware/benchmark.py", "views/train/presets.py",
                     "views/train/train.py"]  # the Train page: `remember` and `notes`


# A CPU machine as engine.hardware.machine.quick_facts gives it, whatever CPU runs the test.
CPU = {"gpus": 0, "tpu": False, "cpu_bf16": True, "backends": {"tensorflow": "2.21.0", "jax": "0.10.2"}}
CELL = {"backend": "tensorflow", "precision": "mixed_bfloat16", "steps_per_execution": 8, "jit_compile": False,
        "devices": 1, "workers": 1}


def test_a_speed_option_that_fits_is_handed_over_as_measured():
    # digits at batch 128: 1,437 training samples, ceil(1,437 / 128) = 12 steps an epoch >= 8.
    assert handoff.fit({"dataset": "digits", "batch_size": 128}, CELL, machine=CPU) == (CELL, [])


def test_devices_that_do_not_divide_the_batch_are_lowered_to_one_that_does():
    # Batch 96 over 8 devices from a GPU box's benchmark: 96 % 8 == 0, fits. Batch 100: 7 and 6
    # do not divide it, 5 does (20 a replica). Simulated CPU devices: no GPU needed to validate.
    cell = {**CELL, "devices": 8, "steps_per_execution": 1}
    assert handoff.fit({"dataset": "digits", "batch_size": 96}, cell, machine=CPU)[0]["devices"] == 8
    fitted, notes = handoff.fit({"dataset": "digits", "batch_size": 100}, cell, machine=CPU)
    assert fitted["devices"] == 5
    assert notes == [("devices", 5, "devices 8 from the benchmark → 5: batch_size 100 is not divisible by 8 "
                                    "replicas (digits at batch 100)")]


def test_replicas_are_fitted_before_the_steps_they_change():
    # 2 devices at batch 256: whole batches only, 1,437 // 256 = 5 steps an epoch (not 6).
    fitted, notes = handoff.fit({"dataset": "digits", "batch_size": 256}, {**CELL, "devices": 2}, machine=CPU)
    assert (fitted["devices"], fitted["steps_per_execution"]) == (2, 5)
    assert [n[2] for n in notes] == ["steps per execution 8 from the benchmark → 5: 8 is more than the 5 steps "
                                     "in one epoch (digits at batch 256)"]


def test_an_option_the_users_settings_rule_out_keeps_the_users_value():
    # CutMix cannot be XLA-compiled on TensorFlow: XLA stays off, the user's CutMix stays.
    fitted, notes = handoff.fit({"dataset": "digits", "cutmix_factor": 0.5}, {**CELL, "jit_compile": True},
                                machine=CPU)
    assert fitted["jit_compile"] is False and fitted["precision"] == "mixed_bfloat16"
    assert notes[0][:2] == ("jit_compile", False)
    assert notes[0][2].startswith("XLA on from the benchmark not applied, kept off: cutmix_factor 0.5 cannot be "
                                  "XLA-compiled on TensorFlow")


def test_settings_that_do_not_launch_anyway_are_not_fitted():
    # The user's own batch is over the 1,437 training samples: the Train page names that, not the benchmark.
    assert handoff.fit({"dataset": "digits", "batch_size": 5000}, CELL, machine=CPU) == (CELL, [])
