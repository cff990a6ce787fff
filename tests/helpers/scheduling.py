"""The suite's xdist scheduler: load scheduling by units (tests/conftest.py `_unit`: a shared
module whole, else one test), mended where pytest-xdist 3.8.0's LoadScopeScheduling hangs or
crashes after a worker dies (docs/testing.md, "A crashed test process").

What xdist 3.8.0 does when a worker dies mid-test, and what `scheduler` does instead:

- It puts back every unit the dead worker ever ran, finished ones too. Handing a finished
  unit out sends a worker an empty list; the worker keeps waiting for its next test, nothing
  ever reschedules it, and the session waits forever with idle workers
  (pytest-dev/pytest-xdist#1323, #1378; CI waited 45 min on 2026-12-06). Here only units with
  a test left go back.
- It runs the test the worker died in again on another worker, which can take that one down
  too (#1371). Here that test is reported failed once, as xdist's plain `load` does.
- A replacement worker gets one test and then waits for a second one or for shutdown, which
  never comes if the other workers have nothing left to finish (#1327). Here a worker gets
  units until it holds two tests or the queue is empty (then it is shut down).
- It hands work to a replacement worker that has not finished collecting (KeyError in
  `_assign_work_unit`, an INTERNALERROR; #1362). Here a worker gets work once its collection
  is in.
- A worker that dies right after reporting a test is sent more work when that report is read,
  before its death is (OSError "cannot send (already closed?)", an INTERNALERROR). Here the
  send's failure is left to the death that follows.
"""
from __future__ import annotations

import signal
import subprocess
from typing import Callable


def scheduler(config, log, unit: Callable[[str], str]):
    """An xdist scheduler handing out work by `unit(nodeid)` (tests that share a unit run on one
    worker, in collection order), mended as the module says. Needs pytest-xdist."""
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit(nodeid)

        def remove_node(self, node) -> str | None:
            """Forget a worker that ended; if it died mid-test, put back only its unfinished
            units, with the test it died in marked done. Returns that test's node id, or None."""
            workload = self.assigned_work.pop(node)
            left = [(scope, nodeid) for scope, tests in workload.items()
                    for nodeid, done in tests.items() if not done]
            if not left:
                return None
            scope, crashed = left[0]  # a worker runs its tests in the order they were given
            workload[scope][crashed] = True
            for scope, tests in workload.items():
                if not all(tests.values()):
                    self.workqueue[scope] = tests
            for other in list(self.assigned_work):
                self._reschedule(other)
            return crashed

        def _reschedule(self, node) -> None:
            if node not in self.registered_collections:
                return  # still collecting: schedule() gives it work once its collection is in
            while True:
                try:
                    super()._reschedule(node)
                except OSError:
                    # It died after its last test's report was sent and before that report was
                    # read here: sending it work fails ("cannot send (already closed?)", an
                    # INTERNALERROR, seen under load). Its death is the next event; remove_node
                    # then puts back what it was given.
                    return
                if (node.shutting_down or not self.workqueue
                        or self._pending_of(self.assigned_work[node]) >= 2):
                    return

    config.option.loadscopereorder = False
    return Units(config, log)


def death_line(node) -> str:
    """One line on how xdist worker `node` ended, for the log: xdist says only "Not properly
    terminated". Its exit status (a signal by name: SIGKILL is the OOM killer or a process that
    took it for one it may stop; SIGSEGV and SIGABRT also print "Fatal Python error" above), the
    machine's memory, the kernel's OOM kills since boot, the three largest processes."""
    import psutil

    popen = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
    try:
        code = popen.wait(timeout=5) if popen is not None else None
    except subprocess.TimeoutExpired:
        code = None
    if code is None:
        how = "exit status unknown"
    elif code < 0:
        how = f"ended by {signal.Signals(-code).name}" if -code in signal.valid_signals() else f"signal {-code}"
    else:
        how = f"exited with status {code}"
    mem = psutil.virtual_memory()
    try:
        with open("/proc/vmstat") as fh:
            ooms = next((line.split()[1] for line in fh if line.startswith("oom_kill ")), "?")
    except OSError:
        ooms = "?"
    big = []
    for p in psutil.process_iter(["pid", "name", "memory_info"]):
        if p.info["memory_info"] is not None:
            big.append((p.info["memory_info"].rss, p.info["pid"], p.info["name"]))
    top = ", ".join(f"{pid} {name} {rss / 2**30:.1f} GiB" for rss, pid, name in sorted(big, reverse=True)[:3])
    gw = getattr(node, "gateway", None)
    return (f"[{getattr(gw, 'id', node)}] {how}; memory available {mem.available / 2**30:.1f} of "
            f"{mem.total / 2**30:.1f} GiB; kernel OOM kills since boot: {ooms}; largest: {top}")
