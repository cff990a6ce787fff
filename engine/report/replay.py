"""Replay: a stored baseline and run played back through the live charts, no
training and no TensorFlow.

Both runs start together at replay time 0; the replay time is recorded wall
time since training start (s, the ``t`` of every metric row), advancing at
1x, 2x, 5x or 10x real time. At replay time ``t`` a run shows exactly the rows
it had stored by then (rows with ``row.t <= t``) and is 'running' until its
last row, then it is the stored run unchanged, so a finished replay shows the
same numbers as the store.

The clock is a small JSON state in $SPEEDLAB_HOME/replay.json (not the
browser session), so a reload or a second tab re-attaches to the replay that
is playing, as they do to a live run.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, replace
from typing import Iterable, Mapping, Optional

from engine.hardware import fingerprint
from engine.report.live import StoreMetrics
from engine.store import Store, home, started

SPEEDS = (1, 2, 5, 10)
STATE_FILE = "replay.json"
METRIC_TABLES = ("executions", "epochs", "system")
# Summary keys that describe the setup, not the outcome: shown while a run replays.
# Everything else (throughput, times, accuracy) appears only when its run has ended.
SETUP_KEYS = ("replicas", "replicas_simulated", "workers", "device_kind", "precision", "compute_dtype",
              "variable_dtype", "loss_scale", "steps_per_execution", "jit_compile", "global_batch_size",
              "per_replica_batch_size", "dropped_samples_per_epoch", "target_accuracy", "warnings")


# --- the clock -------------------------------------------------------------------

@dataclass(frozen=True)
class ReplayState:
    """Which runs replay, and the clock: position (s of recorded time) =
    `offset` while paused, else `offset` + (now - `anchor`) x `speed`.

    baseline_id, run_id: store run ids; speed: one of SPEEDS; anchor: wall
    clock (time.time(), s) when the position was `offset`; paused: bool.
    """

    baseline_id: int
    run_id: int
    speed: int = 1
    offset: float = 0.0
    anchor: float = 0.0
    paused: bool = True

    def position(self, now: float) -> float:
        """Recorded seconds played at wall time `now` (s)."""
        if self.paused:
            return self.offset
        return self.offset + max(now - self.anchor, 0.0) * self.speed

    def play(self, now: float) -> "ReplayState":
        return replace(self, anchor=now, paused=False) if self.paused else self

    def pause(self, now: float) -> "ReplayState":
        return self if self.paused else replace(self, offset=self.position(now), anchor=now, paused=True)

    def restart(self, now: float) -> "ReplayState":
        """Back to 0 and playing."""
        return replace(self, offset=0.0, anchor=now, paused=False)

    def with_speed(self, speed: int, now: float) -> "ReplayState":
        """Same position, new speed. Raises ValueError for a speed not in SPEEDS."""
        if speed not in SPEEDS:
            raise ValueError(f"speed: {speed!r} is not one of {', '.join(f'{s}x' for s in SPEEDS)}")
        return replace(self, offset=self.position(now), anchor=now, speed=speed)


def state_path() -> str:
    """replay.json in the SpeedLab home; for a read-only home (engine.store opens its store
    read-only there), a file named after it in the system's temp folder, so a replay plays."""
    h = home()
    try:
        read_only = h.exists() and (not os.access(h, os.W_OK) or bool(os.statvfs(h).f_flag & os.ST_RDONLY))
    except OSError:
        read_only = False
    if not read_only:
        return str(h / STATE_FILE)
    import hashlib
    import tempfile

    tag = hashlib.sha256(str(h).encode()).hexdigest()[:12]
    return os.path.join(tempfile.gettempdir(), f"speedlab-{tag}-{STATE_FILE}")


def load_state() -> Optional[ReplayState]:
    """The saved replay clock, or None (none saved, or unreadable)."""
    try:
        with open(state_path()) as fh:
            d = json.load(fh)
        return ReplayState(**{k: d[k] for k in ReplayState.__dataclass_fields__ if k in d})
    except (OSError, ValueError, TypeError):
        return None


def save_state(state: Optional[ReplayState]) -> None:
    """Write the replay clock atomically (None removes it)."""
    path = state_path()
    if state is None:
        if os.path.exists(path):
            os.remove(path)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(asdict(state), fh)
    os.replace(tmp, path)


# --- what is visible at replay time t ----------------------------------------------

def visible(rows: Iterable[Mapping], t: float) -> list[dict]:
    """The metric rows recorded by time `t` (s since training start): row['t'] <= t."""
    return [dict(r) for r in rows if r["t"] is not None and r["t"] <= t + 1e-9]


def run_end(run: Mapping, executions: list, epochs: list) -> float:
    """Recorded seconds from training start to the run's end: its last execution
    or epoch, or the end of fit when the summary says it is later (0.0 for a run
    with no rows). The summary's 'fit_sec' is on the rows' clock; a 'wall_sec'
    also holds the setup before training ('setup_sec'), which is taken off."""
    ts = [r["t"] for r in (*executions, *epochs) if r.get("t") is not None]
    s = run.get("summary") or {}
    if s.get("fit_sec") is not None:
        fit = s["fit_sec"]
    else:  # runs stored before the timeline: wall_sec counted from training start
        fit = (s.get("wall_sec") or 0.0) - (s.get("setup_sec") or 0.0)
    return float(max([*ts, fit, 0.0]))


def run_at(run: dict, t: float, end: float, now: Optional[float] = None) -> dict:
    """The run as it stood at replay time `t`: status 'running' with only its
    setup summary (SETUP_KEYS) before `end`, the stored run unchanged from then.
    While it replays, its plan's training start ('train_started_at', s since the
    epoch, which live progress counts from) is `t` seconds before `now`
    (default: time.time())."""
    if t >= end:
        return run
    summary = {k: v for k, v in (run.get("summary") or {}).items() if k in SETUP_KEYS}
    plan = dict(run.get("plan") or {})
    if "train_started_at" in plan:
        plan["train_started_at"] = (time.time() if now is None else now) - t
    return {**run, "status": "running", "ended": None, "error": None, "summary": summary, "plan": plan}


class ReplayStore:
    """A read-only stand-in for Store at replay time `t`: get_run, list_runs,
    metrics, frame and workers answer as the store did `t` recorded seconds
    into training, for the replayed runs only; active_runs is always empty (a
    replay has nothing to stop). Rows are read from `store` once, at
    construction; `now` (s since the epoch) is the wall clock the view is drawn at.

    Raises: KeyError if a run id does not exist.
    """

    def __init__(self, store: Store, run_ids: Iterable[int], t: float, now: Optional[float] = None):
        self.t = float(t)
        now = time.time() if now is None else now
        self._runs, self._rows, self.ends = {}, {}, {}
        for rid in dict.fromkeys(run_ids):
            run = store.get_run(rid)
            if run is None:
                raise KeyError(f"run {rid} does not exist")
            rows = {table: store.metrics(table, rid) for table in METRIC_TABLES}
            self.ends[rid] = run_end(run, rows["executions"], rows["epochs"])
            self._runs[rid] = run_at(run, self.t, self.ends[rid], now)
            self._rows[rid] = {table: visible(r, self.t) for table, r in rows.items()}
        self._workers = {rid: store.workers(rid) for rid in self._runs}

    @property
    def duration(self) -> float:
        """Recorded seconds until the last replayed run ends."""
        return max(self.ends.values(), default=0.0)

    def get_run(self, run_id: int) -> Optional[dict]:
        return self._runs.get(run_id)

    def list_runs(self, statuses: Optional[Iterable[str]] = None) -> list[dict]:
        runs = sorted(self._runs.values(), key=lambda r: -r["id"])
        return [r for r in runs if not statuses or r["status"] in tuple(statuses)]

    def active_runs(self) -> list[dict]:
        return []

    def metrics(self, table: str, run_id: int) -> list[dict]:
        return [dict(r) for r in self._rows.get(run_id, {}).get(table, [])]

    def source(self) -> "ReplayMetrics":
        """Metrics as engine.report.pair and the Train page's charts read them."""
        return ReplayMetrics(self)

    def frame(self, table: str, run_id: int):
        import pandas as pd

        from engine.store import EPOCH_COLS, EXEC_COLS, SYSTEM_COLS

        rows = self.metrics(table, run_id)
        cols = list(rows[0]) if rows else list({"executions": EXEC_COLS, "epochs": EPOCH_COLS,
                                                "system": SYSTEM_COLS}[table])
        return pd.DataFrame(rows, columns=cols)

    def workers(self, run_id: int) -> list[dict]:
        return self._workers.get(run_id, [])

    def close(self) -> None:
        pass


class ReplayMetrics(StoreMetrics):
    """engine.report.live.StoreMetrics over a ReplayStore, with LiveMetrics's
    `keep` (nothing to forget): no cache across ticks, so a restarted replay
    starts empty again."""

    def keep(self, run_ids) -> None:
        pass


# --- the label -----------------------------------------------------------------

def devices_text(run: Mapping) -> str:
    """'the CPU (2 cores)', '2 CPU devices (simulated)', '8 GPUs', '1 GPU (NVIDIA H200)' (the
    name a run's MFU fields stored), '2 workers × 4 GPUs' from a run's environment and config."""
    env, cfg = run.get("environment") or {}, run.get("config") or {}
    kind = env.get("device_kind") or str(cfg.get("device_type", "device")).upper()
    n = len(env.get("devices") or []) or int(cfg.get("devices", 1))
    simulated = env.get("replicas_simulated")
    if n > 1 and simulated:
        text = f"{n} {kind} devices (simulated)"
    elif kind == "CPU" and n == 1:  # TensorFlow's one CPU device is all the host's cores, not "1 CPU"
        cores = env.get("logical_cores")
        text = f"the CPU ({cores} cores)" if cores else "the CPU"
    else:
        text = f"{n} {kind}" + ("s" if n > 1 else "")
        name = (run.get("summary") or {}).get("peak_device")  # the GPU's name (engine.report.mfu)
        if kind == "GPU" and name:
            text += f" ({name})"
    workers = int(cfg.get("workers", 1))
    return f"{workers} workers × {text}" if workers > 1 else text


def machine_text(run: Mapping) -> str:
    """The machine a run was recorded on, never its hostname (ours all say `vm`): its
    fingerprint's name (engine.hardware.fingerprint.name_of); for a run stored before
    fingerprints, the CPU model its environment holds, '(no fingerprint)' after it; else
    fingerprint.UNKNOWN. The CPU model is the OS's words (untrusted: escape it to show it)."""
    env = run.get("environment") or {}
    if fingerprint.of(env):
        return fingerprint.name_of(env)
    cpu = env.get("cpu_model")
    return f"{cpu} (no fingerprint)" if cpu else fingerprint.UNKNOWN


def measured_here(runs: list[Mapping], here: Optional[str] = None) -> bool:
    """Whether every one of `runs` was measured on this machine (`here`: its fingerprint id,
    default engine.hardware.fingerprint.here_id()), as every other stored figure is matched
    (fingerprint.matches: the same id; a run stored before fingerprints only where old runs
    are opted in, and never one imported from a bundle: the hostname it carries places it
    nowhere, ours all say `vm`)."""
    return all(fingerprint.matches(fingerprint.of(r.get("environment")), (r.get("environment") or {}).get("hostname"),
                                   here, unknown=False if r.get("origin") else None) for r in runs)


def recorded_label(runs: list[Mapping], here: Optional[str] = None) -> str:
    """'replay of runs recorded on MACHINE, DEVICES, DATE · measured elsewhere, not on this
    machine' (or '· measured on this machine') for the replayed runs: each part listed once,
    machines by `machine_text`, devices as 'baseline vs run' when they differ; `here` as for
    `measured_here`. A replayed speedup is the recording machine's, so the line says which."""
    machines = list(dict.fromkeys(machine_text(r) for r in runs))
    devices = list(dict.fromkeys(devices_text(r) for r in runs))
    dates = sorted({time.strftime("%Y-%m-%d", time.localtime(r["created"])) for r in runs})
    date = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    where = "measured on this machine" if measured_here(runs, here) else "measured elsewhere, not on this machine"
    return f"replay of runs recorded on {' and '.join(machines)}, {' vs '.join(devices)}, {date} · {where}"


def default_pair(runs: list[Mapping]) -> Optional[tuple[int, int]]:
    """(baseline id, run id) to offer first: the newest finished run whose
    baseline (its baseline_id, else a baseline of its group) is finished too;
    None when there is no such pair.

    Args:
        runs: store.list_runs() (newest first).
    """
    done = {r["id"]: r for r in runs if r["status"] in ("completed", "cancelled")}
    for r in done.values():
        if r["role"] != "run":
            continue
        if r.get("baseline_id") in done:
            return r["baseline_id"], r["id"]
        base = next((b for b in done.values() if b["role"] == "baseline" and b["group_id"]
                     and b["group_id"] == r["group_id"]), None)
        if base:
            return base["id"], r["id"]
    return None


def comparison_pair(comparisons: list[Mapping], runs: list[Mapping]) -> Optional[tuple[int, int]]:
    """(baseline id, run id) of the newest ended comparison's last pair whose two runs both
    completed (`comparisons`: engine.store.comparisons.list_all, newest first; `runs`: the
    stored runs that can be replayed). None when no ended comparison has such a pair."""
    ok = {r["id"] for r in runs if r.get("status") == "completed" and started(r)}  # engine.store.rows
    for comp in comparisons:
        if comp.get("status") == "running":
            continue
        done = [(p["baseline_id"], p["run_id"]) for p in comp.get("plan") or []
                if not p.get("dropped") and p.get("baseline_id") in ok and p.get("run_id") in ok]
        if done:
            return done[-1]
    return None
