"""One measured training run inside a worker process (imports TensorFlow, or JAX
for backend jax: then nothing here imports TensorFlow).

Order matters: devices first (before anything initialises the TF runtime),
then the dtype policy (before the model is built), then data, model, fit.
A transfer-learning run (engine.training.transfer) fits up to two phases, frozen then
fine-tuned, with one Recorder, so time, steps and executions run on; the
first execution after the recompile between them is flagged warm-up too.
"""
from __future__ import annotations

import gc
import os
import platform
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from engine.config import RunConfig

# gc.freeze() before fit: right in a worker, which exits after its one run. The test suite
# runs many in one process and switches it off (tests/conftest.py): frozen garbage piles up.
FREEZE_HEAP = True


class RunFailed(RuntimeError):
    """Training ended in a way the user must see as `failed` (one-line message)."""


@dataclass
class Outcome:
    """What `train` returns: final status ('completed' | 'cancelled' | 'failed'),
    the summary dict, an error line, and the trained model (or None)."""

    status: str
    summary: dict
    error: Optional[str] = None
    model: object = None
    extra: dict = field(default_factory=dict)


def environment(setup) -> dict:
    """Versions, devices and host, stored with every run (reproducibility). Versions come
    from package metadata: a JAX run must not import TensorFlow to name it."""
    import keras

    from engine.hardware.machine import cpu_model, installed_backends

    versions = installed_backends()
    return {
        "hostname": socket.gethostname(), "python": platform.python_version(),
        "backend": keras.backend.backend(), "tensorflow": versions.get("tensorflow"),
        "jax": versions.get("jax"), "jaxlib": versions.get("jaxlib"),
        "keras": keras.__version__, "cpu_model": cpu_model(),
        "logical_cores": os.cpu_count(), **usable_cpus_env(setup),
        "device_kind": setup.kind, "devices": setup.device_names,
        "physical_devices": setup.physical, "replicas_simulated": setup.simulated,
    }


def usable_cpus_env(setup) -> dict:
    """The CPUs this worker may use (affinity, cgroup quota) and the TF thread
    pool sizes set from them (engine.training.devices.configure; None = TF's default)."""
    from engine.hardware.machine import cpu_facts

    f = cpu_facts()
    return {"usable_cpus": f["usable_cpus"], "cpu_quota": f["cpu_quota"],
            "tf_threads": getattr(setup, "threads", None)}


@dataclass
class Prepared:
    """A compiled model with its data: what `prepare` returns.

    phases: engine.training.transfer.Phase list (one phase unless layers were taken over);
    taken: the taken-over layers (frozen in a frozen phase); meter: the
    pipeline's DataWaitMeter (None when not measured); compile: recompiles the
    model for a phase (used between phases).
    """

    model: object
    train_ds: object
    val_ds: object
    callbacks: list
    steps_per_epoch: int
    plan: dict
    phases: list = field(default_factory=list)
    taken: list = field(default_factory=list)
    meter: object = None
    compile: Optional[Callable] = None


def prepare(cfg: RunConfig, setup, data=None, probe_input: bool = False, fast_fit: bool = False,
            timeline=None) -> Prepared:
    """Set the dtype policy and seed, build the input pipelines (tf.data, or NumPy
    PyDatasets on JAX), and build and compile the model under `setup.strategy`
    (engine.training.device_setup.DeviceSetup; on JAX its distribution
    is already set).

    `data` (engine.data.datasets.Split) is loaded from `cfg` when omitted.
    probe_input: time a separate copy of the training pipeline on its own
    (plan['input_batches_per_sec'], ~2 s at most).
    fast_fit: build the model once per compile from the data's element spec
    (no per-epoch symbolic build) and, where epochs stay whole, feed endless
    datasets so that one training and one validation iterator serve the whole
    run (engine.training.iterators); pass plan['fit_args'] to fit.
    timeline: engine.training.timeline.Timeline; marks 'data' and 'model'.
    Raises: RunFailed for a TPU batch that does not divide over its cores, data
    that cannot be read or downloaded, or a source run that cannot be used.
    """
    import keras

    from engine.data import datasets
    from engine.training import models
    from engine.training import transfer

    jax = cfg.backend == "jax"
    if jax:  # NumPy + keras.utils.PyDataset: a JAX run never imports TensorFlow
        from engine.data import np_pipeline as pipeline
    else:
        from engine.data import pipeline

    keras.mixed_precision.set_dtype_policy(cfg.precision)  # before the model is built
    if jax:  # keras.utils.set_random_seed would import TensorFlow to seed it too
        from engine.training.jax_steps import set_random_seed

        set_random_seed(cfg.seed)
    else:
        keras.utils.set_random_seed(cfg.seed)
    if setup.kind == "TPU" and cfg.batch_size % setup.replicas:
        raise RunFailed(f"batch_size {cfg.batch_size} is not divisible by the TPU's "
                        f"{setup.replicas} cores; use a multiple of {setup.replicas}")
    t_setup = time.perf_counter()
    try:
        data = data if data is not None else datasets.load(cfg)
    except datasets.DataUnavailable as e:
        raise RunFailed(str(e)) from None
    if timeline is not None:
        timeline.mark("data")
    replicas = setup.replicas
    opts = dict(cache=cfg.data_cache, parallel_map=cfg.data_parallel_map, prefetch=cfg.data_prefetch)
    # The meter's variable is captured by a tf.data function: measured in one
    # process only (TPU hosts and multi-worker sharding rewrite input pipelines).
    meter = pipeline.DataWaitMeter() if setup.kind != "TPU" and setup.workers == 1 else None
    from engine.training import compiled_metrics, iterators, replica_input

    # On JAX, mixup runs on the device inside the train step (jax_steps.mix_in_step), not here.
    host_mixup = 0.0 if jax else cfg.mixup_alpha
    steps_per_epoch = cfg.steps_per_epoch()
    val_steps = iterators.batches_per_pass(len(data.x_val), cfg.batch_size, drop_remainder=False)
    # The one-iterator-per-run path bypasses a method of Keras's TensorFlow trainer: TF only.
    build_once = fast_fit and not jax and iterators.supported()
    persistent = build_once and iterators.persistent_ok(steps_per_epoch, cfg.steps_per_execution)
    val_persistent = persistent and iterators.persistent_ok(val_steps, cfg.steps_per_execution)

    def make_val(shard=None):
        return pipeline.eval_dataset(data.x_val, data.y_val, data.classes, cfg.batch_size, replicas,
                                     **({"repeat": True} if val_persistent else {}),
                                     **({"shard": shard} if shard else {}), **opts)  # np_pipeline has no shard

    def make_train(shard=None, meter=None):
        return pipeline.train_dataset(data.x_train, data.y_train, data.classes, cfg.batch_size,
                                      replicas, cfg.seed, host_mixup, meter=meter,
                                      **({"repeat": True} if persistent else {}),
                                      **({"shard": shard} if shard else {}), **opts)

    # Simulated CPU replicas: one host pipeline each, no MultiDeviceIterator (replica_input).
    split = not jax and replica_input.eligible(setup.kind, replicas, setup.workers, cfg.batch_size, cfg.data_cache)
    val_split = split and pipeline.splits_evenly(len(data.x_val), cfg.batch_size, replicas)
    if split:  # the data wait is metered on replica 0's pipeline (a step waits for every replica alike)
        train_ds, train_spec = replica_input.per_replica(
            setup.strategy, lambda i, n: make_train((i, n), meter if i == 0 else None))
    else:
        train_ds = make_train(meter=meter)
        train_spec = None if jax else train_ds.element_spec  # a JAX PyDataset has none (nor needs one)
    val_ds = replica_input.per_replica(setup.strategy, lambda i, n: make_val((i, n)))[0] if val_split else make_val()
    input_rate = None
    if probe_input:  # a separate copy: iterating the real one would move its shuffle seeds
        input_rate = pipeline.input_rate(pipeline.train_dataset(
            data.x_train, data.y_train, data.classes, cfg.batch_size, replicas, cfg.seed, host_mixup,
            **opts))
    callbacks = []
    if cfg.reduce_on_plateau:
        callbacks.append(keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2))
    with setup.strategy.scope():
        if cfg.init_from is not None:
            try:
                model, taken = transfer.build_from_run(cfg, data.shape, data.classes)
            except transfer.TransferError as e:
                raise RunFailed(str(e)) from None
        else:
            model = models.build(cfg.model, data.shape, data.classes, image_size=cfg.input_size,
                                 pretrained=cfg.pretrained)
            taken = transfer.taken_part(model) if cfg.pretrained else []
    phases = transfer.phases(cfg, bool(taken))

    def compile_phase(phase) -> None:
        """Freeze or unfreeze the taken-over part and compile for `phase`: a new
        optimizer at lr_factor x the learning rate (schedules scaled alike) whose
        schedules continue from the phase's first step."""
        if taken:
            transfer.set_frozen(taken, phase.frozen)
        pcfg = cfg if phase.lr_factor == 1.0 else cfg.replace(
            learning_rate=cfg.learning_rate * phase.lr_factor,
            max_lr=None if cfg.max_lr is None else cfg.max_lr * phase.lr_factor)
        with setup.strategy.scope():  # an optimizer keeps the strategy it was made under
            optimizer = _optimizer(pcfg, steps_per_epoch, phase.first_epoch * steps_per_epoch)
            if cfg.fused_optimizer:
                from engine.training import fused_optimizer

                fused_optimizer.fuse(optimizer)  # config check: adam or sgd on TensorFlow, so it fuses
            model.compile(
                optimizer=optimizer,
                loss=_loss(cfg),
                metrics=_metrics(cfg),
                steps_per_execution=cfg.steps_per_execution,
                jit_compile=cfg.jit_compile,  # always explicit, never Keras's "auto"
            )
        if build_once:  # metrics built from the spec: their read-out can be traced now
            iterators.build_once(model, train_spec)
            if compiled_metrics.worth_it(setup.strategy, setup.workers):
                compiled_metrics.compile_readout(model)

    compile_phase(phases[0])
    if jax and cfg.mixup_alpha > 0:
        from engine.training.jax_steps import mix_in_step

        mix_in_step(model, cfg.mixup_alpha, cfg.seed)
    if setup.workers > 1:
        from engine.training import multiworker

        multiworker.apply(model, next(iter(train_ds)))
    if timeline is not None:
        timeline.mark("model")
    if build_once and setup.workers == 1 and setup.kind != "TPU":  # fit never pulls a batch before training
        train_ds = iterators.prestart(train_ds, setup.strategy)
        val_ds = iterators.prestart(val_ds, setup.strategy)
        if timeline is not None:
            timeline.mark("input")
    plan = {
        "n_train": int(len(data.x_train)), "n_val": int(len(data.x_val)),
        "steps_per_epoch": steps_per_epoch, "total_steps": steps_per_epoch * cfg.epochs,
        "epochs": cfg.epochs, "global_batch_size": cfg.batch_size,
        "per_replica_batch_size": cfg.batch_size // replicas, "replicas": replicas,
        "workers": setup.workers, "per_worker_batch_size": cfg.batch_size // setup.workers,
        "replicas_simulated": setup.simulated, "device_kind": setup.kind,
        "dropped_samples_per_epoch": cfg.dropped_per_epoch() if replicas > 1 else 0,
        "compute_dtype": model.dtype_policy.compute_dtype,
        "variable_dtype": model.dtype_policy.variable_dtype,
        "effective_learning_rate": _initial_lr(cfg),
        "setup_sec": time.perf_counter() - t_setup,
        "model": cfg.model, "input_shape": list(data.shape), "classes": int(data.classes),
        "class_names": list(data.class_names), "validation_data": data.validation,
        "data_pipeline": {"cache": cfg.data_cache, "parallel_map": cfg.data_parallel_map,
                          "prefetch": cfg.data_prefetch},
        "input_batches_per_sec": input_rate,
        "backend": cfg.backend,
        "mixup_on": ("device (in the train step)" if jax else "host (tf.data)") if cfg.mixup_alpha > 0 else None,
        "init_from": cfg.init_from, "pretrained": cfg.pretrained, "image_size": cfg.input_size or None,
        "taken_over_params": int(sum(_size(w.shape) for layer in taken for w in layer.weights)),
        "phases": [{"first_epoch": p.first_epoch, "end_epoch": p.end_epoch, "frozen": p.frozen,
                    "learning_rate": cfg.learning_rate * p.lr_factor} for p in phases],
    }
    plan["fit_args"] = {}
    plan["persistent_iterators"] = {"train": persistent, "validation": val_persistent}
    plan["input_per_replica"] = {"train": split, "validation": val_split}
    if persistent:
        plan["fit_args"]["steps_per_epoch"] = steps_per_epoch
    if val_persistent:
        plan["fit_args"]["validation_steps"] = val_steps
        callbacks.insert(0, iterators.PersistentValidation())
    return Prepared(model, train_ds, val_ds, callbacks, steps_per_epoch, plan, phases, taken, meter,
                    compile_phase)


def train(cfg: RunConfig, sink: Callable[[str, tuple], None], stop_event: threading.Event,
          on_setup: Callable[[dict, dict], None] = lambda env, plan: None,
          on_start: Optional[Callable[[float], None]] = None,
          extra_callbacks: Optional[list] = None, cluster=None, timeline=None) -> Outcome:
    """Run `cfg` to the end and measure it.

    Args:
        sink: receives metric rows (see engine.training.recorder.Recorder).
        stop_event: set to stop at the next execution (status 'cancelled').
        on_setup: called with (environment, plan) once devices, data and model exist.
        on_start: called with the perf_counter origin when fit begins.
        cluster: engine.cluster.Cluster for a multi-worker run (None: this process only).
        timeline: engine.training.timeline.Timeline of this worker process (default:
            a new one); its spans and totals go into the summary.

    Returns: Outcome. Raises: engine.training.devices.DeviceError, RunFailed.
    """
    from engine.training.timeline import Timeline

    tl = timeline if timeline is not None else Timeline()
    import keras  # noqa: F401 - imported here so that its cost is its own setup part

    if cfg.backend == "jax":
        tl.mark("imports")
        from engine.training import jax_devices

        setup = jax_devices.configure(cfg.device_type, cfg.devices)
    else:
        import tensorflow  # noqa: F401

        tl.mark("imports")
        from engine.training import devices

        setup = devices.configure(cfg.device_type, cfg.devices, cluster)  # first TF action
    tl.mark("devices")
    from engine.report.measure import steady_state
    from engine.training.recorder import Recorder

    prep = prepare(cfg, setup, probe_input=True, fast_fit=True, timeline=tl)
    model, plan, callbacks, steps_per_epoch = prep.model, prep.plan, prep.callbacks, prep.steps_per_epoch
    train_ds, val_ds, replicas = prep.train_ds, prep.val_ds, setup.replicas
    # The worker's clock in wall-clock terms, for latency measurements (benchmarks/latency.py).
    plan["clock_origin"] = time.time() - tl.now()
    plan["setup_marks"] = dict(tl.marks)
    plan.update(flops_plan(model))
    on_setup(environment(setup), plan)

    from engine.data.meta import target_for

    target = target_for(cfg.target_accuracy, cfg.dataset)
    from engine.training import eval_trace
    from engine.training.iterators import started_iterator

    # Trace validation while the first epoch trains (TF, iterators started in setup, one phase).
    its = started_iterator(train_ds), started_iterator(val_ds)
    ahead = (eval_trace.EvalTraceAhead(model, *its)
             if eval_trace.ENABLED and cfg.backend != "jax" and None not in its and len(prep.phases) == 1 else None)
    if ahead is not None:
        callbacks = [*callbacks, ahead.callback()]
    rec = Recorder(cfg.batch_size, steps_per_epoch, sink, stop_event, target, on_start=on_start,
                   busy_fn=ahead.busy if ahead is not None else None,
                   data_wait_fn=prep.meter.total if prep.meter is not None else None,
                   lr_fn=_lr_table(cfg, steps_per_epoch),
                   epoch_samples=plan["n_train"] - plan["dropped_samples_per_epoch"],
                   timeline=tl, plain_val_loss=cfg.label_smoothing == 0, stop_at_target=cfg.stop_at_target)
    fit_args = plan["fit_args"]
    # Everything made so far (the imports' ~450,000 objects, data, model) lives as long as the
    # run: move it out of the garbage collector's reach. Otherwise the first full collection
    # lands inside the first trace and walks it all: 190 ms of a digits run's warm-up, measured.
    if FREEZE_HEAP:
        gc.freeze()
    if cfg.backend == "jax":  # the step is compiled again for an epoch's short last batch
        from engine.training.jax_steps import ShapeWarmup

        callbacks = [ShapeWarmup(rec, steps_per_epoch, cfg.steps_per_execution,
                                 replicas == 1 and plan["n_train"] % cfg.batch_size != 0), *callbacks]
    for i, phase in enumerate(prep.phases):
        if stop_event.is_set():  # Stop pressed during setup: no step to wait for
            break
        if i > 0:
            if rec.nan_at or model.stop_training:
                break
            prep.compile(phase)  # unfreeze at the lower learning rate: traced again
            rec.expect_warmup()
        model.fit(train_ds, validation_data=val_ds, initial_epoch=phase.first_epoch, epochs=phase.end_epoch,
                  verbose=0, shuffle=False, callbacks=[rec, *callbacks, *(extra_callbacks or [])], **fit_args)

    st = steady_state(rec.durations, rec.batches, cfg.batch_size, warmup_flags=rec.warmups, samples=rec.samples)
    logs = rec.epoch_logs
    steady_waits = [w for w, warm in zip(rec.data_waits, rec.warmups) if w is not None and not warm]
    steady_secs = sum(d for d, warm in zip(rec.durations, rec.warmups) if not warm)
    summary = {
        **st,
        **time_accounts(tl, sum(rec.samples)),
        "persistent_iterators": plan["persistent_iterators"],
        "replicas": replicas, "workers": setup.workers, "replicas_simulated": setup.simulated,
        "device_kind": setup.kind, "backend": cfg.backend, "precision": cfg.precision,
        "compute_dtype": plan["compute_dtype"], "variable_dtype": plan["variable_dtype"],
        "loss_scale": _loss_scale(model), "steps_per_execution": cfg.steps_per_execution,
        "jit_compile": cfg.jit_compile, "global_batch_size": cfg.batch_size,
        "fused_optimizer": fused_optimizer_on(model),
        "per_replica_batch_size": plan["per_replica_batch_size"],
        "dropped_samples_per_epoch": plan["dropped_samples_per_epoch"],
        "steps": rec.step, "executions": len(rec.durations), **update_counts(rec.updates),
        "final_loss": _num(logs.get("loss")), "final_accuracy": _num(logs.get("accuracy")),
        "final_val_loss": _num(logs.get("val_loss")),
        "final_val_accuracy": _num(logs.get("val_accuracy")),
        "target_accuracy": target, "time_to_target_sec": rec.time_to_target,
        "epochs_run": rec.epochs_done,
        "stopped_at_target": bool(cfg.stop_at_target and rec.time_to_target is not None),
        "time_to_target_note": (f"not reached in {rec.epochs_done} epochs"
                                if target is not None and rec.time_to_target is None else None),
        "effective_learning_rate": plan["effective_learning_rate"],
        "schedule": cfg.schedule, "label_smoothing": cfg.label_smoothing,
        "mixup_alpha": cfg.mixup_alpha,
        "train_accuracy_on_mixed_targets": cfg.mixup_alpha > 0,
        # Input pipeline: seconds the steady executions waited for data, and their share of time.
        "data_wait_sec": sum(steady_waits) if steady_waits else None,
        "data_wait_share": (sum(steady_waits) / steady_secs) if steady_waits and steady_secs > 0 else None,
        "input_batches_per_sec": plan["input_batches_per_sec"],
        "warmup_executions": int(sum(rec.warmups)),
        # What measuring costs the loop: time in the Recorder's batch hooks (the worker adds
        # its writer thread's CPU time); benchmarks/overhead.py prints it as a share of train_sec.
        "instrumentation": {"batch_hooks_sec": rec.hook_sec},
        # The evaluation step traced on a background thread during the first epoch: its wall
        # seconds there, or the line that made validation trace it as usual (None: not tried).
        "validation_traced_ahead": None if ahead is None else {"sec": ahead.traced_sec, "error": ahead.error},
        "init_from": cfg.init_from, "pretrained": cfg.pretrained,
        **{k: plan.get(k) for k in ("flops_per_sample", "forward_flops_per_sample", "flops_uncounted")},
        "freeze_epochs": cfg.freeze_epochs if prep.taken else None,
        "finetune_learning_rate": next((cfg.learning_rate * p.lr_factor for p in prep.phases if not p.frozen), None)
        if prep.taken else None,
    }
    if rec.nan_at:
        e, s = rec.nan_at
        return Outcome("failed", summary, f"loss became NaN at epoch {e}, step {s}" + rec.updates.nan_note(), model)
    if rec.updates.stalled:
        return Outcome("failed", summary, rec.updates.stall_message(), model)
    if stop_event.is_set():
        return Outcome("cancelled", summary, "cancelled by the user", model)
    return Outcome("completed", summary, None, model)


def flops_plan(model) -> dict:
    """{'flops_per_sample': training FLOPs per sample (engine.training.flops), 'forward_flops_per_sample',
    'flops_uncounted': layers with weights left out}; None figures (and the reason on
    stderr) for a model that cannot be counted: MFU is then missing, the run goes on."""
    import sys

    from engine.training import flops

    try:
        c = flops.count(model)
    except Exception as e:  # noqa: BLE001 - a figure for the report, never a reason to fail the run
        print(f"FLOPs not counted: {type(e).__name__}: {e}", file=sys.stderr)
        return {"flops_per_sample": None, "forward_flops_per_sample": None, "flops_uncounted": None}
    return {"flops_per_sample": c["flops_per_sample"] or None, "forward_flops_per_sample": c["forward_flops_per_sample"],
            "flops_uncounted": c["uncounted"]}


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


def _lr_table(cfg: RunConfig, steps_per_epoch: int):
    """LR per step from the schedule's own formulas (engine.lr_math), so the
    recorder need not read the optimizer every execution; None where the LR
    can change at run time (plateau reducer, fine-tuning phases)."""
    if cfg.reduce_on_plateau or cfg.init_from is not None or cfg.pretrained:
        return None
    import numpy as np

    from engine.lr_math import lr_at

    table = lr_at(cfg, np.arange(max(cfg.epochs * steps_per_epoch, 1)), steps_per_epoch)
    last = len(table) - 1
    return lambda step: table[min(max(step - 1, 0), last)]


def _num(v):
    return None if v is None else float(v)


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _optimizer(cfg: RunConfig, steps_per_epoch: int, start_step: int = 0):
    """engine.training.schedules.build_optimizer with its schedules read from `start_step`
    on (a later phase continues them where they stand). The optimizer itself
    starts fresh at step 0, so Adam's bias correction fits its new moments."""
    from engine.training import schedules

    return schedules.shift(schedules.build_optimizer(cfg, steps_per_epoch), start_step)


def _initial_lr(cfg: RunConfig) -> float:
    from engine.lr_math import effective_lr

    return float(effective_lr(cfg))


def _metrics(cfg: RunConfig) -> list:
    """Accuracy, plus plain categorical cross-entropy ('ce', logged as val_ce on
    validation) when the loss is label-smoothed: curves are compared on plain
    cross-entropy, which the smoothed loss is not (Szegedy et al., 2016)."""
    import keras

    out = [keras.metrics.CategoricalAccuracy(name="accuracy")]
    if cfg.label_smoothing > 0:
        out.append(keras.metrics.CategoricalCrossentropy(name="ce"))
    return out


def _loss(cfg: RunConfig):
    import keras

    # The head is float32 softmax, so the loss is computed in float32 too.
    return keras.losses.CategoricalCrossentropy(label_smoothing=cfg.label_smoothing)


def fused_optimizer_on(model) -> bool:
    """Whether the model's optimizer applies fused updates (engine.training.fused_optimizer)."""
    from engine.training.fused_optimizer import is_fused

    return bool(model.optimizer is not None and is_fused(model.optimizer))


def _loss_scale(model) -> Optional[float]:
    """Current dynamic loss scale for mixed_float16 (Keras wraps the optimizer in
    compile: LossScaleOptimizer), else None."""
    from keras.optimizers import LossScaleOptimizer

    opt = model.optimizer
    if isinstance(opt, LossScaleOptimizer):
        import keras

        return float(keras.ops.convert_to_numpy(opt.dynamic_scale))
    return None
