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


def launch(baseline_cmd: str, cmd: str, pairs: int) -> str:
    """Check, then start the detached comparison once (engine.jobs.background.start_job: a
    second click while the first one's pairs start or run is refused); returns a one-line
    status. Raises: ConfigError for bad input or a busy machine (nothing started)."""
    command_pairs.check(baseline_cmd, cmd, pairs, command_pairs.DEFAULT_TIMEOUT_S)
    log = home() / "logs" / f"pairs-{int(time.time())}.log"
    pid = background.start_job(JOB_FILE, ["pairs", "--baseline-cmd", baseline_cmd, "--cmd", cmd,
                                          "--pairs", str(pairs), "--quiet", "--progress-file",
                                          str(home() / JOB_FILE)], log,
                               {"baseline_cmd": baseline_cmd, "cmd": cmd, "pairs": pairs, "created": time.time()},
                               error=Busy, also_busy=_running_comparison)
    return f"started: {pairs} pairs, process {pid}"


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
            pairs = st.number_input("Pairs", min_value=1, max_value=command_pairs.MAX_PAIRS, value=3, step=1,
                                    key="pairs_n")
            go = st.form_submit_button("Start the pairs", icon=":material/play_arrow:")  # not "Launch": one on the page
        if go:
            try:
                st.text(launch(base, cmd, int(pairs)))
            except ConfigError as e:
                st.error(plain.md(str(e)), icon=":material/error:")
        job = background.read_json(home() / JOB_FILE)
        if job:
            state = "running" if background.alive(job) else "ended"
            st.text(f"last: {state}; baseline: {job.get('baseline_cmd')}; command: {job.get('cmd')}")
            if state == "ended":
                line = background.last_error(job.get("log"))
                if line:
                    st.text(line)
