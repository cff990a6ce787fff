"""Fault-test helpers: the CLI as a user runs it, its one-line refusals, a stored run without
training, and a store's row counts."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from engine.config import RunConfig
from engine.store import Store

ROOT = Path(__file__).resolve().parents[2]


def cli(home: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, "SPEEDLAB_HOME": str(home), **(env or {})})


def one_line(p: subprocess.CompletedProcess) -> str:
    """The single 'error: ...' line of a refused command (exit 2, no traceback)."""
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr + p.stdout, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    return lines[0]


def finished(store: Store, role="run", cfg: RunConfig | None = None, samples_per_sec=1000.0) -> int:
    """A completed run as the worker stores it (no training): 3 executions, 1 epoch."""
    rid = store.create_run((cfg or RunConfig(epochs=1)).to_json(), role=role, status="running")
    store.update_run(rid, environment={"hostname": "box-7"}, plan={"total_steps": 3})
    store.add_metrics(rid, executions=[(i, 0, i + 1, 1, 0.1 * (i + 1), 0.1, 1000.0, 2.0 - i / 3, 1e-3,
                                        int(i == 0), 0.01) for i in range(3)],
                      epochs=[(0, 0.35, 3, 1.5, 0.6, 1.4, 0.65, 1e-3)])
    store.finish_run(rid, "completed", summary={"samples_per_sec": samples_per_sec, "wall_sec": 0.4})
    return rid


def counts(path: Path) -> dict:
    s = Store(path)
    try:
        return {t: s.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in ("runs", "executions", "epochs", "system", "workers")}
    finally:
        s.close()
