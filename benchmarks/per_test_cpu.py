"""A pytest plugin for benchmarks/suite_cpu.py --per-test: each test's CPU in its own test process.

suite_cpu reads the CPU of every process from /proc, but a test process's own work (in-process
TensorFlow, AppTest's page runs) is one sum there. Loaded with ``-p benchmarks.per_test_cpu``
and $SUITE_CPU_PER_TEST set, every test process appends one JSON line per test to that file:
{'test': node id, 'cpu' (CPU-s of the test process over setup, call and teardown, all its
threads: time.process_time), 'wall' (s), 'start' (Unix time, s), 'proc' (the xdist worker, as
"gw0", or "main")}: enough to draw each test process's timeline. Processes the test started are
not in 'cpu'.
"""
from __future__ import annotations

import json
import os
import time

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item):
    path = os.environ.get("SUITE_CPU_PER_TEST")
    c0, w0, t0 = time.process_time(), time.perf_counter(), time.time()
    yield
    if path:
        line = json.dumps({"test": item.nodeid, "cpu": round(time.process_time() - c0, 3),
                           "wall": round(time.perf_counter() - w0, 3), "start": round(t0, 3),
                           "proc": os.environ.get("PYTEST_XDIST_WORKER", "main")})
        with open(path, "a") as fh:  # one short append a test: lines from several processes stay whole
            fh.write(line + "\n")
