"""Command line: ``python -m engine {run,runs,show,cancel,compare,...} --help``.

This process never imports TensorFlow: runs execute in worker processes and
the CLI only reads the store.  Exit codes: 0 ok, 1 the run failed or was
cancelled, 2 invalid input (one line on stderr naming field, value and fix),
141 stdout's reader went away (``... | head``; quietly).
Each subcommand lives in its own module of engine.cli with `add_parser(sub)`.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sqlite3
import sys

from engine.cli.flags import Parser, UsageError
from engine.base.errors import ActiveRunError, ConfigError
from engine.store import StoreError, default_path, fault_line, old_store_line

# In --help order.
SUBCOMMANDS = ("run", "noise", "pairs", "runs", "show", "cancel", "compare", "export", "import_", "trash", "doctor",
               "hardware", "bench", "lr_find", "tune_baseline", "autopilot", "worker", "demo", "data")


def build_parser(prog: str = "python -m engine") -> argparse.ArgumentParser:
    p = Parser(prog=prog,
                                description="SpeedLab engine: measured training runs stored in SQLite "
                                            "($SPEEDLAB_HOME/runs.sqlite, default "
                                            "$XDG_DATA_HOME/speedlab or ~/.local/share/speedlab).")
    sub = p.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"engine.cli.{name}").add_parser(sub)
    return p


class _Tap:
    """A stream that passes writes through and remembers whether any came, and the
    last 'error: ...' line (for --json's error object)."""

    def __init__(self, stream):
        self.stream, self.written, self.error = stream, False, None

    def write(self, text):
        self.written = self.written or bool(text.strip())
        for line in text.splitlines():
            if line.startswith("error: "):
                self.error = line[len("error: "):]
        return self.stream.write(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def main(argv=None, prog: str = "python -m engine") -> int:
    """The command line; `prog` is the name --help shows ('speedlab' for the installed command)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser(prog).parse_args(argv)
    except UsageError as e:  # a flag argparse rejects: --json still gets its error object
        if "--json" in argv:
            print(json.dumps({"error": e.line, "exit_code": 2}))
            return 2
        raise
    if not getattr(args, "json", False):
        return _run(args)
    # --json: a command that fails before printing its JSON still ends stdout with one
    # JSON object, {"error": its one line, "exit_code": n}, for scripts reading the last line.
    out, err = _Tap(sys.stdout), _Tap(sys.stderr)
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = _run(args)
    finally:
        sys.stdout, sys.stderr = old
    if code not in (0, 141) and not out.written:
        print(json.dumps({"error": err.error, "exit_code": code}))
    return code


def _interrupt(name: str) -> None:
    """SIGINT, SIGTERM and SIGHUP alike (engine.base.process.on_stop_signals): the wait under
    way stops what it waits for, naming the signal (engine.jobs.stopping)."""
    raise KeyboardInterrupt(name)


def _signal_code() -> int:
    """128 + the stop signal's number, as a shell reports a command it ended (130: Ctrl-C)."""
    import signal

    from engine.base.process import RECEIVED

    return 128 + int(getattr(signal, RECEIVED["signal"] or "SIGINT"))


def _queued_here() -> list[int]:
    """The runs this process queued (engine.jobs.runner.QUEUED_HERE); none when the command
    never loaded the runner."""
    runner = sys.modules.get("engine.jobs.runner")
    return runner.QUEUED_HERE if runner is not None else []


def _run(args) -> int:
    from engine.base.process import on_stop_signals
    from engine.cli.follow import INTERRUPTED, stop_for_interrupt

    _queued_here().clear()  # what an earlier command in this process queued (tests run several) is not this one's
    on_stop_signals(_interrupt)
    moved = old_store_line()
    if moved:  # the default moved to the per-user folder: an older store in this folder is said, not lost
        print(moved, file=sys.stderr)
    try:
        try:
            code = args.func(args)
        except KeyboardInterrupt:
            if not _queued_here():
                raise
            # Queued, and interrupted before the wait that would stop it began: stopped all the
            # same (in this try: a locked store is one line below, not a traceback).
            stop_for_interrupt("stopping what this command queued (interrupted before its wait began) ...")
            code = _signal_code()
        sys.stdout.flush()  # here, so that a closed pipe is caught below, not at exit
        return _signal_code() if INTERRUPTED["by_user"] else code  # 130 for Ctrl-C, as a shell reports it
    except KeyboardInterrupt:  # Ctrl-C outside a wait that cancels (nothing was running): one line
        sys.stderr.write("\ninterrupted\n")
        return _signal_code()
    except BrokenPipeError:
        # The reader went away (`... | head`): no traceback, nothing more to stdout. Python's
        # "Note on SIGPIPE": point stdout at devnull so the final flush at exit cannot fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a command ended by it
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ActiveRunError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except StoreError as e:  # e.g. the store is locked by another program for too long
        print(f"error: {e}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as e:  # the store file itself: damaged, unreadable, disk full
        line = fault_line(e, default_path())
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 2
    except (OSError, json.JSONDecodeError) as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
