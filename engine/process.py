"""Child processes: the environment they start with, whether one is alive, its log's tail.

Shared by the job queue, background jobs and the hardware probe; stdlib and
psutil only (no engine imports, no TensorFlow).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import psutil

ROOT = Path(__file__).resolve().parent.parent  # the repository: children run `python -m engine...` from here


def worker_env() -> dict:
    """Environment for child processes: quiet TF C++ logs, unbuffered output,
    the repository on PYTHONPATH."""
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONUNBUFFERED"] = "1"
    root = str(ROOT)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def process_alive(pid: Optional[int], started: Optional[float]) -> bool:
    """True if `pid` is alive, not a zombie, and is the process started at `started`
    (psutil create_time, s since the epoch): guards against PID reuse."""
    if not pid:
        return False
    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or abs(p.create_time() - started) < 1.0
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
