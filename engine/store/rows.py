"""Whether a stored run row can be read whole: the store's guard against damaged rows.

A row written by an older or broken SpeedLab, edited by hand, or imported before
bundles were checked may lack config fields or hold invalid JSON. Such a row must
not break a listing: `row_problem` names what is wrong, and engine.store lists the
row apart as damaged (with that reason) so it can be seen and deleted.

No engine imports (the store imports this).
"""
from __future__ import annotations

import json
from typing import Any, Optional

# Config fields every reader indexes directly (tables, labels, comparisons); newer
# fields are read with defaults, so a run from an older SpeedLab still lacks none of these.
REQUIRED_CONFIG = {"dataset": (str,), "model": (str,), "precision": (str,), "devices": (int,),
                   "batch_size": (int,), "steps_per_execution": (int,), "jit_compile": (bool,),
                   "epochs": (int,)}
JSON_COLUMNS = ("config", "environment", "plan", "summary", "origin")
STATUSES = ("queued", "running", "completed", "failed", "cancelled")


# A run's plan 'source' when SpeedLabCallback recorded it from a user's own script
# (engine.training.script_run): its config's data set and model are placeholders, and no queue owns it.
SCRIPT_RUN_SOURCE = "callback"


def started(run: dict) -> bool:
    """Whether `run` (a stored row) has something to draw or compare: it is not queued, and it
    did not end before it started (a queued run that Stop cancelled, engine.jobs.runner.NOT_STARTED,
    or that its queue failed, has no start time and no summary)."""
    return run["status"] != "queued" and bool(run.get("started") or run.get("summary"))


def never_ran(run: dict) -> bool:
    """Whether `run` ended without starting: nothing to draw, compare or wait for."""
    return run["status"] in ("completed", "failed", "cancelled") and not started(run)


def from_script_run(plan: Any) -> bool:
    """Whether a run with this stored `plan` (dict, or None) comes from a user's own script."""
    return isinstance(plan, dict) and plan.get("source") == SCRIPT_RUN_SOURCE


def parse_row(row: dict) -> tuple[dict, Optional[str]]:
    """(the row with its JSON columns parsed, None) or (the raw row, the problem)."""
    d = dict(row)
    for key in JSON_COLUMNS:
        if d.get(key):
            try:
                d[key] = json.loads(d[key])
            except (TypeError, ValueError, RecursionError) as e:
                return dict(row), f"{key} is not valid JSON ({type(e).__name__})"
            if not isinstance(d[key], dict):
                return dict(row), f"{key} is not a JSON object"
    problem = row_problem(d)
    if problem:
        return dict(row), problem
    cfg = d.get("config")
    if "validation_seed" not in cfg:
        # Stored before the validation draw had a seed of its own: it was drawn by the run's seed.
        d["config"] = {**cfg, "validation_seed": cfg.get("seed", 0)}
    return d, None


def row_problem(d: dict[str, Any]) -> Optional[str]:
    """What makes a parsed run row unreadable, or None."""
    if d.get("status") not in STATUSES:
        return f"status {d.get('status')!r} is not one of {', '.join(STATUSES)}"
    if not isinstance(d.get("created"), (int, float)):
        return "created is not a time"
    cfg = d.get("config")
    if not isinstance(cfg, dict):
        return "config is missing"
    for key, types in REQUIRED_CONFIG.items():
        if key not in cfg:
            return f"config lacks {key!r}"
        v = cfg[key]
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            return f"config {key!r} is {v!r}, not {' or '.join(t.__name__ for t in types)}"
    return None
