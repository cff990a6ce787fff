"""Strict JSON (RFC 8259) for every machine-readable output: no NaN or Infinity.

Python's json writes NaN, Infinity and -Infinity by default, which strict parsers
(JavaScript's JSON.parse, jq, Go, serde) reject. `dumps` writes each non-finite
number as null and names where they were in a `non_finite` field (a list of paths
such as "summary.final_loss"), so a reader can tell a missing value from an
overflow. No engine imports.
"""
from __future__ import annotations

import json
import math
from typing import Any

FIELD = "non_finite"


def clean(obj: Any, path: str = "", found: list | None = None) -> tuple[Any, list[str]]:
    """(`obj` with non-finite floats replaced by None, their paths). Tuples become lists;
    numpy scalars become Python numbers."""
    found = [] if found is None else found
    if isinstance(obj, float) or type(obj).__module__ == "numpy" and hasattr(obj, "item"):
        v = obj.item() if hasattr(obj, "item") else obj
        if isinstance(v, float) and not math.isfinite(v):
            found.append(path or "$")
            return None, found
        return v, found
    if isinstance(obj, dict):
        return {k: clean(v, f"{path}.{k}" if path else str(k), found)[0] for k, v in obj.items()}, found
    if isinstance(obj, (list, tuple)):
        return [clean(v, f"{path}[{i}]", found)[0] for i, v in enumerate(obj)], found
    return obj, found


def dumps(obj: Any, **kw) -> str:
    """Strict JSON text of `obj`. A dict with non-finite numbers gets `non_finite`: their
    paths; in a list of dicts, each dict names its own. Other values go through `str`."""
    if isinstance(obj, list) and all(isinstance(o, dict) for o in obj):
        out = []
        for o in obj:
            c, bad = clean(o)
            out.append({**c, FIELD: bad} if bad else c)
        data = out
    else:
        data, bad = clean(obj)
        if bad and isinstance(data, dict):
            data = {**data, FIELD: bad}
    return json.dumps(data, allow_nan=False, default=str, **kw)
