"""A test process that dies or is signalled (docs/testing.md, "A crashed test process").

The suite's xdist scheduler (tests/helpers/scheduling.py) after a worker dies mid-test: the
session ends, the test it died in is reported failed once and not run again, and every other
test runs once, the rest of the dead test's unit included. With pytest-xdist 3.8.0's own
LoadScopeScheduling the same session waits forever (pytest-dev/pytest-xdist#1323).

A SIGTERM to an xdist worker (tests/conftest.py `_stray_signal`) is recorded and survived."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = """
import pytest
from tests.helpers.scheduling import scheduler

@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    # test_b.py is one unit, as a shared module is in the suite; every other test its own
    return scheduler(config, log, lambda nodeid: nodeid.split("::")[0] if nodeid.startswith("test_b.py") else nodeid)

@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    if error:
        import sys
        from tests.helpers.scheduling import death_line
        sys.stderr.write(death_line(node) + "\\n")
"""
PASSING = "def test_1(): pass\ndef test_2(): pass\ndef test_3(): pass\n"
DIES = """
import os, signal
def test_before(): pass
def test_dies():
    with open("ran_dies", "a") as f:
        f.write("x")
    os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
def test_after(): pass
"""


@pytest.mark.worker
@pytest.mark.parametrize("workers", [1, 2])
def test_a_worker_that_dies_mid_test_fails_that_test_once_and_the_session_ends(tmp_path, workers):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_a.py").write_text(PASSING)
    (tmp_path / "test_b.py").write_text(textwrap.dedent(DIES))
    (tmp_path / "test_c.py").write_text(PASSING)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    session = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers),
                                "-rf", "."], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        out, _ = session.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(session.pid, signal.SIGKILL)  # the session and its xdist workers
        out, _ = session.communicate()
        pytest.fail(f"the session did not end in 120 s after its worker died:\n{out}")
    assert session.returncode == 1, out
    assert re.search(r"\b1 failed, 8 passed\b", out), out  # test_a 3, test_b's other 2, test_c 3
    assert "crashed while running 'test_b.py::test_dies'" in out, out
    assert (tmp_path / "ran_dies").read_text() == "x", out  # not run again on the replacement
    # How it died, beside xdist's "Not properly terminated" (CI's deaths said nothing more).
    assert re.search(r"^\[gw\d\] ended by SIGKILL; memory available [\d.]+ of [\d.]+ GiB; kernel OOM kills "
                     r"since boot: \S+; largest: \d+ ", out, re.M), out


def test_a_stray_sigterm_to_a_test_process_is_recorded_and_survived(request):
    if not hasattr(request.config, "workerinput"):
        pytest.skip("xdist workers only (scripts/test.sh runs the suite under xdist)")
    handler = signal.getsignal(signal.SIGTERM)
    assert callable(handler) and handler.__name__ == "_stray_signal"
    stray = sys.modules[handler.__module__]._STRAY  # tests/conftest.py's record
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.01)  # Python runs the handler in the main thread between two bytecodes
    try:
        assert len(stray) == 1 and stray[0].startswith("SIGTERM, received at:\n"), stray
        assert "test_a_stray_sigterm_to_a_test_process_is_recorded_and_survived" in stray[0], stray
    finally:
        stray.clear()  # said here, not as this test's warning
