"""engine.training.summary: RunSummary's stored form, its documented units, and the
figures it is built from (hand-computed; fakes stand in for the Recorder and timeline)."""
import re
from dataclasses import fields
from types import SimpleNamespace

import pytest

from engine.training.summary import RunSummary, input_figures, progress, time_accounts

# The summary keys a run stores, in the order engine.training.train wrote them before
# RunSummary existed: the store, the CLI's --json and bundles read exactly these.
STORED_KEYS = [
    "warmup_sec", "steady_executions", "samples_per_sec", "samples_per_sec_mean", "samples_per_sec_iqr",
    "setup_sec", "train_sec", "validation_sec", "other_sec", "wall_sec", "fit_sec",
    "end_to_end_samples_per_sec", "setup_parts", "timeline", "persistent_iterators", "replicas", "workers",
    "replicas_simulated", "device_kind", "backend", "precision", "compute_dtype", "variable_dtype",
    "loss_scale", "steps_per_execution", "jit_compile", "global_batch_size", "fused_optimizer",
    "per_replica_batch_size", "dropped_samples_per_epoch", "steps", "executions", "updates_applied",
    "skipped_updates", "final_loss", "final_accuracy", "final_val_loss", "final_val_accuracy",
    "target_accuracy", "time_to_target_sec", "epochs_run", "stopped_at_target", "time_to_target_note",
    "effective_learning_rate", "schedule", "label_smoothing", "mixup_alpha",
    "train_accuracy_on_mixed_targets", "data_wait_sec", "data_wait_share", "input_batches_per_sec",
    "warmup_executions", "instrumentation", "validation_traced_ahead", "init_from", "pretrained",
    "flops_per_sample", "forward_flops_per_sample", "flops_uncounted", "freeze_epochs",
    "finetune_learning_rate",
]
# Fields added since, with defaults (a summary stored before them has none of them): the held-out
# test set's, measured after the clocks stop (issue 40), and the FLOPs count's.
ADDED_KEYS = ["test_accuracy", "test_samples", "test_sec", "test_split", "test_note",
              "flops_all_taps_per_sample", "flops_phases", "flops_source", "flops_xla_per_sample", "flops_note"]


def _stored() -> dict:
    """A stored summary with a distinct value per key (nested values included)."""
    d = {k: i * 0.5 for i, k in enumerate(STORED_KEYS)}
    d.update(samples_per_sec_iqr=(10.0, 12.0), timeline=[["setup", 0.0, 1.5, None, None]],
             instrumentation={"batch_hooks_sec": 0.02}, device_kind="CPU", time_to_target_note=None)
    return d


def test_to_dict_is_the_stored_dict_key_for_key_in_order():
    d = _stored()
    s = RunSummary(**d)
    out = s.to_dict()
    assert list(out) == STORED_KEYS + ADDED_KEYS
    assert out == {**d, **dict.fromkeys(ADDED_KEYS)}  # not measured: None
    assert out["instrumentation"] is d["instrumentation"]  # not copied: the worker adds writer_cpu_sec to it


def test_from_dict_round_trip_and_refusals():
    s = RunSummary(**_stored())
    assert RunSummary.from_dict(s.to_dict()) == s
    assert RunSummary.from_dict(_stored()) == s  # stored before the added fields: they read as None
    tested = RunSummary.from_dict({**_stored(), "test_accuracy": 0.95, "test_samples": 180})
    assert (tested.test_accuracy, tested.test_samples, tested.test_sec) == (0.95, 180, None)
    with pytest.raises(ValueError, match=r"not fields \['run_id'\]"):
        RunSummary.from_dict({**s.to_dict(), "run_id": 7})  # what the worker adds is not a field
    d = s.to_dict()
    del d["steps"]
    with pytest.raises(ValueError, match=r"missing \['steps'\]"):
        RunSummary.from_dict(d)


def test_every_field_is_documented_once_with_its_unit():
    documented = re.findall(r"^ {8}(\w+) \(([^)]+)\): ", RunSummary.__doc__, flags=re.M)
    names = [n for n, _ in documented]
    assert names == [f.name for f in fields(RunSummary)]  # each once, in field order
    units = dict(documented)
    for name, unit in units.items():
        if "samples_per_sec" in name:
            assert unit == "samples/s", name
        elif name.endswith("_per_sec"):
            assert unit.endswith("/s"), name
        elif name.endswith("_sec"):
            assert unit == "s", name
    assert units["input_batches_per_sec"] == "batches/s"
    assert units["global_batch_size"] == units["per_replica_batch_size"] == "samples"
    assert units["final_val_accuracy"] == units["data_wait_share"] == "fraction"


def _rec(**kw):
    base = dict(durations=[3.0, 1.0, 1.0, 2.0], warmups=[True, False, False, False],
                data_waits=[1.0, 0.25, None, 0.5], step=8, epoch_logs={"loss": 0.5, "accuracy": 0.75},
                updates=SimpleNamespace(applied=7, skipped=1), target=0.9, time_to_target=None, epochs_done=3)
    return SimpleNamespace(**{**base, **kw})


def test_input_figures_count_steady_waits_only():
    out = input_figures(_rec(), {"input_batches_per_sec": 40.0})
    # steady executions 2..4 waited 0.25 + 0.5 (one not metered) of their 1 + 1 + 2 s
    assert out == {"data_wait_sec": 0.75, "data_wait_share": pytest.approx(0.75 / 4.0),
                   "input_batches_per_sec": 40.0}
    none = input_figures(_rec(data_waits=[None] * 4), {"input_batches_per_sec": None})
    assert none == {"data_wait_sec": None, "data_wait_share": None, "input_batches_per_sec": None}


def test_progress_target_not_reached_and_reached():
    cfg = SimpleNamespace(stop_at_target=True)
    out = progress(cfg, _rec())
    assert out["steps"] == 8 and out["executions"] == 4 and out["warmup_executions"] == 1
    assert (out["updates_applied"], out["skipped_updates"]) == (7, 1)
    assert out["final_loss"] == 0.5 and out["final_val_loss"] is None
    assert out["stopped_at_target"] is False and out["time_to_target_note"] == "not reached in 3 epochs"
    hit = progress(cfg, _rec(time_to_target=12.5))
    assert hit["time_to_target_sec"] == 12.5 and hit["stopped_at_target"] is True
    assert hit["time_to_target_note"] is None


def test_time_accounts_add_up_and_give_end_to_end_throughput():
    spans = [("setup", 0.0, 2.0, None, None), ("warmup", 2.0, 3.0, 0, "first trace"),
             ("train", 3.0, 6.5, 0, None), ("validation", 6.5, 7.0, 0, None)]
    out = time_accounts(SimpleNamespace(spans=spans, marks={}), samples=100)
    assert (out["setup_sec"], out["warmup_sec"], out["train_sec"], out["validation_sec"],
            out["other_sec"], out["wall_sec"]) == (2.0, 1.0, 3.5, 0.5, 0.0, 7.0)
    assert out["fit_sec"] == 5.0 and out["end_to_end_samples_per_sec"] == 20.0  # 100 samples / 5 s
    assert out["setup_parts"] == [{"part": "compile", "title": "other setup (fit start)", "start": 0.0, "end": 2.0}]
    assert out["timeline"][1] == ["warmup", 2.0, 3.0, 0, "first trace"]
