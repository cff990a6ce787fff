"""Train page: "Compare two commands" (engine.jobs.command_pairs), on a local server only.

Two typed commands are the server's own user's code: they are offered only where the
server listens on this machine alone (server.address localhost), never on a dashboard
served to a network, secret gate or not (docs/reliability.md). "Start the pairs" starts a detached
``python -m engine pairs ... --quiet`` (engine.jobs.background.spawn), so a page reload
loses nothing; the running comparison is drawn as any other (views/train/train.py's
comparison block), and its job file keeps the commands and the process's last line.
Commands are shown as plain text only.
"""
from __future__ import annotations

import time

import streamlit as st

from engine.base import plain
from engine.base.errors import ConfigError
from engine.jobs import background, command_pairs
from engine.store import Store, home
from views.train.upload import LOCAL_ADDRESSES

JOB_FILE = background.PAIRS_FILE


def allowed() -> bool:
    """Whether the server listens on this machine alone (then typed commands may run)."""
    return st.get_option("server.address") in LOCAL_ADDRESSES


def _running_comparison() -> str | None:
    from engine.jobs import comparison

    with Store() as store:
        comp = comparison.running(store)
    return f"comparison #{comp['id']} is running: wait for it to end" if comp else None


class Busy(ConfigError):
    """Not started: the machine is busy (the first click's pairs, a run, a benchmark, ...)."""

    def __init__(self, line: str):
        super().__init__("machine", "busy", line.removeprefix("not started: "), "launch when it is idle")


DEFAULT_TIMEOUT_MIN = 60.0  # a side's limit on the page, in minutes (the CLI's default is 6 h)


def launch(baseline_cmd: str, cmd: str, pairs: int, timeout_min: float = DEFAULT_TIMEOUT_MIN) -> str:
    """Check, then start the detached comparison once (engine.jobs.background.start_job: a
    second click while the first one's pairs start or run is refused); returns a one-line
    status. `timeout_min`: each side's limit in minutes (a side past it is stopped, its whole
    process group, and its pair fails). Raises: ConfigError for bad input or a busy machine
    (nothing started)."""
    timeout_s = float(timeout_min) * 60.0
    command_pairs.check(baseline_cmd, cmd, pairs, timeout_s)
    log = home() / "logs" / f"pairs-{int(time.time())}.log"
    pid = background.start_job(JOB_FILE, ["pairs", "--baseline-cmd", baseline_cmd, "--cmd", cmd,
                                          "--pairs", str(pairs), "--timeout-s", f"{timeout_s:g}", "--quiet",
                                          "--progress-file", str(home() / JOB_FILE)], log,
                               {"baseline_cmd": baseline_cmd, "cmd": cmd, "pairs": pairs, "timeout_s": timeout_s,
                                "created": time.time()},
                               error=Busy, also_busy=_running_comparison)
    return f"started: {pairs} pairs, at most {timeout_min:g} min a side, process {pid}"


def stop_running(job: dict) -> str:
    """Stop the running two-command comparison (engine.jobs.command_pairs.stop), or the pairs
    process `job` (its job file) before it stored one: one line."""
    from engine.store import comparisons as cstore

    with Store() as store:
        ids = [c["id"] for c in cstore.list_all(store)
               if c["status"] == "running" and (c.get("settings") or {}).get("baseline_kind") == "command"]
    if ids:
        return "; ".join(command_pairs.stop(cid) for cid in ids)
    return ("stop requested (SIGTERM to the pairs process, before its first side)" if background.stop(job)
            else "nothing to stop: the pairs process has ended")


def commands_panel() -> None:
    """The expander with two command fields, Pairs and "Start the pairs" (local servers only), and
    the last launch's state as plain text."""
    if not allowed():
        return
    with st.expander("Compare two commands", icon=":material/compare_arrows:"):
        st.caption("Runs your two training scripts as interleaved pairs (AB, BA, ...), each with "
                   "SpeedLabCallback in its fit(); runs here, as the server's user.")
        with st.form("two_commands", border=False):
            base = st.text_input("Baseline command", placeholder="python examples/train_with_callback.py",
                                 max_chars=command_pairs.MAX_COMMAND_CHARS, key="pairs_baseline_cmd")
            cmd = st.text_input("Command", placeholder="python examples/train_with_callback.py --bf16",
                                max_chars=command_pairs.MAX_COMMAND_CHARS, key="pairs_cmd")
            n_col, t_col = st.columns(2)
            pairs = n_col.number_input("Pairs", min_value=1, max_value=command_pairs.MAX_PAIRS, value=3, step=1,
                                       key="pairs_n")
            timeout = t_col.number_input("Timeout per side (min)", min_value=0.1, max_value=1440.0,
                                         value=DEFAULT_TIMEOUT_MIN, step=5.0, format="%g", key="pairs_timeout_min",
                                         help="A side still running after this is stopped (its whole process "
                                              "group) and its pair fails. Stop, above the progress, stops the "
                                              "comparison at any time.")
            go = st.form_submit_button("Start the pairs", icon=":material/play_arrow:")  # not "Launch": one on the page
        if go:
            try:
                st.text(launch(base, cmd, int(pairs), float(timeout)))
            except ConfigError as e:
                st.error(plain.md(str(e)), icon=":material/error:")
        job = background.read_json(home() / JOB_FILE)
        if job:
            state = "running" if background.alive(job) else "ended"
            line, stop_col = st.columns([4, 1], vertical_alignment="center")
            line.text(f"last: {state}; baseline: {job.get('baseline_cmd')}; command: {job.get('cmd')}")
            if state == "running" and stop_col.button("Stop", icon=":material/stop:", key="pairs_stop",
                                                      help="Stop the running side (its whole process group) "
                                                           "and end the comparison; complete pairs are kept"):
                st.text(stop_running(job))
            if state == "ended":
                line = background.last_error(job.get("log"))
                if line:
                    st.text(line)
