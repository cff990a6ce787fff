"""What a worker trains on, for either backend (no TensorFlow or JAX imported here:
a JAX worker must never import TensorFlow, so both device modules share these)."""
from __future__ import annotations

from dataclasses import dataclass, field


class DeviceError(RuntimeError):
    """The requested devices cannot be set up (one-line message)."""


@dataclass
class DeviceSetup:
    """The strategy and what it runs on.

    kind: 'CPU' | 'GPU' | 'TPU'; replicas: strategy.num_replicas_in_sync (JAX: devices
    in the data-parallel mesh); simulated: True when replicas are logical devices carved
    out of one physical device (TF) or XLA host devices sharing one CPU (JAX): they share
    its compute, so expect no speedup; physical: number of physical devices of that kind
    (on this worker); workers / task_index: multi-worker layout (1 / 0 in one process);
    threads: TF thread pool size set from the usable CPUs (None: TF's default);
    distribution: the keras.distribution a JAX run installed (None on TF).
    strategy: a tf.distribute.Strategy, or on JAX a stand-in whose scope does nothing.
    """

    strategy: object
    kind: str
    replicas: int
    simulated: bool
    physical: int
    device_names: list = field(default_factory=list)
    workers: int = 1
    task_index: int = 0
    threads: int | None = None
    distribution: object = None
