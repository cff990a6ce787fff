"""The achievable peak FLOP/s per dtype: the best square matmul (imports TensorFlow or JAX:
the hardware probe calls it, never the app). It is shown beside MFU, whose denominator is
the theoretical peak (engine.hardware.peaks).

One n x n x n matmul is 2 n^3 FLOPs. Sizes grow (CPU 256 ... 4096, GPU 1024 ... 16384)
until the rate stops rising (a size under RISE x the best so far ends the ladder: on a
2-core Zen 4, TF's float32 matmul gave 194 GFLOP/s at n = 1024 and 217 at n = 2048).
Each dtype and size gets one untimed call (tracing, kernel selection), then timed calls
until its share of the time budget is spent; the fastest call of the fastest size
counts (what the hardware can do, not what a shared machine let us have on average).
float16 is skipped on a CPU without float16 hardware: TensorFlow emulates it there,
about 100x slower, and the peak would mean nothing.
"""
from __future__ import annotations

import time
from typing import Optional

from engine.hardware.verdicts import CPU_FP16_FLAGS

CPU_SIZES, GPU_SIZES = (256, 512, 1024, 2048, 4096), (1024, 2048, 4096, 8192, 16384)
CALLS_PER_TIMING = {"CPU": 1, "GPU": 8}  # matmuls per timed call: amortise the launch on a GPU
BUDGET_S = 24.0  # the hardware check's whole matmul ladder: the check stays under a minute
RISE = 1.03


def dtypes_for(device_kind: str, cpu_flags=(), compute_capability: Optional[tuple] = None) -> dict:
    """{dtype: None (measure) or the reason it is skipped} for float32, bfloat16, float16."""
    out = {"float32": None, "bfloat16": None, "float16": None}
    if device_kind == "CPU" and not set(cpu_flags) & set(CPU_FP16_FLAGS):
        out["float16"] = "no float16 hardware on this CPU (emulated: not a peak)"
    if device_kind == "GPU" and compute_capability and tuple(compute_capability) < (8, 0):
        out["bfloat16"] = "no bfloat16 Tensor Cores below compute capability 8.0"
    return out


def _time(call, budget_s: float) -> tuple[float, int]:
    """(fastest seconds of one call, calls timed) within `budget_s` (at least 2 calls)."""
    call()  # untimed: trace, compile, pick kernels
    best, n, t_end = float("inf"), 0, time.perf_counter() + budget_s
    while n < 2 or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
        n += 1
        if n >= 50:
            break
    return best, n


def _tf_call(dtype: str, n: int, k: int, device: str):
    import tensorflow as tf

    with tf.device(device):
        a = tf.cast(tf.random.uniform((n, n), -1, 1), dtype)
        b = tf.cast(tf.random.uniform((n, n), -1, 1) * (3.0 / n) ** 0.5, dtype)  # keeps |x @ b| ~ |x|

    @tf.function
    def f(a, b):
        x = a
        for _ in range(k):  # a chain: each matmul needs the last, so none can be merged or pruned
            x = tf.linalg.matmul(x, b)
        return tf.reduce_sum(tf.cast(x, tf.float32))

    def call():
        with tf.device(device):
            return f(a, b).numpy()
    return call


def _jax_call(dtype: str, n: int, k: int, device: str):
    import jax
    import jax.numpy as jnp

    dev = jax.devices("gpu" if device.startswith("/GPU") else "cpu")[0]
    a = jax.device_put(jax.random.uniform(jax.random.PRNGKey(0), (n, n), minval=-1, maxval=1).astype(dtype), dev)
    b = jax.device_put((jax.random.uniform(jax.random.PRNGKey(1), (n, n), minval=-1, maxval=1)
                        * (3.0 / n) ** 0.5).astype(dtype), dev)

    @jax.jit
    def f(a, b):
        x = a
        for _ in range(k):  # a chain: XLA merged k copies of the same a @ b into one (8x on an H200)
            x = x @ b
        return jnp.sum(x.astype(jnp.float32))

    return lambda: f(a, b).block_until_ready()


def measure(backend: str = "tensorflow", device_kind: str = "CPU", device_name: Optional[str] = None,
            dtypes: Optional[dict] = None, budget_s: float = BUDGET_S, sizes: Optional[tuple] = None,
            where: str = "hardware check") -> dict:
    """Time matmuls on the first device of `device_kind` ('CPU' or 'GPU') with `backend`
    ('tensorflow' or 'jax'), about `budget_s` seconds in all.

    Args:
        dtypes: {dtype: None or a reason to skip it}, default `dtypes_for(device_kind)`.
        sizes: matrix sizes n tried (default CPU_SIZES on a CPU, GPU_SIZES on a GPU).
        where: who measured, for the peak's source line ('hardware check', 'run #3's worker').
    Returns: {'backend', 'device', 'device_name', 'sizes', 'where', 'measured_at' (s since the
    epoch), 'seconds' (s, all of it), 'dtypes': {dtype: {'flops_per_sec' (the best size's),
    'n' (that size), 'best_sec' (one matmul), 'calls', 'by_n': {n: FLOP/s}, 'stopped': why the
    ladder ended early} | {'skipped': reason} | {'error': line}}}.
    """
    t_start = time.perf_counter()
    dtypes = dtypes if dtypes is not None else dtypes_for(device_kind)
    sizes = tuple(sizes or (GPU_SIZES if device_kind == "GPU" else CPU_SIZES))
    k = CALLS_PER_TIMING.get(device_kind, 1)
    todo = [d for d, why in dtypes.items() if why is None]
    out = {"backend": backend, "device": device_kind, "device_name": device_name or device_kind, "sizes": list(sizes),
           "where": where, "measured_at": round(time.time(), 3), "dtypes": {}}
    device = "/GPU:0" if device_kind == "GPU" else "/CPU:0"
    per_size = budget_s / max(len(todo) * len(sizes), 1)
    for dtype in dtypes:
        if dtypes[dtype] is not None:
            out["dtypes"][dtype] = {"skipped": dtypes[dtype]}
            continue
        try:
            row = {"by_n": {}}
            for n in sizes:
                if time.perf_counter() - t_start > 1.5 * budget_s:
                    row["stopped"] = "time budget spent"
                    break
                call = (_jax_call if backend == "jax" else _tf_call)(dtype, n, k, device)
                best, calls = _time(call, max(per_size * 0.6, 0.05))  # the untimed first call takes the rest
                rate = 2.0 * n ** 3 * k / best
                row["by_n"][str(n)] = rate
                first = "flops_per_sec" not in row
                rose = first or rate > row["flops_per_sec"] * RISE
                if first or rate > row["flops_per_sec"]:
                    row.update(flops_per_sec=rate, n=n, best_sec=best / k, calls=calls)
                if not rose:
                    row["stopped"] = f"n = {n} under {RISE:g}x the best so far: stopped rising"
                    break
            out["dtypes"][dtype] = row
        except Exception as e:  # noqa: BLE001 - a dtype this device cannot run is a fact, not a crash
            out["dtypes"][dtype] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"}
    out["seconds"] = round(time.perf_counter() - t_start, 3)
    return out
