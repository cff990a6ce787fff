"""Following what a command started: a run's progress line (`progress_line`, `follow`) and
what Ctrl-C, SIGTERM and SIGHUP do meanwhile (`until_done`, `ignore_more_interrupts`,
`stop_all_for_signal`, `INTERRUPTED`: the command then exits 130)."""
from __future__ import annotations

import sys
from typing import Callable, TypeVar

T = TypeVar("T")

from engine.cli.printing import fmt


def progress_line(run_id: int):
    """A `runner.wait` poll callback that prints the run's progress: on a terminal one
    line rewritten in place at every poll; elsewhere (a pipe, a file) a new line only when
    the phase seen at this poll differs from the last one printed (queued, setting up,
    warm-up, the epoch reached: short epochs between two polls share a line), so a log
    holds no repeats."""
    from engine.report.progress import progress
    from engine.store import Store

    last = {"phase": None}
    tty = sys.stderr.isatty()

    def on_poll(run):
        store = Store()
        try:
            p = progress(store, run_id)
        finally:
            store.close()
        if run["status"] == "queued":
            phase, line = "queued", f"[run {run_id}] queued"
        elif not p["total_steps"]:
            phase, line = "setting up", f"[run {run_id}] setting up (devices, data, model)"
        else:
            most = "at most " if p.get("time_left_is_most") else ""  # it stops at its target: maybe sooner
            left = f"{most}{p['time_left_sec']:.0f} s left" if p["time_left_sec"] is not None else "warm-up"
            sps = f"{p['samples_per_sec']:,.0f} samples/s" if p["samples_per_sec"] else "- samples/s"
            line = (f"[run {run_id}] epoch {p['epoch']}/{p['epochs']} step {p['step']}/{p['total_steps']}"
                    f" | {sps} | loss {fmt(p['loss'])} | {left}")
            # No steady rate yet is the warm-up (tracing, compiling), whichever epoch it spans.
            phase = "warm-up" if p["time_left_sec"] is None else f"epoch {p['epoch']}"
        if tty:
            sys.stderr.write("\r" + line.ljust(100))
        elif phase != last["phase"]:
            sys.stderr.write(line + "\n")
        else:
            return
        last["phase"] = phase
        sys.stderr.flush()

    return on_poll


# Set when Ctrl-C cancelled what the command waited for: the command then exits 130.
INTERRUPTED = {"by_user": False}


def ignore_more_interrupts(line: str) -> None:
    """After a first Ctrl-C: say `line` once, and let further presses change nothing, so
    that the cancel under way finishes (a second press 0.3 s later printed a 29-line
    chained traceback); the command exits 130 (engine.cli.main)."""
    import signal

    from engine.base.process import STOP_SIGNALS

    for name in STOP_SIGNALS:  # SIGTERM and SIGHUP stop the same way as Ctrl-C, once
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    INTERRUPTED["by_user"] = True
    sys.stderr.write(f"\n{line}\n")
    sys.stderr.flush()


def stop_all_for_signal() -> None:
    """After Ctrl-C, SIGTERM or SIGHUP: stop what the store runs, naming the signal the CLI got
    ("stopped: the CLI got SIGTERM"; engine.jobs.stopping); comparisons keep complete pairs."""
    from engine.base.process import stop_reason
    from engine.jobs import stopping

    stopping.stop_all(stop_reason("CLI"))


def stop_for_interrupt(line: str) -> None:
    """After a first Ctrl-C, SIGTERM or SIGHUP: say `line` once, ignore further presses and stop
    what the store runs (`stop_all_for_signal`); the command then exits 128 + the signal."""
    ignore_more_interrupts(line)
    stop_all_for_signal()


def until_done(wait: Callable[[], T], wait_stopped: Callable[[], T], line: str, quiet: bool, name: str) -> T:
    """`wait()` (a wait that draws progress) until it returns; on Ctrl-C, SIGTERM or SIGHUP
    (KeyboardInterrupt: engine.cli.main) say `line` once, ignore further presses, stop what
    the store runs and return `wait_stopped()` (a plain wait for the stop to land); the
    command then exits 128 + the signal. When what it waited for (`name`: "run 3") had
    completed before the stop reached it (its result's 'status' is 'completed': the signal
    came between its end and the wait's next look), that is said too, since the line before
    said it was being stopped. Ends a terminal's progress line unless `quiet`."""
    try:
        out = wait()
    except KeyboardInterrupt:
        stop_for_interrupt(line)
        out = wait_stopped()
        if isinstance(out, dict) and out.get("status") == "completed":
            sys.stderr.write(f"{name} had completed before the stop reached it: its results stand\n")
    if not quiet and sys.stderr.isatty():
        sys.stderr.write("\n")
    return out


def follow(run_id: int, quiet: bool) -> dict:
    """Wait for a run with a progress line; Ctrl-C (any number of presses) cancels it."""
    from engine.jobs import runner

    on_poll = None if quiet else progress_line(run_id)
    return until_done(lambda: runner.wait(run_id, on_poll=on_poll), lambda: runner.wait(run_id),
                      f"cancelling run {run_id} (interrupted; more presses change nothing) ...", quiet,
                      f"run {run_id}")
