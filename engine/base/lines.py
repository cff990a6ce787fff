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
