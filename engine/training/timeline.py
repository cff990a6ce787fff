"""Where a run's wall time went: spans of the worker process's own clock.

Every second from the worker's process start to the end of training lands in
exactly one span, of one of these kinds (issue "the headline tells the truth"):

- ``setup``: interpreter start and imports, device layout, data load, model build
  and compile, the input pipelines' start (its parts are kept as marks: `SETUP_MARKS`);
- ``warmup``: executions flagged warm-up (tracing, compilation), and the first
  execution of the first validation pass (the evaluation step is traced then);
- ``train``: steady training executions (their data wait is inside: summary
  ``data_wait_sec``);
- ``validation``: validation passes;
- ``other``: whatever happened inside ``fit`` in between (iterator starts,
  callbacks at epoch ends, retracing, store writes, stalls), each gap with a
  note saying where it was.

Times are seconds since the worker process started (psutil's create_time, so
the interpreter's own start-up counts too). No TensorFlow here.
"""
from __future__ import annotations

import time
from typing import Optional

import psutil

KINDS = ("setup", "warmup", "train", "validation", "other")
# Setup's parts, in order: each mark is the end of the part named after it.
SETUP_MARKS = ("imports", "devices", "data", "model", "input")
SETUP_TITLES = {"startup": "interpreter and engine", "imports": "importing TensorFlow and Keras",
                "devices": "device layout", "data": "loading data", "model": "building and compiling the model",
                "input": "starting the input pipelines"}


class Timeline:
    """Spans of one worker process; `now()` is seconds since the process started.

    `origin_perf` is the perf_counter value of the process start (default: from
    psutil's create_time, whose resolution is 10 ms on Linux).
    """

    def __init__(self, origin_perf: Optional[float] = None):
        if origin_perf is None:
            try:
                since = time.time() - psutil.Process().create_time()
            except psutil.Error:
                since = 0.0
            origin_perf = time.perf_counter() - max(since, 0.0)
        self.origin = origin_perf
        self.marks: dict[str, float] = {}
        self.spans: list[tuple] = []  # (kind, start s, end s, epoch or None, note or None)

    def now(self) -> float:
        """Seconds since the worker process started."""
        return time.perf_counter() - self.origin

    def at(self, perf: float) -> float:
        """A perf_counter value as seconds since the process started."""
        return perf - self.origin

    def mark(self, name: str) -> None:
        """Record the end of setup part `name` (first time only)."""
        self.marks.setdefault(name, self.now())

    def add(self, kind: str, start: float, end: float, epoch: Optional[int] = None,
            note: Optional[str] = None) -> None:
        """Append span [start, end] (s since process start); consecutive spans of the
        same kind, epoch and note merge into one."""
        assert kind in KINDS, kind
        if end <= start:
            return
        if self.spans:
            k, s0, e0, ep, nt = self.spans[-1]
            if k == kind and ep == epoch and nt == note and abs(start - e0) < 1e-9:
                self.spans[-1] = (k, s0, end, ep, nt)
                return
        self.spans.append((kind, start, end, epoch, note))

    def gap(self, upto: float, epoch: Optional[int], note: str) -> None:
        """Everything between the last span's end and `upto` becomes 'other'."""
        last = self.spans[-1][2] if self.spans else 0.0
        self.add("other", last, upto, epoch, note)


def totals(spans: list, wall: Optional[float] = None) -> dict:
    """Seconds per kind: {'setup_sec', 'warmup_sec', 'train_sec', 'validation_sec',
    'other_sec', 'wall_sec'}; wall_sec is the last span's end unless given."""
    out = {f"{k}_sec": 0.0 for k in KINDS}
    for kind, start, end, *_ in spans:
        out[f"{kind}_sec"] += end - start
    out["wall_sec"] = wall if wall is not None else (max(s[2] for s in spans) if spans else 0.0)
    return out


def setup_parts(marks: dict, setup_end: float) -> list[dict]:
    """Setup split at its marks: [{'part', 'title', 'start', 'end'}] (s since process
    start), the first part ('startup') from 0; parts whose mark is missing are skipped."""
    out, t = [], 0.0
    for name, end in [("startup", marks.get("startup"))] + [(m, marks.get(m)) for m in SETUP_MARKS] + \
            [("compile", setup_end)]:
        if end is None or end < t:
            continue
        title = SETUP_TITLES.get(name, "other setup (fit start)")
        out.append({"part": name, "title": title, "start": t, "end": min(end, setup_end)})
        t = min(end, setup_end)
    return out

