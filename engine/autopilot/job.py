"""The autopilot as a background job for the dashboard: `python -m engine autopilot` detached,
its state in a JSON file the Autopilot page follows (engine.jobs.background.AUTOPILOT).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from engine.jobs import background


class AutopilotError(RuntimeError):
    """The autopilot could not start or run (one line)."""


def progress_path() -> Path:
    """$SPEEDLAB_HOME/autopilot.json: the background autopilot's state and result (background.AUTOPILOT)."""
    return background.AUTOPILOT.path()


def start_background(args: list[str]) -> int:
    """Start ``python -m engine autopilot --json --quiet --progress-file FILE [args]``
    detached (its own session: it outlives the dashboard's script run) and return
    its pid; follow it with `read_progress`.

    Raises: AutopilotError (one line) while the machine is busy (a run, a
    benchmark, an LR range test, the transfer demo or another autopilot).
    """
    return background.AUTOPILOT.start(["autopilot", "--json", "--quiet", "--progress-file", str(progress_path()),
                                       *map(str, args)],
                                      {"error": None, "phase": "starting", "trials": [], "args": list(args)},
                                      error=AutopilotError)


def read_progress() -> Optional[dict]:
    """The background autopilot's state (see `Autopilot.state`) plus 'state'
    ('starting' | 'running' | 'done' | 'failed' | 'cancelled'), 'elapsed' (s),
    'error' (one line); None if none was started here. A job whose process died
    unseen reads as 'failed' with its log's last error line."""
    return background.AUTOPILOT.read()


def cancel_background() -> bool:
    """Stop the background autopilot (SIGTERM: it stops its current run and
    writes what it has), cancel any run it left queued or running, and wait up to
    background.AUTOPILOT.stop_wait_s for its process to end, so that a Start right after
    finds the machine free. Returns whether one was running."""
    return background.AUTOPILOT.cancel()
