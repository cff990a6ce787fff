"""The installed ``speedlab`` command (pyproject.toml [project.scripts]): ``python -m engine``
from any folder. It puts this repository's engine on sys.path (as the callback does), so it
works outside the clone; its runs go to the same per-user store as the dashboard's and the
callback's (engine.store.db.home)."""
from __future__ import annotations

import sys


def main() -> int:
    """Runs ``python -m engine`` with this process's arguments; returns its exit code."""
    from speedlab import _engine

    _engine()
    from engine.cli.main import main as engine_main

    try:
        return engine_main(prog="speedlab")
    except KeyboardInterrupt:  # a press while starting up or shutting down: one line, as python -m engine
        sys.stderr.write("\ninterrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
