"""Benchmark worker: ``python -m engine.bench.worker`` reads a job (JSON) on
stdin and prints one JSON line per measured cell: {'cell', 'repeat',
'samples_per_sec' (steady median), 'warmup_sec', 'compiled' (whether this repeat built
and compiled the model), 'steady_steps' (batches after the warm-up execution),
'wall_sec' (the cell's build and fit)};
{'error': line} on failure. All cells of one job share one backend and one device
layout (both fixed per process). A cell's model is built and compiled once: its
repeats fit it again (its traced function kept), each repeat measured on its own.

With 'wait_go' in the job (the first stdin line), the worker imports its framework,
configures its devices and loads the data, prints {'ready': true} and waits for a
second line ('go') before it measures: the caller starts every layout's worker at
once, so that their start-ups overlap, and lets one measure at a time.

A fit ends early once it has measured enough steady state (`EnoughSteady`): a slow
cell (XLA on a CPU runs at a third of the baseline's rate) need not train all its
steps x epochs to give its median.
"""
from __future__ import annotations

import json
import sys
import time
import traceback


def cell_config(work: dict, cell: dict):
    """The RunConfig of one cell: synthetic data with exactly work['steps'] batches
    per epoch (20% of samples held out, unused), or the real data set
    work['dataset'] (its 80% training split; validation unused)."""
    from engine.config import RunConfig

    if work.get("dataset", "synthetic") != "synthetic":
        return RunConfig(dataset=work["dataset"], backend=job_backend(work, cell), validation_fraction=0.2,
                         model=work["model"], batch_size=work["batch_size"], epochs=work["epochs"],
                         precision=cell["precision"], steps_per_execution=cell["steps_per_execution"],
                         jit_compile=cell["jit_compile"], devices=cell["devices"])
    n_train = work["steps"] * work["batch_size"]
    return RunConfig(dataset="synthetic", backend=job_backend(work, cell), synthetic_shape=tuple(work["synthetic_shape"]),
                     synthetic_samples=n_train * 5 // 4, validation_fraction=0.2,
                     model=work["model"], batch_size=work["batch_size"], epochs=work["epochs"],
                     precision=cell["precision"], steps_per_execution=cell["steps_per_execution"],
                     jit_compile=cell["jit_compile"], devices=cell["devices"])


# A fit stops once it has at least this much steady state (after its first execution, the
# warm-up): enough for a median over >= 16 steps and >= 2 s (a quiet 2-core CPU's
# float32 baseline trains its whole 64 steps in about 1.6 s, so the fast cells run in full).
STEADY_MIN_STEPS = 16
STEADY_MIN_S = 2.0


def enough_steady(durations: list[float], batches: list[int], min_steps: int = STEADY_MIN_STEPS,
                  min_s: float = STEADY_MIN_S) -> bool:
    """Whether the executions after the first (warm-up) hold >= `min_steps` batches
    and >= `min_s` seconds (`durations`: s per execution, `batches`: per execution)."""
    return sum(batches[1:]) >= min_steps and sum(durations[1:]) >= min_s


def job_backend(work: dict, cell: dict) -> str:
    """The cell's Keras backend (cells without one are TensorFlow's)."""
    return cell.get("backend", work.get("backend", "tensorflow"))


def main() -> int:
    job = json.loads(sys.stdin.readline())
    work = job["workload"]
    try:
        backend = job.get("backend", "tensorflow")
        from engine.training import backends

        backends.use(backend, "auto", job["devices"])  # before anything imports Keras
        if backend == "jax":
            from engine.training import jax_devices

            setup = jax_devices.configure("auto", job["devices"])
        else:
            from engine.training import devices

            setup = devices.configure("auto", job["devices"])  # first TF action
        import keras

        from engine.data import datasets
        from engine.report.measure import steady_state
        from engine.training.recorder import Recorder
        from engine.training.build import prepare

        class EnoughSteady(keras.callbacks.Callback):
            """Stops the fit at the end of the execution that completes `enough_steady`."""

            def __init__(self, rec):
                super().__init__()
                self.rec = rec

            def on_train_batch_end(self, batch, logs=None):
                if enough_steady(self.rec.durations, self.rec.batches, min_steps, min_s):
                    self.model.stop_training = True

        # The workload may set its own minimum (tests); the quick matrix uses the defaults.
        min_steps = work.get("steady_min_steps", STEADY_MIN_STEPS)
        min_s = work.get("steady_min_s", STEADY_MIN_S)
        data = datasets.load(cell_config(work, job["cells"][0]))
        if job.get("wait_go"):
            print(json.dumps({"ready": True}), flush=True)
            sys.stdin.readline()  # 'go': the other workers are idle now
        prepared = {}  # cell index -> its compiled model and pipeline, fitted again by later repeats
        for r in range(job["repeats"]):
            for cell in job["cells"]:
                t0 = time.perf_counter()
                cfg = cell_config(work, cell)
                prep = prepared.get(cell["index"])
                compiled = prep is None
                if compiled:
                    keras.backend.clear_session()
                    prep = prepared[cell["index"]] = prepare(cfg, setup, data)
                else:
                    # A repeat fits the model it built and compiled before: its train function is
                    # traced already, so a repeat pays no second compilation (its first execution
                    # is still warm-up, left out). The global dtype policy is the cell's again.
                    keras.mixed_precision.set_dtype_policy(cfg.precision)
                rec = Recorder(cfg.batch_size, prep.steps_per_epoch, sink=lambda t, row: None)
                prep.model.fit(prep.train_ds, epochs=cfg.epochs, verbose=0, shuffle=False,
                               callbacks=[rec, EnoughSteady(rec)])
                st = steady_state(rec.durations, rec.batches, cfg.batch_size, samples=rec.samples)
                print(json.dumps({"cell": cell["index"], "repeat": r, "samples_per_sec": st["samples_per_sec"],
                                  "warmup_sec": st["warmup_sec"], "compiled": compiled,
                                  "steady_steps": sum(rec.batches[1:]),
                                  "wall_sec": time.perf_counter() - t0}),
                      flush=True)
    except Exception as exc:  # noqa: BLE001 - reported as one line to the caller
        traceback.print_exc()
        from engine.base.lines import error_line

        print(json.dumps({"error": error_line(exc)}), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
