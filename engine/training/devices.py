"""Device layout and distribution strategy for one worker process.

`configure` must be the worker's first TF action: physical devices can be
split into logical devices, and GPU memory growth set, only before the TF
runtime initialises (https://www.tensorflow.org/guide/distributed_training).
"""
from __future__ import annotations

import tensorflow as tf

from engine.hardware.machine import quick_facts
from engine.training.device_setup import DeviceError, DeviceSetup  # noqa: F401 (re-exported)


# A collective that waits longer than this for a dead peer fails instead of hanging (s).
COLLECTIVE_TIMEOUT_S = 60.0


def configure(device_type: str, n: int, cluster=None) -> DeviceSetup:
    """Set up `n` replicas on `device_type` ('auto'|'cpu'|'gpu'|'tpu').

    With `cluster` (engine.base.cluster.Cluster), `n` is the devices per worker and
    the strategy is MultiWorkerMirroredStrategy over all workers.
    Raises: DeviceError("No TPU detected") and similar one-line errors.
    """
    threads = limit_threads()
    setup = _configure(device_type, n, cluster)
    setup.threads = threads
    return setup


def limit_threads() -> int | None:
    """Size TF's intra- and inter-op thread pools to the CPUs this process may
    use when that is fewer than the machine has (taskset, a container's CPU
    quota): TF would otherwise start a thread per machine core and oversubscribe.
    Must run before the TF runtime starts. Returns the size set, or None (TF's default)."""
    f = quick_facts()
    if f["usable_cpus"] >= f["logical_cores"]:
        return None
    tf.config.threading.set_intra_op_parallelism_threads(f["usable_cpus"])
    tf.config.threading.set_inter_op_parallelism_threads(f["usable_cpus"])
    return f["usable_cpus"]


def _configure(device_type: str, n: int, cluster=None) -> DeviceSetup:
    if device_type == "tpu":
        return _tpu(n)
    if cluster is not None and len(cluster.workers) > 1:
        return _multi_worker(device_type, n, cluster)
    gpus = tf.config.list_physical_devices("GPU")
    kind = "GPU" if (device_type == "gpu" or (device_type == "auto" and gpus)) else "CPU"
    if kind == "GPU" and not gpus:
        raise DeviceError("device_type gpu: TensorFlow sees no GPU (run `python -m engine hardware`)")
    if kind == "CPU" and gpus:
        tf.config.set_visible_devices([], "GPU")  # keep a CPU run off the GPU
    simulated = False
    if kind == "CPU":
        phys = tf.config.list_physical_devices("CPU")
        if n > 1:
            tf.config.set_logical_device_configuration(
                phys[0], [tf.config.LogicalDeviceConfiguration() for _ in range(n)])
            simulated = True
        physical = len(phys)
    else:
        physical = len(gpus)
        if n <= len(gpus):
            tf.config.set_visible_devices(gpus[:n], "GPU")
            for g in gpus[:n]:  # same on every GPU, before first use
                tf.config.experimental.set_memory_growth(g, True)
        else:
            tf.config.set_visible_devices(gpus[:1], "GPU")
            limit = _split_memory_mb(n)
            tf.config.set_logical_device_configuration(
                gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=limit) for _ in range(n)])
            simulated = True
    names = [d.name for d in tf.config.list_logical_devices(kind)][:n]
    if n == 1:
        strategy = tf.distribute.get_strategy()
    else:
        # NCCL needs distinct physical GPUs; reduce through one device otherwise.
        ops = None if (kind == "GPU" and not simulated) else tf.distribute.ReductionToOneDevice()
        strategy = tf.distribute.MirroredStrategy(devices=names, cross_device_ops=ops)
    if strategy.num_replicas_in_sync != n:
        raise DeviceError(f"devices: asked for {n} replicas but the strategy has "
                          f"{strategy.num_replicas_in_sync}")
    return DeviceSetup(strategy, kind, n, simulated, physical, names)


def _multi_worker(device_type: str, n: int, cluster) -> DeviceSetup:
    """MultiWorkerMirroredStrategy from TF_CONFIG, with collective timeouts so that
    a dead peer ends the run instead of hanging the others forever."""
    import os

    os.environ["TF_CONFIG"] = cluster.tf_config()  # read by the strategy's cluster resolver
    gpus = tf.config.list_physical_devices("GPU")
    kind = "GPU" if (device_type == "gpu" or (device_type == "auto" and gpus)) else "CPU"
    if kind == "GPU":
        if n > len(gpus):
            raise DeviceError(f"devices: {n} per worker but this worker has {len(gpus)} GPUs")
        tf.config.set_visible_devices(gpus[:n], "GPU")
        for g in gpus[:n]:
            tf.config.experimental.set_memory_growth(g, True)
    elif gpus:
        tf.config.set_visible_devices([], "GPU")
    opts = tf.distribute.experimental.CommunicationOptions(timeout_seconds=COLLECTIVE_TIMEOUT_S)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=opts)
    want = n * len(cluster.workers)
    if strategy.num_replicas_in_sync != want:
        raise DeviceError(f"workers: expected {want} replicas over {len(cluster.workers)} workers, "
                          f"the strategy has {strategy.num_replicas_in_sync}")
    names = [d.name for d in tf.config.list_logical_devices(kind)][:n]
    return DeviceSetup(strategy, kind, want, False, len(gpus) if kind == "GPU" else 1, names,
                       workers=len(cluster.workers), task_index=cluster.task_index)


def _split_memory_mb(n: int) -> int:
    """Memory per logical GPU (MB): 90% of the first GPU's memory split n ways."""
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=5)
        total = int(out.stdout.split()[0])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        total = 8192
    return int(total * 0.9 / n)


def _tpu(n: int) -> DeviceSetup:
    if not quick_facts()["tpu"]:
        raise DeviceError("No TPU detected")
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as e:
        raise DeviceError(f"No TPU detected ({str(e).splitlines()[0][:200]})") from None
    cores = strategy.num_replicas_in_sync
    if n not in (1, cores) and n != cores:
        raise DeviceError(f"devices: this TPU has {cores} cores; use devices {cores}")
    names = [d.name for d in tf.config.list_logical_devices("TPU")]
    return DeviceSetup(strategy, "TPU", cores, False, cores, names)


def gpu_memory_mb(names: list) -> float | None:
    """GPU memory in use over `names` (MB), or None off GPU."""
    total = 0.0
    seen = False
    for name in names:
        if "GPU" not in name:
            continue
        try:
            info = tf.config.experimental.get_memory_info(name.replace("/device:", ""))
            total += info["current"] / 2**20
            seen = True
        except (ValueError, tf.errors.OpError):
            pass
    return total if seen else None
