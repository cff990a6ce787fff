"""No test session outlives its limit or leaves a process behind (docs/testing.md, "A crashed
test process"). A worker that dies mid-test never runs the teardown that stops the servers,
queues and browsers its tests started in sessions of their own; and CI once waited 90 minutes
on a session that never ended (xdist's scheduler, since mended: tests/helpers/scheduling.py).

The controller (the one `pytest` process, not an xdist worker) marks every process of the
session with SPEEDLAB_TEST_RUN in the environment that all of them inherit, kills the marked
ones that are left when the session ends, and runs a watchdog: past SPEEDLAB_TEST_LIMIT_S
(default LIMIT_S) it prints every thread's stack, kills the marked processes, and, if the
session has still not ended GRACE_S later, exits with status 3.
"""
from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import uuid

import psutil

MARK = "SPEEDLAB_TEST_RUN"
LIMIT_S = 2700.0  # the whole suite takes 11-14 min on 2 cores; CI allows 90 min in all
GRACE_S = 60.0


def start(limit_s: float | None = None) -> str:
    """Mark this session (once), start its watchdog, and reap on SIGTERM or SIGHUP to this
    process (`pkill -f pytest`, a closed terminal); returns the mark."""
    mark = os.environ.setdefault(MARK, uuid.uuid4().hex)
    limit = float(os.environ.get("SPEEDLAB_TEST_LIMIT_S") or limit_s or LIMIT_S)
    threading.Thread(target=_watch, args=(limit,), name="session-watchdog", daemon=True).start()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _reap_then_die)
    return mark


def _reap_then_die(signum, _frame) -> None:
    """The session was told to end: kill what it started, then end as the signal would have."""
    reap()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def marked_processes(mark: str | None = None) -> list[psutil.Process]:
    """Every live process carrying this session's mark, but this one and its ancestors."""
    mark = mark or os.environ.get(MARK)
    if not mark:
        return []
    me = psutil.Process()
    spared = {me.pid, *(p.pid for p in me.parents())}
    found = []
    for p in psutil.process_iter():
        if p.pid in spared:
            continue
        try:
            if p.environ().get(MARK) == mark:
                found.append(p)
        except (psutil.Error, OSError):
            pass  # gone, a zombie, or not ours to read
    return found


def reap(mark: str | None = None) -> list[str]:
    """SIGKILL every marked process left; returns 'pid name' of each, for the report."""
    left = marked_processes(mark)
    names = []
    for p in left:
        try:
            names.append(f"{p.pid} {' '.join(p.cmdline()[:3])[:120]}")
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(left, timeout=5)
    return names


def _watch(limit_s: float) -> None:
    threading.Event().wait(limit_s)
    sys.stderr.write(f"\nthe test session ran past {limit_s:.0f} s (SPEEDLAB_TEST_LIMIT_S): its threads now\n")
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    left = reap()
    sys.stderr.write(f"killed {len(left)} process(es) of the session: {left}\n")
    sys.stderr.flush()
    threading.Event().wait(GRACE_S)  # the session may end on its own now that its children are gone
    sys.stderr.write(f"the session has not ended {GRACE_S:.0f} s later: exiting with status 3\n")
    sys.stderr.flush()
    os._exit(3)
