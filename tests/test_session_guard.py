"""The session guard (tests/helpers/session_guard.py) kills what a session left behind: a
process carrying the session's mark, in a session of its own, as a crashed worker's servers
and queues are; it spares unmarked processes and itself."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import session_guard

pytestmark = pytest.mark.worker

# Says "up" once it runs: Popen returns at exec's point of no return, before the kernel has
# set up the new program's environment, and /proc/<pid>/environ read then is empty (18 of 300
# reads right after Popen on a loaded 2-core machine, 2026-12-07; this test failed so once).
SLEEPER = [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(120)"]


def _started(mark: str) -> subprocess.Popen:
    """A sleeper in a session of its own with `mark` in its environment, once it runs."""
    proc = subprocess.Popen(SLEEPER, env={**os.environ, session_guard.MARK: mark}, start_new_session=True,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "up\n"
    return proc


def test_reap_kills_the_marked_left_behind_and_spares_the_rest():
    left = _started("guard-test-mark")
    other = _started("another-session")
    try:
        assert [p.pid for p in session_guard.marked_processes("guard-test-mark")] == [left.pid]
        killed = session_guard.reap("guard-test-mark")
        assert len(killed) == 1 and killed[0].startswith(f"{left.pid} ")
        assert left.poll() is not None  # ended (reaped by the guard)
        assert other.poll() is None  # another session's process lives on
        assert session_guard.marked_processes("guard-test-mark") == []
    finally:
        for p in (left, other):
            p.kill()
            p.wait()
            p.stdout.close()


def test_the_session_is_marked_and_its_own_processes_are_spared():
    mark = os.environ[session_guard.MARK]  # set by the controller before the workers started
    assert mark
    me = os.getpid()
    assert me not in [p.pid for p in session_guard.marked_processes(mark)]
