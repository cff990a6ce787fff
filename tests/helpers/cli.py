"""`python -m engine ARGS` in this test process, for tests where the process is not the point (a
refusal, a table, a JSON field): `engine.cli.main.main(argv)` as `python -m engine` calls it, its
stdout and stderr captured. In the unit lane the lane guard (tests/conftest.py) then also proves
the command imported no framework: a config is refused before any TF work. The signal handlers
it installs are undone by conftest's `signal_state_restored`."""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def engine(*argv: str) -> Result:
    """Run the command in-process; SystemExit (argparse's usage errors) gives its code."""
    from engine.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
    return Result(code, out.getvalue(), err.getvalue())
