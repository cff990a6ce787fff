"""Detached background jobs for the dashboard: the autopilot, the quick benchmark, the LR
range test, two commands' pairs and the transfer demo run as ``python -m engine ...`` in their
own session (they outlive the Streamlit script run that started them, and a page reload
re-attaches), and report through small JSON files in $SPEEDLAB_HOME. Each kind is one `Job`
declared here (JOBS): start once, read, cancel, and `busy()` loops over them. No TensorFlow here.

A job file holds at least {'state': 'starting' | 'running' | 'done' |
'failed' | 'cancelled', 'pid', 'pid_started' (engine.base.process.start_time: s since
boot, which a clock step does not move), 'started' (s since the epoch), 'log' (path of the job's stdout+stderr)}.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from engine.base.process import detach, process_alive, read_tail, start_time

ACTIVE_STATES = ("starting", "running")
# A job file still 'starting' without a pid this long after it was written is dead (s).
START_GRACE_S = 30.0


def write_json(path: Path, data: dict) -> None:
    """Write `data` to `path` atomically (a reader never sees half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}-{threading.get_ident()}")  # each writer its own
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def read_json(path: Path) -> Optional[dict]:
    try:
        data = json.loads(Path(path).read_text())
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def spawn(argv: list[str], log_path: Path) -> tuple[int, float]:
    """Start ``python -m engine <argv>`` detached (own session, stdin closed,
    stdout and stderr appended to `log_path`). Returns (pid, `engine.base.process.start_time`)."""
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    proc = detach([sys.executable, "-m", "engine", *argv], log_path)
    return proc.pid, start_time(proc.pid)


def alive(job: Optional[dict]) -> bool:
    """Whether the job's process is still running (and is the one it started)."""
    return bool(job) and process_alive(job.get("pid"), job.get("pid_started"))


def last_error(log_path: Optional[str]) -> Optional[str]:
    """The job's last 'error: ...' line (the CLI's one-line errors), else the
    last line of its log; None without a log."""
    tail = read_tail(Path(log_path), 40) if log_path else None
    if not tail:
        return None
    lines = [ln.strip() for ln in tail.replace("\r", "\n").splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:")]
    line = errors[-1][len("error:"):].strip() if errors else (lines[-1] if lines else None)
    return line[:300] if line else None


def check(job: Optional[dict], what: str) -> Optional[dict]:
    """`job` with its state made honest: an active job whose process is gone
    becomes 'failed' with the log's last error line; adds 'elapsed' (s)."""
    if not job:
        return None
    job = dict(job)
    now = time.time()
    if job.get("state") in ACTIVE_STATES:
        dead = (not alive(job)) if job.get("pid") else now - job.get("started", now) > START_GRACE_S
        if dead:
            job["state"] = "failed"
            job["error"] = job.get("error") or (
                f"the {what} process ended without a result: "
                f"{last_error(job.get('log')) or 'no error in its log (killed?)'}")
            # Its last write, not now: a dead job's elapsed time must not keep growing.
            job.setdefault("finished", job.get("updated") or now)
    end = job.get("finished") if job.get("state") not in ACTIVE_STATES else None
    job["elapsed"] = (end or now) - job.get("started", now)
    return job


def stop(job: Optional[dict]) -> bool:
    """SIGTERM the job's whole process group (the CLI and its TF workers).
    Returns whether a live process was signalled."""
    if not alive(job):
        return False
    pid = job["pid"]
    try:
        if os.getpgid(pid) == pid:  # started by spawn(): its own process group
            os.killpg(pid, signal.SIGTERM)
        else:  # started by hand (e.g. the CLI with --progress-file)
            os.kill(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _stop_mark(path: Path) -> Path:
    """The file beside job file `path` that says the user's Stop asked the job to end."""
    path = Path(path)
    return path.with_name(path.name + ".stop")


def stop_by_user(path: Path, job: Optional[dict]) -> bool:
    """The page's Stop for the job of job file `path`: mark the stop as the user's (`stopped_line`
    then says so), then SIGTERM its process group (`stop`). Returns whether it was signalled."""
    if not alive(job):
        return False
    write_json(_stop_mark(path), {"pid": job.get("pid"), "at": time.time()})
    return stop(job)


def stopped_line(path, who: str) -> str:
    """The one line a background job (the quick benchmark, the LR range test, the autopilot)
    ends with when a stop signal ended it (docs/reliability.md, "signals"): "cancelled by the
    user" when the page's Stop marked job file `path` for this process (`stop_by_user`), else
    the signal named ("stopped: the autopilot got SIGTERM"; engine.base.process.stop_reason)."""
    from engine.base.process import USER_CANCEL, stop_reason

    mark = read_json(_stop_mark(path)) if path else None
    return USER_CANCEL if mark and mark.get("pid") == os.getpid() else stop_reason(who)


def end_by_signal(path, who: str) -> None:
    """A background job's process got a stop signal: write its job file `path` 'cancelled' with
    `stopped_line` (only while it is this process's job and active). For jobs whose process
    keeps no progress writer of its own (the LR range test)."""
    job = read_json(Path(path)) if path else None
    if job and job.get("pid") == os.getpid() and job.get("state") in ACTIVE_STATES:
        write_json(Path(path), {**job, "state": "cancelled", "error": stopped_line(path, who),
                                "finished": time.time()})


def cancel_job(path: Path, and_runs: bool = False, wait_s: float = 0.0) -> bool:
    """Stop the job whose state file is `path` (SIGTERM to its process group) and mark
    it cancelled; with `and_runs`, also cancel every queued or running run it left
    (the transfer demo and the autopilot queue runs). With `wait_s`, wait up to that
    many seconds for its process to end first: a job that writes its state until it
    ends would otherwise read as running again for a moment, and its last write could
    land on the state of a job started right after. Returns whether a stop signal was
    delivered to its process (False for a job whose process is gone: it is still marked
    cancelled, and nothing was signalled)."""
    job = read_json(path)
    if not job or job.get("state") not in ACTIVE_STATES:
        return False
    signalled = stop_by_user(path, job)
    if and_runs:
        from engine.jobs.runner import cancel_active

        cancel_active()
    deadline = time.monotonic() + wait_s
    while alive(job) and time.monotonic() < deadline:
        time.sleep(0.1)
    latest = read_json(path) or job
    if latest.get("state") in ACTIVE_STATES:  # not ended (yet) by the job's own last write
        from engine.base.process import USER_CANCEL  # the words a job's own end uses (stopped_line)

        write_json(path, {**latest, "state": "cancelled", "error": USER_CANCEL, "finished": time.time()})
    return signalled


def start_job(name: str, argv: list[str], log: Path, fields: dict, error: type = RuntimeError,
              also_busy: Optional[Callable[[], Optional[str]]] = None, inputs: Optional[dict] = None) -> int:
    """Start ``python -m engine <argv>`` detached as the dashboard's job `name` (its state
    file in $SPEEDLAB_HOME), once: the one guard of every Start button (the quick
    benchmark, the LR range test, the autopilot, the transfer demo, "Start the pairs").

    Under the store's submit lock (engine.jobs.runner.submit_lock, which every run submit
    holds too) it checks `busy()` (and `also_busy`, one line or None), writes the job file
    'starting' with `fields` and starts the process; a second start, a click a moment later
    or another tab, then finds the first one's job file active and is refused, however soon
    it comes. The log `log` is emptied first, and `inputs` ({path: JSON data}: files the
    process reads, e.g. its config) are written only then: a refused start overwrites
    nothing the running one reads.

    Returns: the process id. Raises: `error`("not started: <why>") while busy; nothing is
    started then."""
    from engine.jobs.runner import submit_lock
    from engine.store import default_path, home

    path = home() / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with submit_lock(default_path()):
        why = busy() or (also_busy() if also_busy else None)
        if why:
            raise error(f"not started: {why}")
        log = Path(log)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(b"")
        _stop_mark(path).unlink(missing_ok=True)  # the last job's Stop is not this one's
        for file, data in (inputs or {}).items():
            write_json(file, data)
        write_json(path, {**fields, "state": "starting", "pid": None, "pid_started": None,
                          "started": time.time(), "log": str(log)})
        pid, pid_started = spawn(argv, log)
        job = read_json(path) or {}
        if job.get("pid") is None:  # the child has not written yet
            write_json(path, {**job, "pid": pid, "pid_started": pid_started})
    return pid


def own_job_file(progress_file, name: str) -> bool:
    """Whether `progress_file` (a CLI's --progress-file, or None) is the dashboard's job
    file $SPEEDLAB_HOME/`name`: the page writes it 'starting' and then starts the CLI with
    it, so that job alone may find the file active (busy(skip=(name,)))."""
    from engine.store import home

    return bool(progress_file) and Path(progress_file).resolve() == (home() / name).resolve()


def _autopilot_line(job: dict) -> str:
    return (f"the autopilot is searching ({job.get('elapsed', 0):.0f} s so far, phase "
            f"{job.get('phase') or 'starting'}): wait for it to end or stop it on the Autopilot page")


def _bench_line(job: dict) -> str:
    return (f"the quick benchmark is running ({job.get('done', 0)}/{job.get('total') or '?'} cells): "
            "wait for it to end or cancel it on the Hardware page")


def _pairs_line(job: dict) -> str:
    return (f"the two commands' pairs are running (process {job.get('pid')}, {job.get('elapsed', 0):.0f} s "
            "so far): wait for them to end")


def _demo_line(job: dict) -> str:
    return (f"the transfer demo is running ({job.get('elapsed', 0):.0f} s so far, about a minute in all): "
            "wait for it to end or stop it on the Runs page")


@dataclass(frozen=True)
class Job:
    """One kind of the dashboard's background jobs: ``python -m engine <command>`` started
    detached by a Start button, its state in the JSON file `file` of $SPEEDLAB_HOME, its
    stdout and stderr in `log` there. Every kind is declared below (JOBS), so that `busy()`
    knows them all without importing the features that own them.

    what: its name in lines ("benchmark"); busy_line: the one line `busy()` gives while it
    runs (from its state as `check` returns it); owns_runs: stopping it cancels the runs it
    queued (the autopilot, the transfer demo); before_runs: `busy()` names it rather than the
    run it is training (the autopilot holds no run between trials but owns the machine);
    stop_wait_s: how long `cancel` waits for its process to end (a Start right after then
    finds the machine free)."""

    file: str
    what: str
    log: str
    busy_line: Callable[[dict], str]
    owns_runs: bool = False
    before_runs: bool = False
    stop_wait_s: float = 0.0

    def path(self) -> Path:
        from engine.store import home

        return home() / self.file

    def log_path(self) -> Path:
        return self.path().parent / self.log

    def read(self) -> Optional[dict]:
        """Its state made honest (`check`), or None if none was started in this store."""
        return check(read_json(self.path()), self.what)

    def active(self) -> Optional[dict]:
        """Its state while it is starting or running, else None."""
        job = self.read()
        return job if job and job["state"] in ACTIVE_STATES else None

    def start(self, argv: list[str], fields: dict, error: type = RuntimeError,
              also_busy: Optional[Callable[[], Optional[str]]] = None, inputs: Optional[dict] = None) -> int:
        """`start_job` for this kind: once, under the store's submit lock. Returns the pid."""
        return start_job(self.file, argv, self.log_path(), fields, error=error, also_busy=also_busy, inputs=inputs)

    def cancel(self) -> bool:
        """`cancel_job` for this kind. Returns whether a stop signal reached its process."""
        return cancel_job(self.path(), and_runs=self.owns_runs, wait_s=self.stop_wait_s)


AUTOPILOT = Job("autopilot.json", "autopilot", "autopilot.log", _autopilot_line, owns_runs=True, before_runs=True,
                stop_wait_s=15.0)  # it stops its run: about 1-3 s
BENCH = Job("bench-progress.json", "benchmark", "bench.log", _bench_line)
LR_FIND = Job("lr-find-progress.json", "LR range test", "lr-find.log",
              lambda job: "an LR range test is running: wait for it to end (usually under a minute)")
PAIRS = Job("pairs_job.json", "command pairs", "pairs.log", _pairs_line)
DEMO = Job("demo-transfer.json", "transfer demo", "demo-transfer.log", _demo_line, owns_runs=True)
JOBS = (AUTOPILOT, BENCH, LR_FIND, PAIRS, DEMO)
# The state file names, as CLI commands pass them to busy(skip=...).
AUTOPILOT_FILE, BENCH_FILE, LR_FIND_FILE, PAIRS_FILE, DEMO_FILE = (j.file for j in JOBS)


def busy(skip: tuple = ()) -> Optional[str]:
    """One line when the machine is busy with a measurement (a training run queued or
    running, or any declared job running: JOBS), else None: starting another now would
    share the CPU/GPU and spoil both. `skip`: job file names (e.g. AUTOPILOT_FILE) not to
    count: the caller's own."""
    from engine.jobs.runner import current_run

    def job_line(before_runs: bool) -> Optional[str]:
        for job in JOBS:
            if job.before_runs == before_runs and job.file not in skip:
                state = job.active()
                if state:
                    return job.busy_line(state)
        return None

    line = job_line(before_runs=True)
    if line:
        return line
    run = current_run()
    if run:
        return (f"run #{run['id']} is {run['status']}: wait for it to end or stop it (one measurement "
                "at a time keeps the numbers clean)")
    return job_line(before_runs=False)
