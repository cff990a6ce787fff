"""Everything a run builds before its first step: dtype policy and seed, data, input
pipelines, model and optimizer (inside a worker process; TensorFlow, or NumPy and JAX).

Order matters: the dtype policy before the model is built, the seed before the
pipelines shuffle, the strategy's scope around the model and its optimizer.
`prepare` returns a compiled `Prepared`; engine.training.train runs it.
"""
from __future__ import annotations

import os
import platform
import socket
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from engine.config import RunConfig, user_model
from engine.base.errors import ConfigError


class RunFailed(RuntimeError):
    """Training ended in a way the user must see as `failed` (one-line message)."""


@dataclass
class Prepared:
    """A compiled model with its data: what `prepare` returns.

    phases: engine.training.transfer.Phase list (one phase unless layers were taken over);
    taken: the taken-over layers (frozen in a frozen phase); meter: the
    pipeline's DataWaitMeter (None when not measured); compile: recompiles the
    model for a phase (used between phases); test: makes the held-out test set's
    pipeline, or None when the data has no test samples.
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
    test: Optional[Callable] = None


@dataclass
class Inputs:
    """The input pipelines of a run and how fit iterates them.

    train_ds, val_ds: batches of the global batch size (tf.data datasets, or PyDatasets on
    JAX); train_spec: the training element spec for the one symbolic build (None on JAX);
    meter: DataWaitMeter or None; val_steps: validation batches per pass (steps);
    build_once / persistent / val_persistent: the one-iterator-per-run path
    (engine.training.iterators); split / val_split: one host pipeline per simulated
    replica (engine.training.replica_input); input_rate: the training pipeline alone,
    batches/s (None when not probed).
    """

    train_ds: object
    val_ds: object
    train_spec: object
    meter: object
    val_steps: int
    build_once: bool
    persistent: bool
    val_persistent: bool
    split: bool
    val_split: bool
    input_rate: Optional[float] = None


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
    timeline: engine.training.timeline.Timeline; marks 'data', 'model' and 'input'.
    Raises: RunFailed for a TPU batch that does not divide over its cores, data
    that cannot be read or downloaded, or a source run that cannot be used.
    """
    import keras

    from engine.training import techniques, transfer

    pipeline = _import_builders(cfg)
    policy_and_seed(cfg, setup)
    t_setup = time.perf_counter()
    data = _load(cfg, data, timeline)
    inputs = build_inputs(cfg, setup, data, pipeline, fast_fit, probe_input)
    callbacks = []
    if cfg.reduce_on_plateau:
        callbacks.append(keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2))
    callbacks += techniques.ema_callback(cfg)
    model, taken = build_model(cfg, setup, data)
    phases = (techniques.progressive_phases(cfg, transfer.Phase) if cfg.progressive_epochs
              else transfer.phases(cfg, bool(taken)))
    augment = techniques.StepAugment(cfg.cutmix_factor, cfg.seed, phases[0].size)
    compile_phase = phase_compiler(cfg, setup, model, taken, inputs, augment)
    compile_phase(phases[0])
    _after_compile(cfg, setup, model, inputs.train_ds)
    _techniques_after_compile(cfg, model, augment, phases)
    _mark(timeline, "model")
    _prestart(setup, inputs, timeline)
    plan = build_plan(cfg, setup, data, model, taken, phases, inputs, time.perf_counter() - t_setup)
    if inputs.val_persistent:
        from engine.training.keras_patches import eval_iterator_reset

        callbacks.insert(0, eval_iterator_reset.PersistentValidation())
    plan["n_test"] = int(len(data.x_test)) if data.x_test is not None else 0
    plan["test_data"] = data.test

    def make_test():  # built after training, outside every clock; one replica: read by the model directly
        return pipeline.eval_dataset(data.x_test, data.y_test, data.classes, cfg.batch_size, 1)

    return Prepared(model, inputs.train_ds, inputs.val_ds, callbacks, cfg.steps_per_epoch(), plan, phases,
                    taken, inputs.meter, compile_phase, make_test if plan["n_test"] else None)


def _mark(timeline, name: str) -> None:
    if timeline is not None:
        timeline.mark(name)


def _import_builders(cfg: RunConfig):
    """Import what `prepare` uses before its clock starts (so each import's cost stays in the
    setup part it always was in) and return the pipeline module: engine.data.pipeline
    (tf.data), or engine.data.np_pipeline on JAX (NumPy + keras.utils.PyDataset: a JAX run
    never imports TensorFlow); both have the same signatures."""
    from engine.data import datasets  # noqa: F401
    from engine.training import models  # noqa: F401

    if cfg.backend == "jax":
        from engine.data import np_pipeline

        return np_pipeline
    from engine.data import pipeline

    return pipeline


def policy_and_seed(cfg: RunConfig, setup) -> None:
    """Set Keras's dtype policy (before the model is built) and seed every generator.
    Raises: RunFailed when a TPU's cores do not divide the global batch size."""
    import keras

    keras.mixed_precision.set_dtype_policy(cfg.precision)
    if cfg.backend == "jax":  # keras.utils.set_random_seed would import TensorFlow to seed it too
        from engine.training.jax_steps import set_random_seed

        set_random_seed(cfg.seed)
    else:
        keras.utils.set_random_seed(cfg.seed)
    if setup.kind == "TPU" and cfg.batch_size % setup.replicas:
        raise RunFailed(f"batch_size {cfg.batch_size} is not divisible by the TPU's "
                        f"{setup.replicas} cores; use a multiple of {setup.replicas}")


def _load(cfg: RunConfig, data, timeline):
    """`data`, or the data set `cfg` names (engine.data.datasets.Split); marks 'data'.
    Raises: RunFailed when it cannot be read or downloaded."""
    from engine.data import datasets

    try:
        data = data if data is not None else datasets.load(cfg)
    except datasets.DataUnavailable as e:
        raise RunFailed(str(e)) from None
    _mark(timeline, "data")
    return data


def build_inputs(cfg: RunConfig, setup, data, pipeline, fast_fit: bool, probe_input: bool) -> Inputs:
    """The training and validation pipelines of `data` for `setup`, made with `pipeline`
    (engine.data.pipeline or np_pipeline; see `prepare` for fast_fit and probe_input)."""
    from engine.training import replica_input

    jax = cfg.backend == "jax"
    replicas = setup.replicas
    opts = dict(cache=cfg.data_cache, parallel_map=cfg.data_parallel_map, prefetch=cfg.data_prefetch)
    # The meter's variable is captured by a tf.data function: measured in one
    # process only (TPU hosts and multi-worker sharding rewrite input pipelines).
    meter = pipeline.DataWaitMeter() if setup.kind != "TPU" and setup.workers == 1 else None
    # On JAX, mixup runs on the device inside the train step (jax_steps.mix_in_step), not here.
    host_mixup = 0.0 if jax else cfg.mixup_alpha
    val_steps, build_once, persistent, val_persistent = fit_path(cfg, len(data.x_val), fast_fit)

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
    return Inputs(train_ds, val_ds, train_spec, meter, val_steps, build_once, persistent, val_persistent,
                  split, val_split, input_rate)


def fit_path(cfg: RunConfig, n_val: int, fast_fit: bool) -> tuple:
    """(val_steps, build_once, persistent, val_persistent): validation batches per pass
    (steps) of `n_val` samples, and whether fit builds once per compile and keeps one
    training / validation iterator for the whole run (engine.training.iterators)."""
    from engine.training import iterators
    from engine.training.keras_patches import symbolic_build

    val_steps = iterators.batches_per_pass(n_val, cfg.batch_size, drop_remainder=False)
    # The one-iterator-per-run path bypasses a method of Keras's TensorFlow trainer: TF only.
    build_once = fast_fit and cfg.backend != "jax" and symbolic_build.supported()
    persistent = build_once and iterators.persistent_ok(cfg.steps_per_epoch(), cfg.steps_per_execution)
    val_persistent = persistent and iterators.persistent_ok(val_steps, cfg.steps_per_execution)
    return val_steps, build_once, persistent, val_persistent


def build_model(cfg: RunConfig, setup, data):
    """(model, taken-over layers) built under `setup.strategy`: from a stored run
    (init_from), a keras.applications backbone, a built-in model (engine.training.models), or
    the user's own (engine.training.user_model, after the dtype policy and inside the strategy).
    Raises: RunFailed when the source run cannot be used."""
    from engine.training import models, transfer

    with setup.strategy.scope():
        if cfg.init_from is not None:
            try:
                return transfer.build_from_run(cfg, data.shape, data.classes)
            except transfer.TransferError as e:
                raise RunFailed(str(e)) from None
        if user_model(cfg.model):  # the user's own: file.py:build or model.keras
            from engine.training import user_model as own

            try:
                return own.build(cfg.model, data.shape, data.classes, cfg.model_weights), []
            except ConfigError as e:  # checked before queueing; the file changed since
                raise RunFailed(str(e)) from None
        model = models.build(cfg.model, data.shape, data.classes, image_size=cfg.input_size,
                             pretrained=cfg.pretrained, any_size=cfg.progressive_epochs > 0)
        return model, (transfer.taken_part(model) if cfg.pretrained else [])


def phase_compiler(cfg: RunConfig, setup, model, taken: list, inputs: Inputs, augment=None) -> Callable:
    """The function that compiles `model` for a transfer.Phase (see its docstring);
    augment: the run's engine.training.techniques.StepAugment (progressive resizing)."""
    steps_per_epoch = cfg.steps_per_epoch()

    def compile_phase(phase) -> None:
        """Freeze or unfreeze the taken-over part and compile for `phase`: a new
        optimizer at lr_factor x the learning rate (schedules scaled alike) whose
        schedules continue from the phase's first step. A later phase of progressive
        resizing keeps the model compiled and its optimizer; only the image size changes."""
        from engine.training import techniques, transfer
        from engine.training.keras_patches import eager_metrics_readout, symbolic_build

        if cfg.progressive_epochs and phase.first_epoch > 0:
            _continue_at(model, augment, phase.size)
            return
        if taken:
            transfer.set_frozen(taken, phase.frozen)
        pcfg = cfg if phase.lr_factor == 1.0 else cfg.replace(
            learning_rate=cfg.learning_rate * phase.lr_factor,
            max_lr=None if cfg.max_lr is None else cfg.max_lr * phase.lr_factor)
        with setup.strategy.scope():  # an optimizer keeps the strategy it was made under
            optimizer = _optimizer(pcfg, steps_per_epoch, phase.first_epoch * steps_per_epoch)
            techniques.exclude_from_muon(optimizer, model)  # Muon: the head and embeddings keep AdamW
            if cfg.fused_optimizer:
                from engine.training import fused_optimizer

                fused_optimizer.fuse(optimizer)  # config check: adam or sgd on TensorFlow, so it fuses
            model.compile(optimizer=optimizer, loss=loss(cfg), metrics=_metrics(cfg),
                          steps_per_execution=cfg.steps_per_execution,
                          jit_compile=cfg.jit_compile)  # always explicit, never Keras's "auto"
        if inputs.build_once:  # metrics built from the spec: their read-out can be traced now
            symbolic_build.build_once(model, inputs.train_spec)
            if eager_metrics_readout.worth_it(setup.strategy, setup.workers):
                eager_metrics_readout.compile_readout(model)

    return compile_phase


def _after_compile(cfg: RunConfig, setup, model, train_ds) -> None:
    """Mixup into the JAX train step; the multi-worker fit patch (one batch to build it)."""
    if cfg.backend == "jax" and cfg.mixup_alpha > 0:
        from engine.training.jax_steps import mix_in_step

        mix_in_step(model, cfg.mixup_alpha, cfg.seed)
    if setup.workers > 1:
        from engine.training.keras_patches import multiworker_fit

        multiworker_fit.apply(model, next(iter(train_ds)))


def _techniques_after_compile(cfg: RunConfig, model, augment, phases: list) -> None:
    """CutMix and progressive resizing into the train step, test-time augmentation into
    inference (engine.training.techniques); with weight EMA and several phases, the
    averaged weights are put into the model only at the end of the last one (Keras does it
    at the end of every fit)."""
    from engine.training import techniques

    if augment.cutmix is not None or augment.size is not None:
        augment.install(model)
    techniques.install_tta(model, cfg.tta)
    if cfg.ema_momentum > 0 and len(phases) > 1 and cfg.progressive_epochs:
        model.optimizer.finalize_variable_values = lambda var_list: None


def _continue_at(model, augment, size) -> None:
    """The last progressive-resizing phase: train at `size` (None = full size), and let
    Keras put the EMA weights into the model at the end of this fit."""
    model.optimizer.__dict__.pop("finalize_variable_values", None)
    augment.set_size(model, size)


def _prestart(setup, inputs: Inputs, timeline) -> None:
    """Start the persistent iterators now (setup), so that fit never pulls a batch before
    training; marks 'input'. One process, no TPU only."""
    if inputs.build_once and setup.workers == 1 and setup.kind != "TPU":
        from engine.training import iterators

        inputs.train_ds = iterators.prestart(inputs.train_ds, setup.strategy)
        inputs.val_ds = iterators.prestart(inputs.val_ds, setup.strategy)
        _mark(timeline, "input")


def build_plan(cfg: RunConfig, setup, data, model, taken: list, phases: list, inputs: Inputs,
               setup_sec: float) -> dict:
    """The run's plan as stored (store column `plan`): sizes (samples), steps, batch sizes
    (samples), dtypes, the learning rate, setup_sec (s from the seed to a compiled model),
    phases, and how fit is fed (`fit_args`)."""
    replicas, steps_per_epoch = setup.replicas, cfg.steps_per_epoch()
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
        "setup_sec": setup_sec,
        "model": cfg.model, "input_shape": list(data.shape), "classes": int(data.classes),
        "class_names": list(data.class_names), "validation_data": data.validation,
        "data_pipeline": {"cache": cfg.data_cache, "parallel_map": cfg.data_parallel_map,
                          "prefetch": cfg.data_prefetch},
        "input_batches_per_sec": inputs.input_rate,
        "backend": cfg.backend,
        "mixup_on": (("device (in the train step)" if cfg.backend == "jax" else "host (tf.data)")
                     if cfg.mixup_alpha > 0 else None),
        "init_from": cfg.init_from, "pretrained": cfg.pretrained, "image_size": cfg.input_size or None,
        "taken_over_params": int(sum(_size(w.shape) for layer in taken for w in layer.weights)),
        "phases": [{"first_epoch": p.first_epoch, "end_epoch": p.end_epoch, "frozen": p.frozen,
                    "learning_rate": cfg.learning_rate * p.lr_factor, "image_side": p.size} for p in phases],
        **technique_plan(cfg, model),
        "fit_args": {},
        "persistent_iterators": {"train": inputs.persistent, "validation": inputs.val_persistent},
        "input_per_replica": {"train": inputs.split, "validation": inputs.val_split},
    }
    if inputs.persistent:
        plan["fit_args"]["steps_per_epoch"] = steps_per_epoch
    if inputs.val_persistent:
        plan["fit_args"]["validation_steps"] = inputs.val_steps
    return plan


def technique_plan(cfg: RunConfig, model) -> dict:
    """Plan fields of engine.training.techniques: samples per update (effective batch),
    updates per epoch, EMA momentum, TTA mode, and which variables Muon orthogonalises."""
    from engine.config import effective_batch_size
    from engine.training.techniques import muon_split

    split = muon_split(model.optimizer)
    return {"effective_batch_size": effective_batch_size(cfg),
            "gradient_accumulation_steps": cfg.gradient_accumulation_steps,
            "updates_per_epoch": cfg.steps_per_epoch() // cfg.gradient_accumulation_steps,
            "ema_momentum": cfg.ema_momentum or None, "tta": None if cfg.tta == "off" else cfg.tta,
            "cutmix_factor": cfg.cutmix_factor or None,
            "muon_variables": None if split is None else {
                "muon": len(split["muon"]), "adamw": len(split["adamw"]), "adamw_names": split["adamw"],
                "conv_kernels": cfg.muon_conv}}


def environment(setup) -> dict:
    """Versions, devices, host and the machine's fingerprint (engine.hardware.fingerprint),
    stored with every run (reproducibility). Versions come
    from package metadata: a JAX run must not import TensorFlow to name it."""
    import keras

    from engine.hardware.peak_store import fingerprint_with_clock
    from engine.hardware.machine import cpu_model, installed_backends

    versions = installed_backends()
    return {
        "fingerprint": fingerprint_with_clock(),  # the machine's identity: what "same machine" matches on
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


# A layer count further than this from XLA's count of the same step is not trusted for MFU.
XLA_TOLERANCE = 0.10


def flops_plan(model, taken: Optional[list] = None, phases: Optional[list] = None,
               input_shape: Optional[list] = None, cross_check: bool = False) -> dict:
    """{'flops_per_sample': training FLOPs per sample (engine.training.flops), 'forward_flops_per_sample',
    'flops_all_taps_per_sample' (every convolution tap counted), 'flops_uncounted': layers with weights
    left out, 'flops_phases': [{'first_epoch', 'end_epoch', 'frozen', 'image_side', 'flops_per_sample'}]
    when layers were taken over (engine.training.transfer: a frozen phase charges its frozen layers
    no weight gradient) or the image size changes between phases (progressive resizing, counted at
    each phase's side from `input_shape`, one sample's (H, W, C)); 'flops_per_sample' is then the
    phases' mean weighted by epochs}; None figures (and the reason on stderr) for a model that
    cannot be counted: MFU is then missing, the run goes on.
    cross_check (a user's model): the count is held against XLA's count of the step where that is
    cheap (the JAX backend: one compile at batch 8, engine.training.flops.xla_count), kept as
    'flops_xla_per_sample'; more than XLA_TOLERANCE apart, 'flops_per_sample' is None (so MFU is
    missing) and 'flops_note' says why; off JAX 'flops_note' says the count is unchecked."""
    import sys

    from engine.training import flops

    shape = tuple(input_shape) if input_shape else None
    try:
        c = flops.count(model, input_shape=shape)
        per_phase = []
        sized = shape is not None and any(getattr(p, "size", None) for p in phases or [])
        if (taken or sized) and phases:
            for p in phases:
                side = getattr(p, "size", None)
                at = (side, side, shape[-1]) if side and shape else shape
                pc = flops.count(model, flops.phase_trainable(taken or [], p.frozen), input_shape=at)
                per_phase.append({"first_epoch": p.first_epoch, "end_epoch": p.end_epoch, "frozen": p.frozen,
                                  "image_side": side, "flops_per_sample": pc["flops_per_sample"]})
    except Exception as e:  # noqa: BLE001 - a figure for the report, never a reason to fail the run
        print(f"FLOPs not counted: {type(e).__name__}: {e}", file=sys.stderr)
        xla = _xla_fallback(model, shape)
        return {"flops_per_sample": round(xla) if xla else None, "forward_flops_per_sample": None,
                "flops_uncounted": None, "flops_source": "xla" if xla else None,
                **({} if xla else {"flops_note": f"MFU not shown: FLOPs not counted ({type(e).__name__}: "
                                                 f"{str(e).splitlines()[0][:200] if str(e) else ''})"})}
    out = {"flops_per_sample": c["flops_per_sample"] or None, "forward_flops_per_sample": c["forward_flops_per_sample"],
           "flops_all_taps_per_sample": c["all_taps_flops_per_sample"], "flops_uncounted": c["uncounted"],
           "flops_source": "layers"}
    if c["uncounted"] and not taken and not per_phase:
        # Layers with weights the counter does not know (a user's own): XLA's count of the
        # whole step, where the backend offers one, replaces the lower bound.
        xla = _xla_fallback(model, shape)
        if xla:
            out.update(flops_per_sample=round(xla), flops_source="xla",
                       flops_layers_per_sample=c["flops_per_sample"] or None)
    elif cross_check and not per_phase:
        out.update(_held_against_xla(c["flops_per_sample"], _xla_fallback(model, shape)))
    epochs = sum(p["end_epoch"] - p["first_epoch"] for p in per_phase)
    if per_phase and epochs > 0:
        out["flops_phases"] = per_phase
        out["flops_per_sample"] = round(sum(p["flops_per_sample"] * (p["end_epoch"] - p["first_epoch"])
                                            for p in per_phase) / epochs) or None
    return out


def _held_against_xla(counted: int, xla: Optional[float]) -> dict:
    """The flops_plan fields of the layer count `counted` (FLOPs/sample) held against XLA's
    count `xla` (None: not available here): {'flops_xla_per_sample', 'flops_note'} and, more
    than XLA_TOLERANCE apart, 'flops_per_sample': None with the count kept as
    'flops_layers_per_sample'."""
    if not xla:
        return {"flops_note": "layer count not cross-checked: XLA's cost analysis needs the JAX backend"}
    out = {"flops_xla_per_sample": round(xla)}
    if counted and abs(counted / xla - 1) > XLA_TOLERANCE:
        out.update(flops_per_sample=None, flops_layers_per_sample=counted,
                   flops_note=f"MFU not shown: the layer count ({counted:,} FLOPs/sample) and XLA's count of the "
                              f"step ({round(xla):,}) differ by {abs(counted / xla - 1):.0%}, over "
                              f"{XLA_TOLERANCE:.0%}")
    return out


def _xla_fallback(model, shape) -> Optional[float]:
    """engine.training.flops.xla_count at one sample's `shape` (the model's own when None);
    None off JAX or when XLA cannot count it (the reason on stderr)."""
    import sys

    from engine.training import flops

    try:
        at = tuple(shape) if shape else tuple(int(d) for d in model.inputs[0].shape[1:])
        return flops.xla_count(model, at)
    except Exception as e:  # noqa: BLE001 - a figure for the report, never a reason to fail the run
        print(f"FLOPs: XLA's cost analysis failed: {type(e).__name__}: {e}", file=sys.stderr)
        return None


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
    from engine.config.lr_math import effective_lr

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


def loss(cfg: RunConfig):
    """The one training loss: categorical cross-entropy on one-hot (possibly mixed) targets,
    with `cfg.label_smoothing` (Szegedy et al., 2016); a float32 scalar per batch (nats)."""
    import keras

    # The head is float32 softmax, so the loss is computed in float32 too.
    return keras.losses.CategoricalCrossentropy(label_smoothing=cfg.label_smoothing)
