"""``python -m engine``: see engine.cli."""
import sys

from engine.cli.main import main

try:
    sys.exit(main())
except KeyboardInterrupt:  # a press while starting up or shutting down: one line, not a traceback
    sys.stderr.write("\ninterrupted\n")
    sys.exit(130)
