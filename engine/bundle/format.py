"""The run bundle's format: its names and versions, the one error it raises, and a run's
identity across stores (engine.bundle).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, Union

FORMAT = "speedlab-run-bundle"
BUNDLE_VERSION = 1
MANIFEST = "manifest.json"
METRIC_TABLES = ("executions", "epochs", "system", "workers")
# Columns that belong to this store only (process ids, pending cancels) or are remapped.
LOCAL_COLUMNS = ("id", "pid", "pid_started", "cancel_requested", "baseline_id", "origin")
JSON_COLUMNS = ("config", "environment", "plan", "summary", "origin")

Source = Union[str, os.PathLike, BinaryIO]


class BundleError(ValueError):
    """A bundle that cannot be written or imported; `str(err)` is one line."""


def run_key(run: dict) -> str:
    """A run's identity across stores: 'host/original id/created' of the store
    it was first recorded in (an imported run keeps its origin's key)."""
    origin = run.get("origin") or {}
    if origin.get("key"):
        return origin["key"]
    host = (run.get("environment") or {}).get("hostname") or "unknown-host"
    return f"{host}/{run['id']}/{run['created']:.6f}"


def provenance(run: dict) -> str | None:
    """'imported from HOST (run #N there)' for an imported run, else None."""
    origin = run.get("origin")
    if not origin:
        return None
    return f"imported from {origin.get('host') or 'an unknown host'} (run #{origin.get('run_id')} there)"



def source_name(src: Source) -> str:
    """The file name of `src` (a path or an open file) for error lines."""
    if isinstance(src, (str, os.PathLike)):
        return Path(src).name
    return getattr(src, "name", None) or "the bundle"


def first_line(e: BaseException) -> str:
    """The first line of an exception's text, at most 200 characters."""
    text = str(e).strip("'\"")
    return (text.splitlines() or [type(e).__name__])[0][:200]
