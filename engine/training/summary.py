"""The summary of one finished run: `RunSummary`, built from the Recorder's figures, the
worker's timeline and the plan, and stored (as `RunSummary.to_dict()`) in the run's
`summary` column, which the dashboard, the CLI's --json and bundles read.

Nothing here imports a framework at import time; `build_summary` reads the model's
optimizer (Keras) for the loss scale and the fused updates.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Optional

FLOPS_KEYS = ("flops_per_sample", "forward_flops_per_sample", "flops_all_taps_per_sample", "flops_uncounted",
              "flops_phases", "flops_source", "flops_xla_per_sample", "flops_note")


@dataclass
class RunSummary:
    """What one run measured and how it was set up. Fields are in the order they are stored.

    Attributes:
        warmup_sec (s): executions flagged warm-up (tracing, compilation), from the timeline.
        steady_executions (executions): executions after warm-up that the rates come from.
        samples_per_sec (samples/s): median steady-state throughput (None: no steady execution).
        samples_per_sec_mean (samples/s): steady samples / steady seconds.
        samples_per_sec_iqr (samples/s): (first, third) quartile of the steady rates.
        setup_sec (s): process start to the first execution (imports, devices, data, model).
        train_sec (s): steady training executions.
        validation_sec (s): validation passes.
        other_sec (s): callbacks, epoch ends and everything else inside fit.
        wall_sec (s): the worker's wall time; setup + warm-up + train + validation + other.
        fit_sec (s): wall_sec - setup_sec.
        end_to_end_samples_per_sec (samples/s): samples trained / fit_sec (None: fit_sec 0).
        setup_parts (s): [{'part', 'title', 'start', 'end'}] since the process started.
        timeline (s): spans [kind, start, end, epoch, note] since the process started.
        persistent_iterators (flags): {'train', 'validation'}: one iterator for the whole run.
        replicas (replicas): model replicas the global batch is split over.
        workers (processes): worker processes (1 unless multi-worker).
        replicas_simulated (flag): replicas are logical devices on one CPU, not real ones.
        device_kind (name): 'CPU', 'GPU' or 'TPU'.
        backend (name): Keras backend, 'tensorflow' or 'jax'.
        precision (name): Keras dtype policy asked for, e.g. 'mixed_float16'.
        compute_dtype (dtype): the layers' compute dtype.
        variable_dtype (dtype): the weights' dtype.
        loss_scale (factor): dynamic loss scale at the end (mixed_float16 only, else None).
        steps_per_execution (steps): batches fused into one execution.
        jit_compile (flag): XLA compilation of the train step.
        global_batch_size (samples): samples per step over all replicas.
        fused_optimizer (flag): the optimizer applied fused updates.
        per_replica_batch_size (samples): global_batch_size // replicas.
        dropped_samples_per_epoch (samples): samples left out each epoch to split evenly.
        steps (steps): batches run.
        executions (executions): executions run (steps / steps_per_execution, rounded up).
        updates_applied (updates): optimizer updates applied.
        skipped_updates (updates): updates skipped by float16 loss scaling (steps - applied).
        final_loss (nats): training loss of the last epoch (None: no epoch ended).
        final_accuracy (fraction): training accuracy of the last epoch.
        final_val_loss (nats): validation loss of the last epoch.
        final_val_accuracy (fraction): validation accuracy of the last epoch.
        target_accuracy (fraction): the validation accuracy to reach (None: no target).
        time_to_target_sec (s): worker wall time when the target was first reached.
        epochs_run (epochs): epochs completed.
        stopped_at_target (flag): the run stopped because it reached its target.
        time_to_target_note (text): why time_to_target_sec is None although a target was set.
        effective_learning_rate (1/step): learning rate after batch-size scaling.
        schedule (name): learning-rate schedule, e.g. 'one_cycle'.
        label_smoothing (fraction): label smoothing of the loss (Szegedy et al., 2016).
        mixup_alpha (alpha): mixup's Beta parameter (Zhang et al., 2018); 0 = off.
        train_accuracy_on_mixed_targets (flag): training accuracy is against mixed labels.
        data_wait_sec (s): seconds the steady executions waited for input (None: not metered).
        data_wait_share (fraction): data_wait_sec / seconds of the steady executions.
        input_batches_per_sec (batches/s): the training pipeline alone (None: not probed).
        warmup_executions (executions): executions flagged warm-up.
        instrumentation (s): {'batch_hooks_sec'}: time in the Recorder's batch hooks.
        validation_traced_ahead (s): {'sec', 'error'} of tracing validation during the first
            epoch (engine.training.eval_trace); None when not tried.
        init_from (run id): the stored run the weights came from (None: fresh).
        pretrained (flag): ImageNet weights of a keras.applications backbone.
        flops_per_sample (FLOP/sample): training FLOPs per sample: forward, weight gradients of the
            layers that train and the input gradients needed (engine.training.flops; None: not counted).
        forward_flops_per_sample (FLOP/sample): forward pass only.
        flops_uncounted (layers): layers with weights left out of the count.
        freeze_epochs (epochs): epochs with the taken-over layers frozen (None: nothing taken).
        finetune_learning_rate (1/step): learning rate of the fine-tuning phase.
        test_accuracy (fraction): accuracy on the held-out test set with the weights the run
            stopped with (engine.data.datasets.Split; nothing stops, selects or tunes on it).
            Measured after the clock stops: outside wall_sec and every rate.
        test_samples (samples): size of that test set.
        test_sec (s): the test evaluation (outside wall_sec).
        test_split (name): 'split' (a fixed draw of the data set) or 'test' (its own test split).
        test_note (text): why test_accuracy is None (cancelled, failed, multi-worker).
        flops_all_taps_per_sample (FLOP/sample): flops_per_sample counting every convolution tap
            (padding too, as fvcore and ptflops do).
        flops_phases (per phase): [{'first_epoch', 'end_epoch', 'frozen', 'flops_per_sample'}] of a
            run with taken-over layers (each phase counted apart); None otherwise.
        flops_source (name): 'layers' (engine.training.flops.count) or 'xla' (XLA's cost analysis of the
            step, the fallback on JAX for a model with layers the counter does not know).
        flops_xla_per_sample (FLOP/sample): XLA's count of the step a user's model was held against
            (the JAX backend; None elsewhere).
        flops_note (text): why a user's model's count is unchecked, or why flops_per_sample (and so
            MFU) is missing: the layer count and XLA's differ by more than 10%.
    """

    warmup_sec: float
    steady_executions: int
    samples_per_sec: Optional[float]
    samples_per_sec_mean: Optional[float]
    samples_per_sec_iqr: Optional[tuple]
    setup_sec: float
    train_sec: float
    validation_sec: float
    other_sec: float
    wall_sec: float
    fit_sec: float
    end_to_end_samples_per_sec: Optional[float]
    setup_parts: list
    timeline: list
    persistent_iterators: dict
    replicas: int
    workers: int
    replicas_simulated: bool
    device_kind: str
    backend: str
    precision: str
    compute_dtype: str
    variable_dtype: str
    loss_scale: Optional[float]
    steps_per_execution: int
    jit_compile: bool
    global_batch_size: int
    fused_optimizer: bool
    per_replica_batch_size: int
    dropped_samples_per_epoch: int
    steps: int
    executions: int
    updates_applied: int
    skipped_updates: int
    final_loss: Optional[float]
    final_accuracy: Optional[float]
    final_val_loss: Optional[float]
    final_val_accuracy: Optional[float]
    target_accuracy: Optional[float]
    time_to_target_sec: Optional[float]
    epochs_run: int
    stopped_at_target: bool
    time_to_target_note: Optional[str]
    effective_learning_rate: float
    schedule: str
    label_smoothing: float
    mixup_alpha: float
    train_accuracy_on_mixed_targets: bool
    data_wait_sec: Optional[float]
    data_wait_share: Optional[float]
    input_batches_per_sec: Optional[float]
    warmup_executions: int
    instrumentation: dict
    validation_traced_ahead: Optional[dict]
    init_from: Optional[int]
    pretrained: bool
    flops_per_sample: Optional[float]
    forward_flops_per_sample: Optional[float]
    flops_uncounted: Optional[list]
    freeze_epochs: Optional[int]
    finetune_learning_rate: Optional[float]
    test_accuracy: Optional[float] = None
    test_samples: Optional[int] = None
    test_sec: Optional[float] = None
    test_split: Optional[str] = None
    test_note: Optional[str] = None
    flops_all_taps_per_sample: Optional[float] = None
    flops_phases: Optional[list] = None
    flops_source: Optional[str] = None
    flops_xla_per_sample: Optional[float] = None
    flops_note: Optional[str] = None

    def to_dict(self) -> dict:
        """The stored summary: every field in declaration order, values as they are (not copied)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict) -> "RunSummary":
        """The inverse of `to_dict`. Raises: ValueError naming the keys that are missing or
        not fields (a stored summary also holds what the worker adds: mfu, run_id, ...)."""
        import dataclasses

        names = [f.name for f in fields(cls)]
        required = [f.name for f in fields(cls) if f.default is dataclasses.MISSING]
        missing, extra = [n for n in required if n not in d], [k for k in d if k not in names]
        if missing or extra:
            raise ValueError(f"not a RunSummary: missing {missing}, not fields {extra}")
        return cls(**d)


def build_summary(cfg, setup, prep, rec, tl, ahead=None) -> RunSummary:
    """The summary of a finished run.

    cfg: engine.config.RunConfig; setup: DeviceSetup; prep: engine.training.build.Prepared;
    rec: engine.training.recorder.Recorder after fit; tl: the worker's Timeline; ahead:
    engine.training.eval_trace.EvalTraceAhead or None.
    """
    from engine.report.measure import steady_state

    plan, model = prep.plan, prep.model
    timing = {**steady_state(rec.durations, rec.batches, cfg.batch_size, warmup_flags=rec.warmups,
                             samples=rec.samples),
              **time_accounts(tl, sum(rec.samples))}  # the timeline's warmup_sec wins, as stored
    return RunSummary(
        **timing, **settings(cfg, setup, plan), loss_scale=loss_scale(model),
        fused_optimizer=fused_optimizer_on(model), **progress(cfg, rec), **input_figures(rec, plan),
        instrumentation={"batch_hooks_sec": rec.hook_sec},
        validation_traced_ahead=None if ahead is None else {"sec": ahead.traced_sec, "error": ahead.error},
        **{k: plan.get(k) for k in FLOPS_KEYS}, **transfer_figures(cfg, prep))


def settings(cfg, setup, plan: dict) -> dict:
    """Summary fields that restate how the run was set up (config, devices, plan)."""
    return {
        "persistent_iterators": plan["persistent_iterators"],
        "replicas": setup.replicas, "workers": setup.workers, "replicas_simulated": setup.simulated,
        "device_kind": setup.kind, "backend": cfg.backend, "precision": cfg.precision,
        "compute_dtype": plan["compute_dtype"], "variable_dtype": plan["variable_dtype"],
        "steps_per_execution": cfg.steps_per_execution, "jit_compile": cfg.jit_compile,
        "global_batch_size": cfg.batch_size, "per_replica_batch_size": plan["per_replica_batch_size"],
        "dropped_samples_per_epoch": plan["dropped_samples_per_epoch"],
        "effective_learning_rate": plan["effective_learning_rate"],
        "schedule": cfg.schedule, "label_smoothing": cfg.label_smoothing, "mixup_alpha": cfg.mixup_alpha,
        "train_accuracy_on_mixed_targets": cfg.mixup_alpha > 0,
        "init_from": cfg.init_from, "pretrained": cfg.pretrained,
    }


def progress(cfg, rec) -> dict:
    """Summary fields of how far the run got: steps, executions, updates, the last epoch's
    logs, and the target (`rec.target`, fraction) with the time it was reached (s)."""
    logs, target = rec.epoch_logs, rec.target
    return {
        "steps": rec.step, "executions": len(rec.durations), **update_counts(rec.updates),
        "final_loss": _num(logs.get("loss")), "final_accuracy": _num(logs.get("accuracy")),
        "final_val_loss": _num(logs.get("val_loss")), "final_val_accuracy": _num(logs.get("val_accuracy")),
        "target_accuracy": target, "time_to_target_sec": rec.time_to_target, "epochs_run": rec.epochs_done,
        "stopped_at_target": bool(cfg.stop_at_target and rec.time_to_target is not None),
        "time_to_target_note": (f"not reached in {rec.epochs_done} epochs"
                                if target is not None and rec.time_to_target is None else None),
        "warmup_executions": int(sum(rec.warmups)),
    }


def input_figures(rec, plan: dict) -> dict:
    """Input pipeline: seconds the steady executions waited for data (s), their share of
    those executions' time, and the pipeline's own rate (batches/s, from the plan)."""
    waits = [w for w, warm in zip(rec.data_waits, rec.warmups) if w is not None and not warm]
    steady_secs = sum(d for d, warm in zip(rec.durations, rec.warmups) if not warm)
    return {"data_wait_sec": sum(waits) if waits else None,
            "data_wait_share": (sum(waits) / steady_secs) if waits and steady_secs > 0 else None,
            "input_batches_per_sec": plan["input_batches_per_sec"]}


def transfer_figures(cfg, prep) -> dict:
    """Frozen epochs and the fine-tuning learning rate, for a run that took layers over."""
    if not prep.taken:
        return {"freeze_epochs": None, "finetune_learning_rate": None}
    return {"freeze_epochs": cfg.freeze_epochs,
            "finetune_learning_rate": next((cfg.learning_rate * p.lr_factor for p in prep.phases
                                            if not p.frozen), None)}


def time_accounts(tl, samples: int) -> dict:
    """Summary fields from a finished timeline: setup_sec, warmup_sec, train_sec,
    validation_sec, other_sec, wall_sec (s; the parts add up to wall_sec),
    fit_sec (wall time of training: everything after setup), the end-to-end
    throughput (samples trained / fit_sec, samples/s), the setup's parts and
    the spans themselves ([kind, start s, end s, epoch, note], s since the
    worker process started)."""
    from engine.training.timeline import setup_parts, totals

    spans = list(tl.spans)
    out = totals(spans)
    fit = out["wall_sec"] - out["setup_sec"]
    out.update(fit_sec=fit, end_to_end_samples_per_sec=(samples / fit) if fit > 0 else None,
               setup_parts=setup_parts(tl.marks, out["setup_sec"]),
               timeline=[[k, round(a, 4), round(b, 4), ep, note] for k, a, b, ep, note in spans])
    return out


def update_counts(updates) -> dict:
    """Summary figures of an engine.training.loss_scale.UpdateTracker: `steps` counts
    batches run, `updates_applied` the optimizer updates really applied (fewer when
    float16 loss scaling skipped some), `skipped_updates` the difference."""
    return {"updates_applied": updates.applied, "skipped_updates": updates.skipped}


def fused_optimizer_on(model) -> bool:
    """Whether the model's optimizer applies fused updates (engine.training.fused_optimizer)."""
    from engine.training.fused_optimizer import is_fused

    return bool(model.optimizer is not None and is_fused(model.optimizer))


def loss_scale(model) -> Optional[float]:
    """Current dynamic loss scale for mixed_float16 (Keras wraps the optimizer in
    compile: LossScaleOptimizer), else None."""
    from keras.optimizers import LossScaleOptimizer

    opt = model.optimizer
    if isinstance(opt, LossScaleOptimizer):
        import keras

        return float(keras.ops.convert_to_numpy(opt.dynamic_scale))
    return None


def _num(v):
    return None if v is None else float(v)
