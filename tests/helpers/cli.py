"""`python -m engine ARGS` in this test process, for tests where the process is not the point (a
refusal, a table, a JSON field): `engine.cli.main.main(argv)` as `python -m engine` calls it, its
stdout and stderr captured. In the unit lane the lane guard (tests/conftest.py) then also proves
the command imported no framework: a config is refused before any TF work. The signal handlers
it installs are undone by conftest's `signal_state_restored`."""
from __future__ import annotations

import contextlib
import io
import tempfile
from dataclasses import dataclass


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def engine(*argv: str, files: bool = False) -> Result:
    """Run the command in-process; SystemExit (argparse's usage errors) gives its code.
    files: capture into real files (line-buffered, so their lines keep the order they were
    written in), for a command whose child processes write to its stdout or stderr (`engine
    pairs` gives its sides this process's stderr): an in-memory stream has no file descriptor."""
    from engine.cli.main import main

    with contextlib.ExitStack() as stack:
        if files:
            out, err = (stack.enter_context(tempfile.TemporaryFile("w+", buffering=1, encoding="utf-8",
                                                                   errors="backslashreplace")) for _ in range(2))
        else:
            out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 2
        if files:
            for f in (out, err):
                f.flush()
                f.seek(0)
        return Result(code, out.read() if files else out.getvalue(), err.read() if files else err.getvalue())
