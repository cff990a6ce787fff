"""SpeedLabCallback: records any user script's `model.fit` as a SpeedLab run (issue 44, part 2).

The public import is ``from speedlab import SpeedLabCallback`` (speedlab/__init__.py). The callback
reuses the worker's measuring code: engine.training.recorder.Recorder times every execution and its
Writer thread commits the rows (the same append-only design, so the loop pays no more than a
worker-run does); engine.training.summary builds the same summary a worker stores. What it reads
from the script and its fit (batch size, accuracy keys, samples counted) is engine.training.script_fit;
this module is the callback: the run row, its plan and summary, the watch thread and the stop.

It never makes the user's training fail: every store error is caught, and a home it cannot write
to gives one warning, after which it does nothing.

Environment (the contract with ``python -m engine pairs``; all optional): SPEEDLAB_HOME (the store
folder), SPEEDLAB_GROUP (the run's group_id), SPEEDLAB_ROLE ('baseline' or 'run'), SPEEDLAB_RUN_FILE
(``{"run_id": N, "store": PATH}`` written there, atomically, once the run row exists), SPEEDLAB_SEED (the seed the
script used; kept in the config).

The run's config is a RunConfig dict filled with what the callback can read (backend, precision,
global batch size, epochs, steps per execution, learning rate, target, seed); its plan holds
``source: "callback"`` and the script's name, which readers show as "a script run".
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
import warnings
from types import SimpleNamespace
from typing import Optional

import keras

from engine.base.lines import one_line
from engine.store.rows import SCRIPT_RUN_SOURCE  # stdlib only: nothing heavy in the user's script
from engine.training import script_fit

LABEL = "a script run"


def write_run_file(path: str, run_id: int, store: Optional[str] = None) -> None:
    """Write ``{"run_id": N, "store": PATH}`` to `path` atomically (a temp file, then
    os.replace): the run and the store it is in (`python -m engine pairs` takes a side's run
    only from its own store)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        json.dump({"run_id": run_id, **({"store": store} if store else {})}, fh)
    os.replace(tmp, path)


def start_line(run_id: int, path) -> str:
    """The one line the callback prints (stderr) when it starts recording: the run, its store
    file and where to watch it (the dashboard's Runs and Train pages read the same default store,
    engine.store.db.home; SPEEDLAB_DASHBOARD_URL names a dashboard served elsewhere)."""
    url = os.environ.get("SPEEDLAB_DASHBOARD_URL") or "http://localhost:8501"
    return (f"SpeedLab: recording run #{run_id} in {path}; watch it at {url} (the dashboard) "
            f"or with `speedlab show {run_id}`")


class SpeedLabCallback(keras.callbacks.Callback):
    """Records this `fit` as a SpeedLab run in the store under $SPEEDLAB_HOME.

    Args:
        name: a name for the run (kept in its plan; default the script's file name).
        target_accuracy: validation accuracy (fraction) whose first crossing is the run's time to
            accuracy (s, `time_to_target_sec` in the summary); None: not measured. Validation
            accuracy is found under every name Keras logs (val_accuracy, val_acc,
            val_sparse_categorical_accuracy, val_categorical_accuracy, val_binary_accuracy).
        target_metric: the key of fit's logs the target is checked against instead (e.g.
            'val_top1'; a name without 'val_' means its validation form when fit logs one).
            A target metric that is not logged is said once, at the first epoch's end: one line
            on stderr and a warning kept with the run.
        batch_size: the global batch size (samples/step); default read from `fit`'s arguments.
        num_samples: the training-set size (samples per epoch, after validation_split); default
            read from the data fit sees (arrays: Keras's data adapter; a generator: the samples
            counted in its first epoch). Stored as the plan's `n_train`, from which a comparison
            counts samples to the target (its sample-efficiency factor).
        test_data: held-out data, `(x, y)` or a dataset of (x, y) batches, that every fit's end
            evaluates (`model.evaluate`, after the run's time is taken: outside every figure) for
            the summary's `test_accuracy`; without it `test_accuracy` is None with a `test_note`.

    Several fit() calls with the same callback (a two-phase fine-tune) are one run: epochs
    continue (the second fit's epoch 0 is stored after the first fit's last epoch), the target
    is checked on all of them, and time counts from the first fit's start (the time between
    fits is the timeline's 'other'; in a notebook that includes the time between cells). Each
    fit's end stores the run as it then stands (completed); a later fit reopens it.

    Never raises into training: a failing store ends recording with one warning.
    """

    def __init__(self, name: Optional[str] = None, target_accuracy: Optional[float] = None,
                 batch_size: Optional[int] = None, target_metric: Optional[str] = None,
                 num_samples: Optional[int] = None, test_data=None):
        super().__init__()
        if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(num_samples, int)
                                        or num_samples < 1):
            raise ValueError(f"num_samples: {num_samples!r} is not a sample count; give the training set's "
                             "size, e.g. num_samples=len(x_train), or leave it out to read it from the data")
        self.num_samples = num_samples
        self.test_data = test_data
        self.name = name
        self.target_accuracy = target_accuracy
        self.target_metric = target_metric
        self.warnings: list[str] = []
        self.batch_size = batch_size
        self.run_id: Optional[int] = None
        self._rec = None
        self._writer = None
        self._store = None
        self._tl = None
        self._off = False
        self._finished = False
        self._lock = threading.Lock()  # _finish: the training thread or the watch thread, once
        self._in_fit = False
        self._fit = None  # (thread id, frame) of the running fit
        self._raised: Optional[str] = None  # the train step's exception, one line
        self._stop_asked = False
        self._watch: Optional[threading.Thread] = None  # alive while a fit runs (`_watching`)
        self._watch_lock = threading.Lock()
        self._trainable: list[Optional[int]] = []  # trainable scalars at each fit's start

    # --- failure handling -------------------------------------------------
    def _disable(self, what: str, exc: BaseException) -> None:
        if not self._off:
            warnings.warn(f"SpeedLab: not recording this run ({what}: {type(exc).__name__}: {str(exc)[:200]})",
                          RuntimeWarning, stacklevel=3)
        self._off = True
        try:
            if self._writer is not None:
                self._writer.stop(patience_s=1.0)
            if self._store is not None and self.run_id is not None and not self._finished:
                self._store.finish_run(self.run_id, "failed", f"recording stopped: {type(exc).__name__}",
                                       only_if_active=True)
        except Exception:  # noqa: BLE001 - already giving up
            pass

    # --- begin --------------------------------------------------------------
    def on_train_begin(self, logs=None):
        if self._off:
            return
        self._trainable.append(script_fit.trainable_size(self.model))  # what this fit trains
        if self._rec is not None:  # a second fit with the same callback: the clock keeps running
            try:
                self._reopen()
            except Exception as e:  # noqa: BLE001 - never fail the user's training
                self._disable("restart", e)
                return
            self._call("read_fit", self.params or {})
            self._call("on_train_begin", logs)
            self._watch_fit()
            return
        try:
            self._begin()
        except Exception as e:  # noqa: BLE001 - never fail the user's training
            self._disable("start", e)
            return
        self._watch_fit()

    # --- a fit that raises, a stop request ------------------------------------
    def _watch_fit(self) -> None:
        """Note the running fit (its frame, its thread) and wrap its train function, so that
        the watch thread can end the run failed at once when fit raises in a process that lives
        on (a notebook cell, a try around fit), with the train step's exception as its reason."""
        if self._off or self.run_id is None:
            return
        try:
            frame = script_fit.fit_frame()
            self._fit = (threading.get_ident(), frame) if frame is not None else None
            self._raised = None
            fn = getattr(self.model, "train_function", None)
            if fn is not None and not getattr(fn, "_speedlab", False):
                self.model.train_function = script_fit.catching(fn, self)
            self._in_fit = True
            with self._watch_lock:
                if self._watch is None or not self._watch.is_alive():  # ended between fits, or broke
                    self._watch = threading.Thread(target=self._watching, daemon=True, name="speedlab-watch")
                    self._watch.start()
        except Exception as e:  # noqa: BLE001 - never fail the user's training
            self._disable("watch", e)

    def _fit_running(self) -> bool:
        """Whether the noted fit's frame is still on its thread's stack."""
        if self._fit is None:
            return True  # no frame found: only on_train_end or the exit end it
        tid, target = self._fit
        frame = sys._current_frames().get(tid)
        try:
            while frame is not None:
                if frame is target:
                    return True
                frame = frame.f_back
            return False
        finally:
            del frame

    def _watching(self) -> None:
        """The watch thread: every WATCH_S, a fit that left without on_train_end ends the run
        failed; every STOP_POLL_S, a stop request in the store (Stop, `engine cancel`) asks
        training to stop at its next batch (Recorder.stop_event: model.stop_training)."""
        from engine.store import Store

        store, next_poll = None, 0.0
        try:
            while not self._off:
                time.sleep(WATCH_S)
                if not self._in_fit or self._finished:
                    # Between fits the thread ends (the next fit starts another): a process that
                    # lives on (a notebook) keeps no thread waking 4 times a second per run.
                    with self._watch_lock:
                        if not self._in_fit or self._finished:
                            self._watch = None
                            return
                    continue
                if not self._fit_running():
                    if self._in_fit and not self._finished:
                        self._in_fit, self._fit = False, None  # the frame holds fit's data: let it go
                        reason = self._raised_line("fit() ended without finishing (it raised or was interrupted)")
                        s = Store(self._home)
                        try:
                            self._finish("failed", reason, store=s)
                        except Exception:  # noqa: BLE001 - no summary: the run still ends, with its reason
                            s.finish_run(self.run_id, "failed", reason, only_if_active=True)
                            self._finished = True
                        finally:
                            s.close()
                    continue
                if time.monotonic() >= next_poll and not self._stop_asked:
                    next_poll = time.monotonic() + STOP_POLL_S
                    store = store or Store(self._home, patience_s=0, busy_timeout_s=0.5)
                    run = store.get_run(self.run_id)
                    if run and run.get("cancel_requested"):
                        self._stop_asked = True
                        self._rec.stop_event.set()
        except Exception:  # noqa: BLE001 - the watch is best effort; training goes on
            pass
        finally:
            if store is not None:
                try:
                    store.close()
                except Exception:  # noqa: BLE001
                    pass

    def _reopen(self) -> None:
        """A later fit of the same run: the run is running again, with a new writer."""
        from engine.store import Store
        from engine.training.writer import Writer

        if not self._finished:
            return
        home = self._home
        self._store = Store(home)
        self._store.update_run(self.run_id, status="running", ended=None, error=None, cancel_requested=None)
        self._stop_asked = False
        self._rec.stop_event.clear()
        self._writer = Writer(lambda: Store(home, patience_s=0, busy_timeout_s=0.5), self.run_id)
        self._writer.set_t0(self._rec.t0)
        self._writer.start()
        self._finished = False

    def _missing_target(self, line: str) -> None:
        print(line, file=sys.stderr, flush=True)
        self.warnings.append(line)
        self._store.update_run(self.run_id, plan={**self._plan, "warnings": list(self.warnings)})

    def _begin(self) -> None:
        from engine.config import RunConfig
        from engine.store import Store, default_path, old_store_line
        from engine.training.recorder import Recorder
        from engine.training.writer import Writer
        from engine.training.timeline import Timeline

        tl = Timeline()  # process start (psutil create_time): everything before fit is setup
        tl.mark("startup")
        model = self.model
        params = self.params or {}
        read_gb = self.batch_size or script_fit.global_batch(model)
        self._gb_known = read_gb is not None
        gb = read_gb or 32
        spe = int(getattr(model, "steps_per_execution", None) or getattr(model, "_steps_per_execution", 1) or 1)
        steps = int(params.get("steps") or 0) or None  # None: a generator without length
        epochs = int(params.get("epochs") or 1)
        policy = keras.config.dtype_policy().name
        replicas = script_fit.replicas()
        seed = int(os.environ.get("SPEEDLAB_SEED", "0") or 0)
        lr = script_fit.learning_rate(model)
        self._read = dict(backend=keras.backend.backend(), batch_size=gb, steps_per_execution=spe,
                          learning_rate=lr, jit_compile=bool(getattr(model, "jit_compile", False)))
        cfg = script_fit.script_config(
            RunConfig, **{**self._read, "learning_rate": lr if lr and 0 < lr <= 10 else 1e-3},
            precision=policy if policy in ("float32", "mixed_float16", "mixed_bfloat16") else "float32",
            epochs=epochs, seed=seed, target_accuracy=self.target_accuracy, devices=max(replicas, 1))
        self._policy = policy
        self._replicas = replicas
        script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
        home = default_path()
        store = Store(home)
        store.writable()
        role = os.environ.get("SPEEDLAB_ROLE") or "run"
        group = os.environ.get("SPEEDLAB_GROUP") or None
        self._plan = {"source": SCRIPT_RUN_SOURCE, "label": LABEL, "script": script,
                      "name": self.name or script,
                      "argv": [str(a)[:200] for a in sys.argv[:20]], "steps_per_epoch": steps,
                      "epochs": epochs, "total_steps": steps * epochs if steps else None, "global_batch_size": gb,
                      "replicas": replicas, "precision_policy": policy,
                      "compute_dtype": script_fit.policy_dtype(model, "compute"),
                      "variable_dtype": script_fit.policy_dtype(model, "variable"),
                      "device_kind": script_fit.device_kind(),
                      "per_replica_batch_size": gb // max(replicas, 1), "dropped_samples_per_epoch": 0,
                      "effective_learning_rate": lr, "persistent_iterators": {},
                      "input_batches_per_sec": None}
        from engine.base.process import start_time

        # pid + its start time in the same insert as the run: the runner's reconcile keeps a
        # live script's run running, and ends it failed once the script is gone.
        run_id = store.create_run(json.dumps(cfg.to_dict()), role=role, group_id=group, status="running",
                                  started=time.time(), pid=os.getpid(), pid_started=start_time(), plan=self._plan,
                                  environment=script_fit.environment())
        self._store, self.run_id, self._tl, self._home = store, run_id, tl, home
        print(start_line(run_id, store.path), file=sys.stderr, flush=True)
        moved = old_store_line()
        if moved:  # runs of this folder's older store are not in this one: say where they are
            print(f"SpeedLab: {moved}", file=sys.stderr, flush=True)
        import atexit

        atexit.register(self._at_exit)  # a fit that raised never calls on_train_end
        path = os.environ.get("SPEEDLAB_RUN_FILE")
        if path:
            write_run_file(path, run_id, os.path.realpath(store.path))
        writer = Writer(lambda: Store(home, patience_s=0, busy_timeout_s=0.5), run_id)
        writer.start()
        self._writer = writer

        def on_start(t0):
            writer.set_t0(t0)
            store.update_run(run_id, plan={**self._plan, "train_started_at": time.time()})

        def sink(table: str, row: tuple) -> None:  # the current writer: a later fit starts a new one
            if table == "executions" and row[6] is None:
                # Samples unknown: the store's samples_per_sec cannot say 'unknown', and any
                # number there would be wrong; the summary says why there is no throughput.
                return
            self._writer.push(table, row)

        rec = script_fit.recorder_class(Recorder)(gb, steps or 1, sink, target_accuracy=self.target_accuracy,
                                        on_start=on_start, timeline=tl, plain_val_loss=True)
        rec._setup_script()
        rec.target_metric, rec.on_missing_target = self.target_metric, self._missing_target
        rec.set_model(model)
        rec.set_params(params)
        rec.read_fit(params)
        self._rec = rec
        self._call("on_train_begin", None)

    # --- the Recorder's hooks, guarded ----------------------------------------
    def _call(self, hook: str, *args):
        if self._off or self._rec is None:
            return
        try:
            getattr(self._rec, hook)(*args)
        except Exception as e:  # noqa: BLE001 - never fail the user's training
            self._disable(hook, e)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._call("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._call("on_train_batch_end", batch, logs)

    def on_test_begin(self, logs=None):
        self._call("on_test_begin", logs)

    def on_test_batch_end(self, batch, logs=None):
        self._call("on_test_batch_end", batch, logs)

    def on_test_end(self, logs=None):
        self._call("on_test_end", logs)

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, logs)

    # --- end ------------------------------------------------------------------
    def on_train_end(self, logs=None):
        if self._off or self._rec is None:
            return
        self._in_fit, self._fit = False, None  # the frame holds fit's data: let it go
        self._call("on_train_end", logs)
        try:
            if self._stop_asked:
                self._finish("cancelled", "stopped on request (Stop or engine cancel): training stopped at a "
                             "batch's end; its process was not signalled; what it measured is kept")
            else:
                self._finish("completed", None)
        except Exception as e:  # noqa: BLE001 - never fail the user's training
            traceback.print_exc()
            self._disable("finish", e)

    def _at_exit(self) -> None:
        """At interpreter exit: a run still open (fit raised, or was interrupted) ends failed,
        with what it measured, so that nobody waits for it."""
        if self._off or self._finished or self._store is None:
            return
        uncaught = getattr(sys, "last_value", None)  # set before atexit when the script dies of it
        if self._raised is None and isinstance(uncaught, BaseException):  # raised outside the train step
            self._raised = script_fit.exception_line(uncaught)
        try:
            self._finish("failed", self._raised_line("the script ended before fit finished (fit raised or was "
                                                     "interrupted)"))
        except Exception:  # noqa: BLE001 - exiting anyway
            try:
                self._store.finish_run(self.run_id, "failed", "the script ended before fit finished",
                                       only_if_active=True)
            except Exception:  # noqa: BLE001
                pass

    def _raised_line(self, otherwise: str) -> str:
        """The failed run's reason: the train step's exception when it raised one (an uncaught
        one too: the script then exits before the watch thread looks), else `otherwise`."""
        return one_line(f"fit() raised: {self._raised}" if self._raised else otherwise)

    def _finish(self, status: str, error: Optional[str], store=None) -> None:
        """End the run: stop the writer, store the summary. `store`: the watch thread's own
        (sqlite connections stay in their thread); default the training thread's."""
        with self._lock:
            if self._finished:
                return
            self._finish_locked(status, error, store)

    def _finish_locked(self, status: str, error: Optional[str], store) -> None:
        self._writer.stop(patience_s=30.0)
        summary = self.summary()
        n_train, note = self._n_train()
        db = store or self._store
        row = db.get_run(self.run_id) or {}
        stored = row.get("plan") or self._plan  # keeps what was added since
        gb, fixed = summary.get("global_batch_size"), {}
        if not self._gb_known:  # fit did not say (a generator): what the steps held, or unknown
            fixed = {"global_batch_size": gb, "per_replica_batch_size": summary.get("per_replica_batch_size")}
            if gb and row.get("config"):
                db.update_run(self.run_id, config=json.dumps({**row["config"], "batch_size": gb}))
        db.update_run(self.run_id, plan={**stored, **fixed, "n_train": n_train, "n_train_note": note})
        # Held-out accuracy, after every time above was taken; only where training ended well,
        # on the training thread (the watch thread ends runs whose fit raised).
        summary.update(self._test_accuracy() if status == "completed" and store is None else
                       {"test_accuracy": None, "test_note": f"not measured: the run ended {status}"})
        if self._writer.lost_total:  # as engine.jobs.worker.incomplete_summary
            summary.update(metrics_incomplete=self._writer.lost_total, metrics_lost=dict(self._writer.lost))
        summary.update(run_id=self.run_id, status=status, error=error, warnings=list(self.warnings), warm_worker=False,
                       source=SCRIPT_RUN_SOURCE)
        (store or self._store).finish_run(self.run_id, status, error, summary=summary, only_if_active=True)
        self._finished = True
        if store is None:
            self._store.close()

    def _global_batch(self) -> Optional[int]:
        """Samples per step over all replicas: as read from fit, else (a generator's, a
        PyDataset's) the largest batch counted; None when neither is known."""
        rec = self._rec
        if self._gb_known:
            return self._read["batch_size"]
        if rec.samples and not rec.unknown_samples:
            return max(n // max(b, 1) for n, b in zip(rec.samples, rec.batches))
        return None

    def _n_train(self) -> tuple[Optional[int], Optional[str]]:
        """(training-set size in samples, None), or (None, why it is not known)."""
        if self.num_samples is not None:
            return self.num_samples, None
        sizes = list(self._rec.fit_sizes)
        if not sizes or None in sizes:
            return None, ("not known: some batches' sizes were not reported; give "
                          "SpeedLabCallback(num_samples=...)")
        if len(set(sizes)) > 1:
            return None, (f"not known: the fits trained on {', '.join(map(str, sizes))} samples an epoch; "
                          "give SpeedLabCallback(num_samples=...)")
        return sizes[0], None

    def _test_accuracy(self) -> dict:
        """{'test_accuracy' (fraction, or None), 'test_note' (why None), 'test_samples' (the
        arrays' rows; absent for a data set of batches)} from evaluating
        `test_data` with the model as fit left it."""
        if self.test_data is None:
            return {"test_accuracy": None,
                    "test_note": "not measured: give SpeedLabCallback(test_data=(x_test, y_test)) held-out data"}
        try:
            data = self.test_data
            args = list(data) if isinstance(data, (tuple, list)) else [data]
            logs = self.model.evaluate(*args, verbose=0, return_dict=True)
            key = script_fit.accuracy_key(logs, False)
            if key is None:
                return {"test_accuracy": None, "test_note": f"not measured: evaluate() logs no accuracy (it logs: "
                                                            f"{', '.join(sorted(logs))[:150]})"}
            n = len(args[0]) if len(args) > 1 and hasattr(args[0], "__len__") else None  # arrays: their rows
            return {"test_accuracy": float(logs[key]), "test_note": None, "test_samples": n}
        except Exception as e:  # noqa: BLE001 - never fail the user's script
            return {"test_accuracy": None, "test_note": one_line(f"not measured: evaluate() raised "
                                                                 f"{type(e).__name__}: {e}")}

    def summary(self) -> dict:
        """The run's summary: engine.training.summary.RunSummary's keys, plus MFU (engine.report.mfu)."""
        from engine.report.measure import steady_state
        from engine.training.summary import RunSummary, fused_optimizer_on, loss_scale, progress, time_accounts

        rec, model, plan = self._rec, self.model, self._plan
        cfg = SimpleNamespace(**self._read)  # what was read, even where the stored config fell back
        unknown = rec.unknown_samples
        counted = [n or 0 for n in rec.samples]
        timing = {**steady_state(rec.durations, rec.batches, cfg.batch_size, warmup_flags=rec.warmups,
                                 samples=counted),
                  **time_accounts(self._tl, sum(counted))}
        if unknown:  # a throughput from guessed sample counts would be wrong: none
            timing.update(samples_per_sec=None, samples_per_sec_mean=None, samples_per_sec_iqr=None,
                          end_to_end_samples_per_sec=None)
        gb = self._global_batch()
        waits = [w for w, warm in zip(rec.data_waits, rec.warmups) if w is not None and not warm]
        flops = script_fit.model_flops(model, self._trainable)
        s = RunSummary(
            **timing, persistent_iterators={}, replicas=self._replicas, workers=1, replicas_simulated=False,
            device_kind=plan["device_kind"], backend=cfg.backend, precision=self._policy,
            compute_dtype=plan["compute_dtype"], variable_dtype=plan["variable_dtype"],
            steps_per_execution=cfg.steps_per_execution, jit_compile=cfg.jit_compile,
            global_batch_size=gb, per_replica_batch_size=gb // max(self._replicas, 1) if gb else None,
            dropped_samples_per_epoch=0, effective_learning_rate=cfg.learning_rate or 0.0, schedule="script run",
            label_smoothing=0.0, mixup_alpha=0.0, train_accuracy_on_mixed_targets=False, init_from=None,
            pretrained=False, loss_scale=script_fit.safe(loss_scale, model),
            fused_optimizer=bool(script_fit.safe(fused_optimizer_on, model)),
            **progress(SimpleNamespace(stop_at_target=False), rec),
            data_wait_sec=sum(waits) if waits else None, data_wait_share=None, input_batches_per_sec=None,
            instrumentation={"batch_hooks_sec": rec.hook_sec}, validation_traced_ahead=None,
            flops_per_sample=flops.get("flops_per_sample"),
            forward_flops_per_sample=flops.get("forward_flops_per_sample"),
            flops_uncounted=flops.get("flops_uncounted"), freeze_epochs=None, finetune_learning_rate=None,
            flops_all_taps_per_sample=flops.get("flops_all_taps_per_sample"),
            flops_source=flops.get("flops_source"), flops_xla_per_sample=flops.get("flops_xla_per_sample"),
            flops_note=flops.get("flops_note"))
        out = s.to_dict()
        out["instrumentation"]["writer_cpu_sec"] = self._writer.cpu_sec
        if unknown:
            out["throughput_note"] = (f"not measured: the samples of {unknown} of {len(rec.samples)} executions "
                                      "are unknown (Keras did not report their batch size); those executions "
                                      "are not stored as throughput points")
        if rec.target_missing:
            out["time_to_target_note"] = "not measured: " + rec.target_missing.removeprefix("SpeedLab: ")
        if out.get("samples_per_sec"):
            try:
                from engine.report import mfu

                out.update(mfu.machine_fields(out, out.get("flops_per_sample"), measure_clock=True))
            except Exception as e:  # noqa: BLE001 - a missing MFU must not fail the run
                out["peak_source"] = f"MFU not computed: {type(e).__name__}: {str(e)[:200]}"
        return out


WATCH_S = 0.25  # how often the watch thread looks for a fit that left without on_train_end (s)
STOP_POLL_S = 1.0  # how often it reads the store for a stop request (s)
