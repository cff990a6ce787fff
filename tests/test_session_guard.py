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

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def test_reap_kills_the_marked_left_behind_and_spares_the_rest():
    env = {**os.environ, session_guard.MARK: "guard-test-mark"}
    left = subprocess.Popen(SLEEPER, env=env, start_new_session=True)
    other = subprocess.Popen(SLEEPER, env={**os.environ, session_guard.MARK: "another-session"},
                             start_new_session=True)
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


def test_the_session_is_marked_and_its_own_processes_are_spared():
    mark = os.environ[session_guard.MARK]  # set by the controller before the workers started
    assert mark
    me = os.getpid()
    assert me not in [p.pid for p in session_guard.marked_processes(mark)]
