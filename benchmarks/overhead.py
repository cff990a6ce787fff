"""What does SpeedLab's instrumentation cost? Engine run vs bare `model.fit`.

Runs the same configuration through the engine (worker process, measuring
callback, store writer thread, psutil sampling) and through a bare
`model.fit` with no callbacks in an equally fresh process, alternating
ROUNDS times in one invocation (engine first in odd rounds, bare first in even
ones, so that a drift in load favours neither), and prints the ratio of steady
throughputs.
Goal: ratio >= 0.98 (instrumentation costs at most 2%).

Both sides use the same data, pipeline, model, compile settings and `fit`
arguments (engine.training.build.prepare with fast_fit: the same persistent
iterators and validation), train EPOCHS epochs, and are clocked the same way,
epoch end to epoch end: throughput over epochs 2..E = training samples of
those epochs / (time at the end of epoch E - time at the end of epoch 1), so
each side's per-epoch costs (iterator start, validation, callbacks) count alike
and the first epoch (tracing, compilation) is left out of both.
- engine: the epoch-end times the worker stored (epochs table, t);
- bare: epoch-end times from a callback with epoch hooks only (Keras keeps its
  per-batch fast path when no callback has batch hooks).
With warm workers on (the default), the engine side runs in the queue's warm spare
where one is ready, and the bare side starts only once the next spare has finished
importing TensorFlow, so that the spare never competes with a measurement.
It also prints the engine's headline steady samples/s (median per execution)
next to its epoch-to-epoch rate: the two answer different questions.
The spread of the ratios gives the number of rounds needed to resolve a 2%
difference (95% confidence, median of rounds) on the machine it ran on.
Since that spread is far larger than 2% on a shared 2-core VM, each round also
prints what the engine measures of itself, free of that spread: the time spent
inside the measuring callback's batch hooks (on the training thread, so a direct
cost) and the CPU time of the store writer thread, each as a share of the run's
training time; 1 / (1 + both) bounds engine/bare from below if every such second
delayed training.

With --paired N it first compares, in one fresh process on one prepared model, N
epochs with the engine's Recorder against N without a batch hook, alternating:
the instrumentation's own per-step cost, free of the spread between processes.
It also times, per execution, Keras's batch-callback dispatch on the training
thread on both sides (the Recorder's hooks and Keras's log conversion for them on
one side; Keras's hand-off of the batch end to its callback thread on the other):
their difference as a share of a step is the per-step price of measuring.

    python benchmarks/overhead.py [--rounds 5] [--paired 0] [--samples 25600] [--epochs 4] [--model cnn]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def prepared(cfg_json: str):
    """In a child process: (config, engine.training.build.Prepared) with the engine's own
    devices, data, model, compile and fit settings."""
    from engine.config import RunConfig

    cfg = RunConfig.from_json(cfg_json)
    from engine.training import devices

    setup = devices.configure(cfg.device_type, cfg.devices)
    from engine.training.build import prepare

    return cfg, prepare(cfg, setup, fast_fit=True)


def bare_child(cfg_json: str) -> None:
    """In a fresh process: bare fit, print samples/s as JSON."""
    cfg, prep = prepared(cfg_json)
    import keras

    class EpochClock(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.ends = []

        def on_epoch_end(self, epoch, logs=None):
            self.ends.append(time.perf_counter())

    clock = EpochClock()
    prep.model.fit(prep.train_ds, validation_data=prep.val_ds, epochs=cfg.epochs, verbose=0, shuffle=False,
                   callbacks=[*prep.callbacks, clock], **prep.plan["fit_args"])
    samples = (cfg.epochs - 1) * (prep.plan["n_train"] - prep.plan["dropped_samples_per_epoch"])
    print(json.dumps({"samples_per_sec": samples / (clock.ends[-1] - clock.ends[0])}))


def paired_child(cfg_json: str, rounds: int) -> None:
    """In one fresh process, one prepared model: `rounds` rounds of one epoch with the
    engine's Recorder (a sink that keeps nothing, the data-wait meter and LR read as in
    a run) and one epoch with no batch hook, in alternating order; print each epoch's
    seconds as JSON. Same process, same model, same input: only the callback differs."""
    cfg, prep = prepared(cfg_json)
    from engine.training.recorder import Recorder
    from engine.training.train import _lr_table

    spe = prep.steps_per_epoch
    # Time on the training thread in Keras's batch-callback dispatch (the hooks included):
    # the whole per-execution cost of having a measuring callback, next to the bare side's.
    from keras.src.callbacks.callback_list import CallbackList

    dispatch = [0.0]
    for name in ("on_train_batch_begin", "on_train_batch_end"):
        def timed(self, batch, logs=None, _orig=getattr(CallbackList, name)):
            t = time.perf_counter()
            _orig(self, batch, logs)
            dispatch[0] += time.perf_counter() - t

        setattr(CallbackList, name, timed)

    def recorder():
        return [Recorder(cfg.batch_size, spe, lambda *a: None, lr_fn=_lr_table(cfg, spe),
                         data_wait_fn=prep.meter.total if prep.meter is not None else None,
                         epoch_samples=prep.plan["n_train"] - prep.plan["dropped_samples_per_epoch"])]

    out, epoch = {"engine": [], "bare": [], "engine_dispatch": [], "bare_dispatch": []}, 0
    for r in range(rounds + 1):  # round 0 traces the step: left out
        for side in (("engine", "bare") if r % 2 == 0 else ("bare", "engine")):
            dispatch[0] = 0.0
            t0 = time.perf_counter()
            prep.model.fit(prep.train_ds, epochs=epoch + 1, initial_epoch=epoch, verbose=0, shuffle=False,
                           callbacks=[*prep.callbacks, *(recorder() if side == "engine" else [])],
                           **{k: v for k, v in prep.plan["fit_args"].items() if k == "steps_per_epoch"})
            epoch += 1
            if r:
                out[side].append(time.perf_counter() - t0)
                out[f"{side}_dispatch"].append(dispatch[0] / spe)  # s per execution
    print(json.dumps(out))


def paired(cfg, rounds: int) -> None:
    """Print the in-process paired comparison (see paired_child)."""
    from engine.base.process import worker_env

    res = subprocess.run([sys.executable, __file__, "--paired-child", cfg.to_json(), "--rounds", str(rounds)],
                         capture_output=True, text=True, env=worker_env(), timeout=1200)
    if res.returncode:
        raise SystemExit(res.stderr[-2000:])
    t = json.loads(res.stdout.strip().splitlines()[-1])
    ratios = [b / e for e, b in zip(t["engine"], t["bare"])]  # samples/s engine / bare = time bare / engine
    print(f"in one process, {rounds} paired epochs (engine's Recorder vs no batch hook, alternating): "
          f"median epoch {statistics.median(t['engine']):.3f} s vs {statistics.median(t['bare']):.3f} s")
    report(ratios, "pairs")
    e_us, b_us = (1e6 * statistics.median(t[f"{k}_dispatch"]) for k in ("engine", "bare"))
    step_us = 1e6 * statistics.median(t["bare"]) / cfg.steps_per_epoch()
    extra = (e_us - b_us) / step_us
    print(f"Keras's batch-callback dispatch on the training thread (hooks included), per execution: engine "
          f"{e_us:.0f} us, bare {b_us:.0f} us; the difference is {extra:.2%} of a bare step "
          f"({step_us / 1e3:.2f} ms): engine/bare {1 / (1 + extra):.3f} from this alone; goal >= 0.98 by "
          f"this measure: {'met' if 1 / (1 + extra) >= 0.98 else 'NOT met'}")


def report(ratios: list[float], what: str) -> None:
    """The median ratio engine/bare against the goal, and the `what` (rounds, pairs)
    needed to resolve a 2% difference from their spread."""
    if not ratios:
        return
    med = statistics.median(ratios)
    print(f"median ratio engine/bare: {med:.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}); "
          f"goal >= 0.98: {'met' if med >= 0.98 else 'NOT met'}")
    if len(ratios) > 2:
        # Standard error of a median ~ 1.2533 sd / sqrt(n): n for a 95% half-width of 2%.
        sd = statistics.stdev(ratios)
        need = math.ceil((1.96 * 1.2533 * sd / 0.02) ** 2)
        print(f"spread: sd of the ratio {sd:.3f}; {what} needed to resolve a 2% difference "
              f"(95%, median): {max(need, 1)}")


def engine_rate(cfg, store_path) -> tuple[float, float, dict]:
    """(epoch-to-epoch samples/s over epochs 2..E, the run's headline steady samples/s,
    the instrumentation's own time: {'hooks': share of train_sec spent in the Recorder's
    batch hooks, 'writer': the writer thread's CPU time as a share of train_sec})."""
    from engine.jobs import runner
    from engine.store import Store

    (rid,) = runner.submit([cfg], store_path=store_path)
    run = runner.wait(rid, store_path=store_path, timeout_s=600)
    if run["status"] != "completed":
        raise SystemExit(f"engine run failed: {run['error']}")
    store = Store(store_path)
    try:
        ends = [e["t"] for e in store.metrics("epochs", rid)]
        rows = [r for r in store.metrics("executions", rid) if r["epoch"] >= 1]
    finally:
        store.close()
    samples = sum(r["samples_per_sec"] * r["duration"] for r in rows)  # as the worker counted them
    s = run["summary"]
    own = s.get("instrumentation") or {}
    train = s["train_sec"] + s["warmup_sec"]  # the hooks ran on every execution, warm-up included
    shares = {"hooks": own.get("batch_hooks_sec", 0.0) / train, "writer": (own.get("writer_cpu_sec") or 0.0) / train}
    return samples / (ends[-1] - ends[0]), s["samples_per_sec"], shares


def wait_for_idle_spare(store_path: Path, timeout_s: float = 90.0) -> None:
    """Once an engine run has ended, the queue starts a warm spare worker that
    imports TensorFlow (seconds of CPU): wait until it is ready and idle, so that
    it does not compete with the bare side's measurement."""
    from engine.jobs import runner

    if not runner.warm_enabled():
        return
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if any((store_path.parent / "spares").glob("*.ready")):
            return
        time.sleep(0.2)


def bare_rate(cfg) -> float:
    from engine.base.process import worker_env

    out = subprocess.run([sys.executable, __file__, "--bare-child", cfg.to_json()],
                         capture_output=True, text=True, env=worker_env(), timeout=600)
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])["samples_per_sec"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--samples", type=int, default=25600)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--model", default="cnn")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--steps-per-execution", type=int, default=1)
    p.add_argument("--paired", type=int, default=0, metavar="N",
                   help="also N paired epochs in one process (the Recorder's own cost, without the "
                        "process-to-process spread) [0]")
    p.add_argument("--bare-child", help=argparse.SUPPRESS)
    p.add_argument("--paired-child", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.bare_child:
        bare_child(a.bare_child)
        return
    if a.paired_child:
        paired_child(a.paired_child, a.rounds)
        return
    from engine.config import RunConfig
    from engine.hardware.machine import cpu_model

    cfg = RunConfig(dataset="synthetic", synthetic_shape=(8, 8, 1), synthetic_samples=a.samples,
                    model=a.model, batch_size=a.batch_size, epochs=a.epochs,
                    steps_per_execution=a.steps_per_execution, validation_fraction=0.01)
    store_path = Path(tempfile.mkdtemp(prefix="speedlab-bench-")) / "runs.sqlite"
    print(f"machine: {cpu_model()}, {os.cpu_count()} logical cores")
    print(f"config: {cfg.model} on synthetic 8x8x1, {cfg.epochs} epochs of {cfg.steps_per_epoch()} steps of "
          f"batch {cfg.batch_size}, steps_per_execution {cfg.steps_per_execution}")
    if a.paired:
        paired(cfg.replace(epochs=1), a.paired)
    ratios, own = [], []
    for i in range(a.rounds):
        # ABBA order: a drift in the machine's load (other jobs, thermal) does not favour one side.
        if i % 2 == 0:
            e, headline, shares = engine_rate(cfg, store_path)
            wait_for_idle_spare(store_path)
            b = bare_rate(cfg)
        else:
            b = bare_rate(cfg)
            e, headline, shares = engine_rate(cfg, store_path)
            wait_for_idle_spare(store_path)
        ratios.append(e / b)
        own.append(shares)
        print(f"round {i + 1}: engine {e:,.0f} samples/s, bare fit {b:,.0f} samples/s (epoch to epoch), "
              f"ratio {e / b:.3f}; engine headline steady {headline:,.0f} samples/s "
              f"({headline / e:.2f}x its epoch-to-epoch rate); measuring's own time: batch hooks "
              f"{shares['hooks']:.2%} of training, writer thread CPU {shares['writer']:.2%}")
    report(ratios, "rounds")
    if own:
        hooks, writer = (statistics.median(o[k] for o in own) for k in ("hooks", "writer"))
        print(f"measured inside the engine (no spread between processes), median of {len(own)}: "
              f"its batch hooks took {hooks:.2%} of the training time (on the training thread: "
              f"a direct cost), its writer thread {writer:.2%} in CPU time (a thread that may run "
              f"on another core); together {hooks + writer:.2%}, i.e. engine/bare >= "
              f"{1 / (1 + hooks + writer):.3f} if every such second delayed training; goal >= 0.98 by "
              f"this measure: {'met' if 1 / (1 + hooks + writer) >= 0.98 else 'NOT met'}")


if __name__ == "__main__":
    main()
