"""Every page: none imports TensorFlow or Keras in the app process."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.worker
def test_pages_never_import_tensorflow(store_home):
    """Import every page module, then render every page on a filled store, in a
    fresh interpreter: neither may pull in TensorFlow or Keras."""
    pages = re.findall(r'st\.Page\("([^"]+)"', (ROOT / "app.py").read_text())  # app.py's PAGES
    assert "views/train/train.py" in pages and "views/replay.py" in pages, pages
    script = textwrap.dedent(f"""
        import importlib.util, sys
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        pages = {pages!r}
        for path in sorted(Path({str(ROOT)!r}, "views").rglob("*.py")):
            name = ".".join(path.relative_to({str(ROOT)!r}).with_suffix("").parts)
            importlib.import_module(name.removesuffix(".__init__"))
        from engine.hardware import verdicts
        from engine.store import SYSTEM_COLS, Store
        from tests.helpers.pages import finished_pair, app, demo_pair
        from tests.helpers.probe_cache import plant_probe
        # The Hardware page's probe, cached as `engine hardware` leaves it: the real probe is a
        # child process (TensorFlow and JAX imports, 20 s) that says nothing of this process.
        plant_probe()
        finished_pair(Store())
        demo_pair(Store())
        for page in [None] + pages:
            at = app(page)
            assert not at.exception, (page, [e.value for e in at.exception])
        assert verdicts.cached_facts()["hostname"] == "testhost"  # the Hardware page read it, no probe ran
        bad = [m for m in ("tensorflow", "keras") if m in sys.modules]
        assert not bad, bad
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                         timeout=180, env={**os.environ, "SPEEDLAB_HOME": str(store_home)})
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
