"""One measured training run inside a worker process (imports TensorFlow, or JAX
for backend jax: then nothing here imports TensorFlow).

The loop, in the order it happens: devices (before anything initialises the TF runtime),
then `prepare` (engine.training.build: dtype policy, data, model, optimizer), the Recorder,
fit, and the summary (engine.training.summary.RunSummary).
A transfer-learning run (engine.training.transfer) fits up to two phases, frozen then
fine-tuned, with one Recorder, so time, steps and executions run on; the
first execution after the recompile between them is flagged warm-up too.
"""
from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from engine.config import RunConfig, user_model
from engine.training.build import Prepared, environment, flops_plan, prepare
from engine.training.summary import RunSummary, build_summary

__all__ = ["FREEZE_HEAP", "Outcome", "train"]

# gc.freeze() before fit: right in a worker, which exits after its one run. The test suite
# runs many in one process and switches it off (tests/conftest.py): frozen garbage piles up.
FREEZE_HEAP = True


@dataclass
class Outcome:
    """What `train` returns: final status ('completed' | 'cancelled' | 'failed'),
    the summary as stored (`RunSummary.to_dict()`),
    an error line, and the trained model (or None)."""

    status: str
    summary: dict
    error: Optional[str] = None
    model: object = None
    extra: dict = field(default_factory=dict)


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
        cluster: engine.base.cluster.Cluster for a multi-worker run (None: this process only).
        timeline: engine.training.timeline.Timeline of this worker process (default:
            a new one); its spans and totals go into the summary.

    Returns: Outcome. Raises: engine.training.devices.DeviceError, RunFailed.
    """
    from engine.training.timeline import Timeline

    tl = timeline if timeline is not None else Timeline()
    setup = configure_devices(cfg, cluster, tl)
    prep = prepare(cfg, setup, probe_input=True, fast_fit=True, timeline=tl)
    announce(prep, setup, tl, on_setup)
    ahead = trace_ahead(cfg, prep)
    rec = recorder(cfg, prep, sink, stop_event, on_start, ahead, tl)
    callbacks = [rec, *fit_callbacks(cfg, prep, rec, ahead), *(extra_callbacks or [])]
    # Everything made so far (the imports' ~450,000 objects, data, model) lives as long as the
    # run: move it out of the garbage collector's reach. Otherwise the first full collection
    # lands inside the first trace and walks it all: 190 ms of a digits run's warm-up, measured.
    if FREEZE_HEAP:
        gc.freeze()
    for i, phase in enumerate(prep.phases):
        if stop_event.is_set():  # Stop pressed during setup: no step to wait for
            break
        if i > 0:
            if rec.nan_at or prep.model.stop_training:
                break
            prep.compile(phase)  # unfreeze at the lower learning rate: traced again
            rec.expect_warmup()
        prep.model.fit(prep.train_ds, validation_data=prep.val_ds, initial_epoch=phase.first_epoch,
                       epochs=phase.end_epoch, verbose=0, shuffle=False, callbacks=callbacks,
                       **prep.plan["fit_args"])
    summary = build_summary(cfg, setup, prep, rec, tl, ahead)  # the clocks stop here
    test_accuracy(summary, prep, setup, rec, stop_event)
    return outcome(summary, rec, stop_event, prep.model)


def test_accuracy(summary: RunSummary, prep: Prepared, setup, rec, stop_event: threading.Event) -> None:
    """Set the summary's test_accuracy (fraction), test_samples, test_sec (s) and test_split:
    the model as it stopped, evaluated once on the held-out test set, after every clock
    of the run has stopped; or test_note saying why not (cancelled, failed, several workers,
    no test data). Never fails the run."""
    if prep.test is None:
        summary.test_note = "no test data"
        return
    if stop_event.is_set() or rec.nan_at or rec.updates.stalled:
        summary.test_note = "not measured: the run did not complete"
        return
    if setup.workers > 1:  # every worker would have to evaluate its shard: not done here
        summary.test_note = "not measured for multi-worker runs"
        return
    t0 = time.perf_counter()
    try:
        acc = accuracy_of(prep.model, prep.test())
    except Exception as e:  # noqa: BLE001 - a figure for the report, never a reason to fail the run
        summary.test_note = f"not measured: {type(e).__name__}: {str(e)[:160]}"
        return
    summary.test_accuracy = acc
    summary.test_samples = prep.plan["n_test"]
    summary.test_sec = time.perf_counter() - t0
    summary.test_split = prep.plan.get("test_data")


def configure_devices(cfg: RunConfig, cluster, tl):
    """Import the backend and lay out its devices, the first thing a run does to the
    runtime; marks 'imports' and 'devices'. Returns a DeviceSetup.
    Raises: engine.training.devices.DeviceError."""
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
    return setup


def announce(prep: Prepared, setup, tl, on_setup: Callable[[dict, dict], None]) -> None:
    """Complete the plan (clock origin, setup marks, FLOPs) and hand it with the
    environment to `on_setup` (the worker stores both)."""
    plan = prep.plan
    # The worker's clock in wall-clock terms, for latency measurements (benchmarks/latency.py).
    plan["clock_origin"] = time.time() - tl.now()
    plan["setup_marks"] = dict(tl.marks)
    plan.update(flops_plan(prep.model, prep.taken, prep.phases, plan.get("input_shape"),
                           cross_check=user_model(plan.get("model")) is not None))
    on_setup(environment(setup), plan)


def trace_ahead(cfg: RunConfig, prep: Prepared):
    """An EvalTraceAhead that traces validation while the first epoch trains (TensorFlow,
    iterators started in setup, one phase), or None."""
    from engine.training import eval_trace
    from engine.training.iterators import started_iterator

    its = started_iterator(prep.train_ds), started_iterator(prep.val_ds)
    if eval_trace.ENABLED and cfg.backend != "jax" and None not in its and len(prep.phases) == 1:
        return eval_trace.EvalTraceAhead(prep.model, *its)
    return None


def recorder(cfg: RunConfig, prep: Prepared, sink, stop_event, on_start, ahead, tl):
    """The run's Recorder (engine.training.recorder), with the target accuracy of
    engine.data.meta and the LR table of `_lr_table`."""
    from engine.data.meta import target_for
    from engine.training.recorder import Recorder

    plan = prep.plan
    return Recorder(cfg.batch_size, prep.steps_per_epoch, sink, stop_event,
                    target_for(cfg.target_accuracy, cfg.dataset), on_start=on_start,
                    busy_fn=ahead.busy if ahead is not None else None,
                    data_wait_fn=prep.meter.total if prep.meter is not None else None,
                    lr_fn=_lr_table(cfg, prep.steps_per_epoch),
                    epoch_samples=plan["n_train"] - plan["dropped_samples_per_epoch"],
                    timeline=tl, plain_val_loss=cfg.label_smoothing == 0, stop_at_target=cfg.stop_at_target)


def fit_callbacks(cfg: RunConfig, prep: Prepared, rec, ahead) -> list:
    """The callbacks after the Recorder: on JAX the short-last-batch warm-up flag first,
    then prepare's, then the trace-ahead's."""
    callbacks = [*prep.callbacks, *([ahead.callback()] if ahead is not None else [])]
    if cfg.backend == "jax":  # the step is compiled again for an epoch's short last batch
        from engine.training.jax_steps import ShapeWarmup

        n_train = prep.plan["n_train"]
        callbacks = [ShapeWarmup(rec, prep.steps_per_epoch, cfg.steps_per_execution,
                                 prep.plan["replicas"] == 1 and n_train % cfg.batch_size != 0), *callbacks]
    return callbacks


def outcome(summary: RunSummary, rec, stop_event: threading.Event, model) -> Outcome:
    """The run's status and error line: a NaN loss or stalled updates fail it, a stop
    request cancels it, else it completed."""
    stored = summary.to_dict()
    if rec.nan_at:
        e, s = rec.nan_at
        return Outcome("failed", stored, f"loss became NaN at epoch {e}, step {s}" + rec.updates.nan_note(), model)
    if rec.updates.stalled:
        return Outcome("failed", stored, rec.updates.stall_message(), model)
    if stop_event.is_set():
        return Outcome("cancelled", stored, "cancelled by the user", model)
    return Outcome("completed", stored, None, model)


def accuracy_of(model, ds) -> float:
    """Top-1 accuracy (fraction) of `model` on the batches of `ds` (a tf.data dataset, or a
    Keras PyDataset on JAX, of (x, one-hot y[, sample weight]); zero-weight samples pad a
    batch and are skipped), calling the model directly: Keras's evaluate() would go through
    the run's distribution strategy and fit-path patches (it failed on 2 replicas).
    Raises: ValueError when `ds` holds no sample."""
    import keras
    import numpy as np

    batches = [ds[i] for i in range(len(ds))] if hasattr(ds, "__getitem__") else list(ds)
    if not batches:
        raise ValueError("no test sample")
    ys = [np.asarray(b[1]) for b in batches]
    keep = np.concatenate([np.asarray(b[2]) > 0 if len(b) > 2 else np.ones(len(y), bool) for b, y in zip(batches, ys)])
    if keras.backend.backend() == "jax":
        # Op by op, JAX compiles every op per shape (5.7 s for digits' 180 images): one compiled
        # predict over a copy padded to whole batches compiles once.
        x = np.concatenate([np.asarray(b[0]) for b in batches])
        size = len(batches[0][0])
        pad = -len(x) % size
        x = np.concatenate([x, np.zeros((pad, *x.shape[1:]), x.dtype)]) if pad else x
        pred = np.asarray(model.predict(x, batch_size=size, verbose=0))[:len(keep)].argmax(-1)
    else:
        pred = np.concatenate([np.asarray(model(b[0], training=False)).argmax(-1) for b in batches])
    y = np.concatenate(ys)
    true = y.argmax(-1) if y.ndim > 1 else y
    if not keep.sum():
        raise ValueError("no test sample")
    return float(((pred == true) & keep).sum() / keep.sum())


def _lr_table(cfg: RunConfig, steps_per_epoch: int):
    """LR per step from the schedule's own formulas (engine.config.lr_math), so the
    recorder need not read the optimizer every execution; None where the LR
    can change at run time (plateau reducer, fine-tuning phases)."""
    if cfg.reduce_on_plateau or cfg.init_from is not None or cfg.pretrained:
        return None
    import numpy as np

    from engine.config.lr_math import lr_at

    table = lr_at(cfg, np.arange(max(cfg.epochs * steps_per_epoch, 1)), steps_per_epoch)
    last = len(table) - 1
    return lambda step: table[min(max(step - 1, 0), last)]
