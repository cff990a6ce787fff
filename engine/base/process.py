"""Child processes: the environment they start with, whether one is alive, its log's tail.

Shared by the job queue, background jobs and the hardware probe; stdlib and
psutil only (no engine imports, no TensorFlow).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Optional

import psutil

ROOT = Path(__file__).resolve().parents[2]  # the repository (engine/base/ is two below it): children run `python -m engine...` from here


def worker_env() -> dict:
    """Environment for child processes: quiet TF C++ logs, unbuffered output,
    the repository on PYTHONPATH."""
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONUNBUFFERED"] = "1"
    root = str(ROOT)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def detach(argv: list, log_path: os.PathLike) -> subprocess.Popen:
    """Start `argv` from the repository in a session of its own (it outlives the caller's
    page run or command), stdin closed, stdout and stderr appended to `log_path`. The log
    file is closed here once the child holds it, and a daemon thread waits for the child,
    so that no ended job stays a zombie of a long-lived dashboard (one did for 6 minutes
    after the autopilot) nor leaks a file descriptor per start."""
    import threading

    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
                                cwd=str(ROOT), env=worker_env())
    threading.Thread(target=proc.wait, daemon=True, name=f"reap-{proc.pid}").start()
    return proc


# Values of a stored start time at or above this are wall-clock create times (psutil's
# create_time, s since the epoch: stores written before boot-relative start times);
# below it they are seconds since boot (`start_time`).
_EPOCH_FLOOR = 1e8


def start_time(pid: Optional[int] = None) -> Optional[float]:
    """When process `pid` (default: this one) started, in seconds since the machine booted,
    or None if it does not exist: with the pid, what identifies the process.

    Read from /proc/<pid>/stat (field 22, clock ticks since boot), which no wall-clock
    step changes. psutil's create_time() follows the wall clock since psutil 7.0.1, so
    after a clock step a live process read as dead (psutil#2541); psutil's
    create_time(monotonic=True) does the same, but psutil 7.2.2 (pinned) lacks it.
    Elsewhere than Linux: psutil's create_time(monotonic=True) where it exists, else
    create_time() minus boot_time()."""
    pid = os.getpid() if pid is None else int(pid)
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        # The command name (field 2) may hold spaces and parentheses: count from the last ')'.
        ticks = int(stat[stat.rindex(")") + 2:].split()[19])
        return ticks / os.sysconf("SC_CLK_TCK")
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return None  # Linux: no such process
    except (OSError, ValueError, IndexError):
        pass
    try:
        p = psutil.Process(pid)
        try:
            return float(p.create_time(monotonic=True))
        except TypeError:  # psutil without the monotonic clock
            return p.create_time() - psutil.boot_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def process_alive(pid: Optional[int], started: Optional[float]) -> bool:
    """True if `pid` is alive, not a zombie, and is the process started at `started`
    (`start_time`: s since boot; a value from an older store, psutil's wall-clock
    create_time, is compared with that instead): guards against PID reuse, and a
    wall-clock step cannot make a live process look dead."""
    if not pid:
        return False
    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return False
        if started is None:
            return True
        if started >= _EPOCH_FLOOR:
            return abs(p.create_time() - started) < 1.0
        now = start_time(pid)
        return now is not None and abs(now - started) < 0.5
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def read_tail(path: Path, lines: int = 20) -> Optional[str]:
    """The last `lines` lines of a text file, or None if it does not exist."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    return "\n".join(text.splitlines()[-lines:])


# --- the one rule for every stop signal ---------------------------------------------------
# SIGINT (Ctrl-C), SIGTERM (kill, systemd, a container stop) and SIGHUP (a closed terminal)
# end every SpeedLab process the same way: it stops what it runs, keeps what it measured,
# and says which signal stopped it. Only the user's own Stop or `engine cancel` is "by the user".
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
USER_CANCEL = "cancelled by the user"
# The stop signal this process got last (None: none): `stop_reason` names it.
RECEIVED: dict = {"signal": None}


def on_stop_signals(handler=None, chain: bool = False) -> None:
    """Install one handler for SIGINT, SIGTERM and SIGHUP (main thread only): it records the
    signal's name in RECEIVED and then calls `handler(name)`, if any. With `chain`, the handler
    each signal had before is called after it (a server's own shutdown, e.g. Streamlit's); a
    signal that had none of its own (SIGHUP) then ends the process as SIGTERM's would."""
    import signal

    before = {name: signal.getsignal(getattr(signal, name)) for name in STOP_SIGNALS}

    def caught(signum, frame):
        name = signal.Signals(signum).name
        RECEIVED["signal"] = name
        if handler is not None:
            handler(name)
        if chain:
            then = before[name] if callable(before[name]) else before["SIGTERM"]
            if callable(then):
                then(signum, frame)
            else:
                raise SystemExit(128 + signum)

    for name in STOP_SIGNALS:
        signal.signal(getattr(signal, name), caught)


def stop_line(who: str, name: str) -> str:
    """How a run or comparison stopped by signal `name` ends: 'stopped: the worker got SIGTERM'."""
    return f"stopped: the {who} got {name}"


def stop_reason(who: str) -> str:
    """`stop_line` for the stop signal this process got (RECEIVED), else USER_CANCEL."""
    name = RECEIVED["signal"]
    return stop_line(who, name) if name else USER_CANCEL
