"""Reason lines: every reason SpeedLab stores or prints (a run's error, a comparison's
ended_by) is one line of at most MAX_LINE characters; the rest belongs in a log file (a
command that printed megabytes on one line once made a 65,574-character ended_by)."""
from __future__ import annotations

import re
from typing import Optional

MAX_LINE = 300
_LOG_TAIL = re.compile(r"\.\.\. \(all of it: ([^)]*)\)")


def one_line(text, limit: int = MAX_LINE, log: Optional[str] = None) -> str:
    """`text`'s first non-empty line, at most `limit` characters. A cut line ends in
    '... (all of it: LOG)' when `log` (a path) is given or the line already names one (a
    reason cut before, then quoted in a longer one), else in '...'."""
    line = next((ln.strip() for ln in str(text or "").splitlines() if ln.strip()), "")
    if len(line) <= limit:
        return line
    m = _LOG_TAIL.search(line)
    if log is None and m:
        log, line = m.group(1), line[:m.start()] + line[m.end():]
    tail = f"... (all of it: {log})" if log else "..."
    if len(tail) >= limit:
        tail = "..."
    return line[:limit - len(tail)] + tail


# What TensorFlow puts before an error's message: graph-execution boilerplate and the Python
# stack where the failing op was defined (a peer's aborted collective quotes it whole).
_TF_NOISE = ("Graph execution error", "Detected at node", "[[", "Cf. ", 'File "', "Traceback (most recent")
# Errors SpeedLab raised with a line already written for the user (no class name before it).
_WRITTEN = ("DeviceError", "RunFailed", "WeightsError")


def error_line(exc: BaseException) -> str:
    """The line a process that trains stores or prints for `exc`: its class name and the first
    line of its message that says something (TensorFlow's boilerplate and quoted stack lines
    skipped), at most MAX_LINE characters; out of memory with what to do about it."""
    text = [ln.strip() for ln in str(exc).splitlines() if ln.strip() and not ln.strip().startswith(_TF_NOISE)]
    first = text[0] if text else ""
    name = type(exc).__name__
    if name in _WRITTEN:
        return one_line(first)
    if name == "ResourceExhaustedError":
        return f"out of memory: {first[:200]}; use a smaller batch_size or model"
    return one_line(f"{name}: {first}") if first else name


# TensorFlow's C++ (absl) log lines, e.g. "E0000 00:00:1796203617.918733 25959 util.cc:131] oneDNN ...":
# never the reason a worker ended, though often its last line.
_ABSL_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d")


def last_error_line(tail: str | None) -> str | None:
    """The last line of a worker's stderr that can say why it ended (not a TensorFlow
    C++ log line, not absl's 'WARNING: All log messages before ...'), or None."""
    for line in reversed((tail or "").splitlines()):
        line = line.strip()
        if line and not _ABSL_LINE.match(line) and not line.startswith("WARNING: All log messages before absl"):
            return line
    return None
