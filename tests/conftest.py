"""Shared fixtures: every test gets its own store folder (SPEEDLAB_HOME)."""
import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture
def store_home(tmp_path, monkeypatch):
    """A fresh SPEEDLAB_HOME for the test; the store lives at tmp_path/runs.sqlite."""
    monkeypatch.setenv("SPEEDLAB_HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def store(store_home):
    from engine.store import Store

    s = Store()
    yield s
    s.close()
