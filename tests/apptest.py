"""The dashboard under streamlit.testing.v1.AppTest, with one hang guard for every page test."""
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")
# A hang guard, not a speed check: a script run takes 1-4 s here (the first imports pandas
# and plotly). One Train page run passed 60 s on CI once (two test processes beside worker
# processes on 2 cores; cause not found), so the guard is wide, and tests/conftest.py prints
# every thread's stack when a test runs far longer than it should (_stacks_after).
TIMEOUT_S = 240


def app_test(path: str = APP) -> AppTest:
    """AppTest of `path` (default app.py) with TIMEOUT_S per script run."""
    return AppTest.from_file(path, default_timeout=TIMEOUT_S)
