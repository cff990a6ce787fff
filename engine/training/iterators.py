"""One input iterator per run instead of one per epoch (Keras 3 on TensorFlow).

Keras's `fit` builds a new (distributed) training iterator every epoch unless
it is given an endless dataset and `steps_per_epoch`; its validation builds a
new iterator every epoch unless given `validation_steps`; and under a
tf.distribute strategy each `fit`/`evaluate` first pulls a batch from that
iterator and reduces it across replicas, only to build the model symbolically
(`Trainer._maybe_symbolic_build`). Measured with 2 replicas on a 2-core CPU:
100-140 ms + 175-285 ms + 71-114 ms every epoch, seconds under load.

SpeedLab therefore feeds `fit` endless datasets (engine.data.pipeline's
``repeat=True``) with steps_per_epoch / validation_steps, and builds the model
once from the dataset's element spec (no batch pulled) right after each
compile; the per-call symbolic build is then skipped. Keras has no public
switch for the last part, so engine.training.keras_patches.symbolic_build touches
the private method, behind a check that it exists (`supported`); the kept
validation iterator is keras_patches.eval_iterator_reset (`PersistentValidation`).
Without the first a persistent iterator would lose a batch to every symbolic
build, so callers use persistent iterators only when `supported()`.
"""
from __future__ import annotations

from engine.training.keras_patches.symbolic_build import supported


def persistent_ok(steps_per_epoch: int, steps_per_execution: int) -> bool:
    """Whether an endless training stream keeps epochs whole: Keras runs full
    executions of `steps_per_execution` steps on an endless iterator, so an epoch
    whose steps are not a multiple of it would eat into the next epoch's batches.
    Then (False) each epoch gets its own finite iterator, as Keras does by default."""
    return supported() and steps_per_epoch % steps_per_execution == 0


def batches_per_pass(samples: int, global_batch: int, drop_remainder: bool) -> int:
    """Batches in one pass over `samples` (the last one partial unless dropped)."""
    return samples // global_batch if drop_remainder else -(-samples // global_batch)


def prestart(dataset, strategy):
    """Start `dataset`'s input iterator now, during setup, and hand it to the first
    `iter()` that `fit` calls, instead of starting it inside the first epoch.

    Making a tf.data iterator instantiates the pipeline's functions and
    optimizes its graph: 35 ms per pipeline measured (2 per-replica pipelines,
    mixup, 2-core CPU), once per run with persistent iterators. That is input
    set-up, so it belongs to setup ("starting the input pipelines"), not to the
    first epoch's training time. A `tf.data.Dataset` is first distributed with
    `strategy.experimental_distribute_dataset`, exactly what Keras's fit would
    do with it (the default strategy returns it unchanged). The returned object
    is the same dataset, of a subclass of its own class whose first `__iter__`
    returns the started iterator (later calls make new iterators as before), so
    Keras's type checks and everything else see the dataset they expect.
    Use only where `fit` is the first to iterate it (not for a multi-worker
    run, which pulls a batch to build the model).
    """
    import tensorflow as tf

    if not isinstance(dataset, tf.distribute.DistributedDataset):
        dataset = strategy.experimental_distribute_dataset(dataset)
    started = iter(dataset)
    base = type(dataset)
    if base not in _PRESTARTED:
        def __iter__(self):
            it = self.__dict__.pop("_speedlab_started", None)
            return it if it is not None else base.__iter__(self)

        _PRESTARTED[base] = type(f"Prestarted{base.__name__}", (base,), {"__iter__": __iter__})
    dataset.__class__ = _PRESTARTED[base]
    dataset.__dict__["_speedlab_started"] = started
    return dataset


_PRESTARTED: dict = {}


def started_iterator(dataset):
    """The iterator `prestart` started for `dataset`, while no `iter()` has taken it; else None."""
    return getattr(dataset, "__dict__", {}).get("_speedlab_started")
