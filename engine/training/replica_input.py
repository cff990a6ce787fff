"""One host input pipeline per replica for simulated CPU replicas.

Keras hands a plain `tf.data.Dataset` to `strategy.experimental_distribute_dataset`,
whose iterator over several devices is a `MultiDeviceIterator`: it traces a
few functions per device and starts a prefetch thread per device every time
an iterator is made. With 2 logical CPU devices that cost 0.15-0.6 s per
iterator on a 2-core CPU (measured, load-dependent), once for training at the
start of `fit` and once for validation: seconds of a digits run's wall time.

Logical CPU devices share the host's memory, so there is nothing to prefetch
*to*. For them SpeedLab builds one pipeline per replica with
`strategy.distribute_datasets_from_function` in PER_REPLICA mode with the data
left on the host (`tf.distribute.InputOptions`), which makes plain iterators
(~0.01 s). Every replica's pipeline builds the same global batches (same seeds,
mixup included) and keeps its slice of each (engine.data.pipeline's `shard`),
so the replicas see exactly the examples, mixed alike, that one shared pipeline
split by tf.distribute would give them, and every validation example counts
once. The price: each replica's pipeline prepares the whole global batch (in
memory, cheap next to the step; the data wait is metered on replica 0's).
Real GPUs keep Keras's path: there the MultiDeviceIterator's prefetch to the
device is worth its start-up.
Reference: https://www.tensorflow.org/tutorials/distribute/input
"""
from __future__ import annotations

from typing import Callable


def eligible(kind: str, replicas: int, workers: int, global_batch: int, cache: bool = False) -> bool:
    """Whether a run gets per-replica host pipelines: several replicas on CPU
    devices (logical ones carved out of the host) in one worker process, with a
    global batch they divide, and no in-memory cache (`cache`: RunConfig.data_cache),
    which every replica's pipeline would hold a copy of."""
    return (kind == "CPU" and replicas > 1 and workers == 1 and global_batch % replicas == 0
            and not cache)


def per_replica(strategy, make: Callable[[int, int], object]) -> tuple[object, object]:
    """A distributed dataset whose replica i iterates `make(i, replicas)` on the host.

    make(index, count) -> the tf.data.Dataset of one replica (its per-replica batches).
    Returns: (tf.distribute.DistributedDataset, which Keras's `fit` takes as it is;
    the element spec of replica 0's dataset, e.g. to build a model from).
    """
    import tensorflow as tf  # here: a JAX worker imports this module's neighbours, never TF

    options = tf.distribute.InputOptions(
        experimental_replication_mode=tf.distribute.InputReplicationMode.PER_REPLICA,
        experimental_fetch_to_device=False, experimental_place_dataset_on_device=False)
    made = {}

    def one(ctx):  # called once per replica, when the distributed dataset is made
        made[ctx.input_pipeline_id] = make(ctx.input_pipeline_id, ctx.num_input_pipelines)
        return made[ctx.input_pipeline_id]

    dist = strategy.distribute_datasets_from_function(one, options)
    return dist, made[0].element_spec
