"""Trace the evaluation step while the first epoch trains, instead of after it.

Keras traces its test function at the first validation, at the end of the first
epoch: 0.15-0.5 s of pure Python on the digits CNN on a 2-core CPU, during which
nothing trains, and always inside the time to accuracy. Once the train step is
traced, the main thread spends most of the first epoch inside TensorFlow's C++
runtime (graph optimisation, the steps themselves), which releases the GIL: a
second thread can build the test function's graph then. The first validation
waits for it (any wait is filed as the validation trace's warm-up). The graphs
are the ones Keras would trace: `make_test_function()` and the concrete
functions for the very iterators fit will use.

Executions that run while the thread traces share the CPU with it, so the
Recorder flags them as warm-up (`busy`): they are not steady state.
Only TensorFlow (JAX compiles on its own schedule), and only where both
iterators were started in setup (engine.training.iterators.prestart): their
type specs are the traces' keys.
"""
from __future__ import annotations

import functools
import sys
import threading
from typing import Optional

from engine.training.keras_patches.function_closure import tf_function

ENABLED = True  # tests switch it off to compare with Keras's own order
SWITCH_INTERVAL_S = 0.001  # while tracing: the training loop gets the GIL back within 1 ms, not 5


class EvalTraceAhead:
    """Trace `model`'s test function for `val_iterator` on a background thread while
    the first epoch trains.

    The callback (`callback()`, after the Recorder in fit's list) acts at the first
    training execution's begin: it traces the train function for `train_iterator`
    itself (what Keras's call would do next, so the time stays in that execution),
    then starts the thread, whose Python then runs while the main thread is inside
    TensorFlow's runtime; the first validation waits for it. `busy()` says whether
    the thread is tracing now; `error` holds a failure's line (Keras then traces as
    usual); `traced_sec` the thread's wall seconds.
    """

    def __init__(self, model, train_iterator, val_iterator):
        self.model = model
        self.train_iterator = train_iterator
        self.val_iterator = val_iterator
        self.started = False
        self.thread: Optional[threading.Thread] = None  # None: nothing traced ahead
        self.error: Optional[str] = None
        self.traced_sec: Optional[float] = None

    def busy(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start(self) -> None:
        """Trace the train function now, then the test function on a thread (once)."""
        if self.started:
            return
        self.started = True
        try:
            _concrete(self.model.train_function, self.train_iterator)
        except Exception as e:  # noqa: BLE001 - Keras traces it at its call, validation as usual
            self.error = _line("train function", e)
            return
        self.thread = threading.Thread(target=self._trace, name="speedlab-eval-trace", daemon=True)
        self.thread.start()

    def _trace(self) -> None:
        import time

        t0 = time.perf_counter()
        old = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        try:
            self.model.make_test_function()
            _concrete(self.model.test_function, self.val_iterator)
        except Exception as e:  # noqa: BLE001 - validation then traces in the main thread, as Keras would
            self.error = _line("test function", e)
        finally:
            sys.setswitchinterval(old)
            self.traced_sec = time.perf_counter() - t0

    def wait(self) -> None:
        if self.thread is not None:
            self.thread.join()

    def callback(self):
        """The Keras callback that starts the tracing and waits for it (one instance per run)."""
        return _callback_class()(self)


@functools.lru_cache(maxsize=None)
def _callback_class():
    # One class for the process: a class made per run is a reference cycle (a type always is),
    # and its methods' closure held this run's EvalTraceAhead and so the train iterator, whose
    # tf.data threads then ran until a full collection, which waited for them (up to 60 s seen).
    import keras

    class _Ahead(keras.callbacks.Callback):
        def __init__(self, ahead: EvalTraceAhead):
            super().__init__()
            self.ahead = ahead

        def on_train_batch_begin(self, batch, logs=None):
            self.ahead.start()

        def on_test_begin(self, logs=None):
            self.ahead.wait()

    return _Ahead


def _line(what: str, e: BaseException) -> str:
    return f"{what}: {type(e).__name__}: {e}".splitlines()[0][:300]


def _concrete(function, iterator) -> None:
    """Trace Keras's train or test function (its tf.function inside) for `iterator`, without running it."""
    fn = tf_function(function)
    if fn is None:
        raise RuntimeError("no tf.function inside Keras's function")
    fn.get_concrete_function(iterator)
