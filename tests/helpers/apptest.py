"""The dashboard under streamlit.testing.v1.AppTest, with one hang guard for every page test."""
from pathlib import Path

from streamlit.components.v2 import manifest_scanner
from streamlit.runtime.scriptrunner import script_runner
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
# A hang guard, not a speed check: a script run takes 1-4 s here (the first imports pandas
# and plotly). Now and then one takes 35-65 s in a full run (once past 60 s on CI); the stacks
# (tests/conftest.py) showed the script thread slow, not waiting: once in the Keras clean-up
# below, parsing the page's source (3 times), in copy.deepcopy (once). The thread listed with no
# frame is xdist's execnet thread (its frames are filtered out), not a clue. The report's time in
# the garbage collector then showed one generation-2 collection of 37.5 s (later 18 and 39.6 s),
# in C (no finalizer's frame on top); not frozen garbage after all: test processes no longer
# freeze (conftest.pytest_configure) and it still happened now and then, always in a process that
# had TensorFlow loaded; page tests now run in processes without it (docs/testing.md).
TIMEOUT_S = 240


def _clean_problem_modules() -> None:
    """Streamlit's clean-up after every script run, without its Keras part.

    When Keras is imported, Streamlit calls ``keras.backend.clear_session()`` after each
    run, and so ``gc.collect()``. The dashboard never imports Keras
    (test_pages_never_import_tensorflow); a test process has it from the in-process
    training tests, so this is work the dashboard never does (a slow page test was found
    in it once). Matplotlib, the other module it cleans, the dashboard does not use."""


script_runner._clean_problem_modules = _clean_problem_modules

_SCANNED: list = []


def _scan_component_manifests_once(max_workers=None):
    """Streamlit's scan of every installed distribution's metadata for v2 components, done once
    in this test process. AppTest runs it for each new app (its first script run): 0.085 CPU-s,
    a fifth of a short page test's own work, for the same answer every time (no package is
    installed during a session); a server scans once at its start."""
    if not _SCANNED:
        _SCANNED.append(_scan_component_manifests(max_workers))
    return list(_SCANNED[0])


_scan_component_manifests = manifest_scanner.scan_component_manifests
manifest_scanner.scan_component_manifests = _scan_component_manifests_once


def app_test(path: str = APP) -> AppTest:
    """AppTest of `path` (default app.py) with TIMEOUT_S per script run."""
    return AppTest.from_file(path, default_timeout=TIMEOUT_S)
