"""Shared fixtures: every test gets its own store folder (SPEEDLAB_HOME)."""
import os
import time

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Runs start cold and queues exit soon after their last run, as each test has its
# own store; tests of the warm spare worker switch it on themselves.
os.environ.setdefault("SPEEDLAB_WARM_WORKER", "0")
os.environ.setdefault("SPEEDLAB_QUEUE_IDLE_S", "1")


@pytest.fixture
def store_home(tmp_path, monkeypatch):
    """A fresh SPEEDLAB_HOME for the test; the store lives at tmp_path/runs.sqlite."""
    monkeypatch.setenv("SPEEDLAB_HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def store(store_home):
    from engine.store import Store

    s = Store()
    yield s
    s.close()


# Long enough to cancel or kill mid-run: 400 epochs of 4 steps on 64 synthetic 8x8 images.
LONG_RUN = dict(dataset="synthetic", synthetic_shape=(8, 8, 1), synthetic_samples=80, model="mlp",
                batch_size=16, epochs=400, validation_fraction=0.2)


@pytest.fixture
def start_long_run(store_home):
    """Submit a long run (extra RunConfig fields as keywords) and return
    (run_id, store) once it has written `n` executions (default 5)."""
    from engine.jobs import runner
    from engine.config import RunConfig
    from engine.store import Store

    def start(n=5, timeout=120, **fields):
        (rid,) = runner.submit([RunConfig(**{**LONG_RUN, **fields})])
        st = Store()
        t0 = time.monotonic()
        while len(st.metrics("executions", rid)) < n:
            assert time.monotonic() - t0 < timeout, f"run {rid} wrote fewer than {n} executions"
            time.sleep(0.2)
        return rid, st

    return start
