"""Interleaved pairs of two commands (hyperfine for training scripts).

`python -m engine pairs --baseline-cmd A --cmd B --pairs N` runs A and B as N
interleaved pairs (AB, BA, AB, ... as engine.jobs.comparison.orders), one process
at a time, each in its own process group (shlex.split, no shell: shell syntax such as
`>`, `|` or `VAR=1 cmd` is refused in one line, and both programs are checked before
the first pair trains). A user's command
is run only from the CLI or a local server, as the server's own user.

Each side gets the environment contract of issue 44 (read by the SpeedLab callback):
SPEEDLAB_HOME (the store folder), SPEEDLAB_SEED (pair i: seed + i, the same on both
sides), SPEEDLAB_GROUP (the comparison's 'cmp-<hex>'), SPEEDLAB_ROLE ('baseline' |
'run') and SPEEDLAB_RUN_FILE (the callback writes {"run_id": N, "store": PATH} there). The side's run
is read from that file, else the newest run row of that group and role created after
the side started. The comparison owns its runs: a run is taken only from this store and
only when its group and role are this side's. A side that wrote to another store (it
set its own SPEEDLAB_HOME) ends the comparison at once, in one line ("the candidate
wrote to another store: PATH"); no run outside the comparison is ever modified.

Every reason (a pair's error, the comparison's ended_by) is one line of at most 300
characters (engine.base.lines); each side's whole stderr is kept in
<store folder>/pairs/<group>/.

The comparison is stored like `run --baseline`'s (engine.store.comparisons, kind
'ab', settings baseline_kind 'command' and the two commands as plain text); its
result is engine.report.comparison.evaluate, so the figures are the same. A side that
exits non-zero, times out or records no run ends its pair 'failed' with its last
stderr line (plan entry 'error').

Stopping (docs/reliability.md, "signals"): SIGINT, SIGTERM or SIGHUP to this process
(engine.cli.main raises KeyboardInterrupt) stops the running side's whole process group
(SIGTERM, SIGKILL after 10 s) and ends the comparison `stopped` with its complete pairs
kept: "stopped: the pairs process got SIGTERM". The dashboard's Stop (`stop`) records
"stopped by the user" as the comparison's reason first, then sends SIGTERM: that reason
stays. No TF in this process.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Callable, Optional

from engine.hardware.fingerprint import short as fingerprint_short
from engine.store import comparisons as cstore
from engine.base.errors import ConfigError
from engine.jobs import comparison
from engine.report.comparison import evaluate
from engine.base import process
from engine.base.process import start_time
from engine.store import Store
from engine.base.lines import last_error_line, one_line

DEFAULT_TIMEOUT_S = 6 * 3600.0
MAX_PAIRS = 50
MAX_COMMAND_CHARS = 2000
STDERR_TAIL_BYTES = 64 * 1024
SIDE_NAMES = {"baseline": "the baseline", "run": "the candidate"}
WHO = "pairs process"  # in the stop lines: "stopped: the pairs process got SIGTERM"
USER_STOP = "stopped by the user"  # the dashboard's Stop (`stop`), as a queued comparison's


def split_command(field: str, text: Optional[str]) -> list[str]:
    """The argv of a typed command (shlex, POSIX rules; no shell).
    Raises: ConfigError naming `field` for an empty, too long or unbalanced command."""
    text = (text or "").strip()
    if not text:
        raise ConfigError(field, text, "is empty", 'give a command, e.g. "python train.py"')
    if len(text) > MAX_COMMAND_CHARS:
        raise ConfigError(field, text[:40] + "...", "is too long", f"keep it under {MAX_COMMAND_CHARS} characters")
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise ConfigError(field, text, f"cannot be split ({e})", "balance its quotes") from None
    if not argv:
        raise ConfigError(field, text, "is empty", 'give a command, e.g. "python train.py"')
    return argv


# What a shell would read as syntax when unquoted: pipes, lists, redirections, subshells,
# expansions and globs. Without a shell they would be passed to the program as arguments.
SHELL_CHARS = "|&;<>()$`*?"
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def shell_syntax(text: str) -> Optional[str]:
    """The first piece of shell syntax in a command line, as typed (an unquoted character of
    SHELL_CHARS, a `~` or `#` that starts a word, or a leading `VAR=value`), else None. Quotes and
    backslashes are read as POSIX sh reads them; inside double quotes only `$` and a backquote
    expand."""
    quote, escaped, word_start = None, False, True
    for ch in text:
        if escaped:
            escaped, word_start = False, False
            continue
        if quote == "'":
            quote = None if ch == "'" else quote
        elif ch == "\\":
            escaped = True
        elif quote == '"':
            if ch in "$`":
                return ch
            quote = None if ch == '"' else quote
        elif ch in "'\"":
            quote = ch
        elif ch in SHELL_CHARS or (ch in "~#" and word_start):
            return ch
        word_start = ch.isspace()
    argv = shlex.split(text)
    if argv and _ASSIGNMENT.match(argv[0]):
        return argv[0].split("=", 1)[0] + "=..."
    return None


def check(baseline_cmd: str, cmd: str, pairs: int, timeout_s: float) -> None:
    """Validate everything before any process starts. Commands run without a shell, so shell
    syntax (`shell_syntax`) is refused rather than passed on as arguments. Raises: ConfigError
    (one line)."""
    for field, text in (("baseline_cmd", baseline_cmd), ("cmd", cmd)):
        split_command(field, text)
        found = shell_syntax(text)
        if found:
            fix = ('set variables with env, e.g. "env VAR=1 python train.py"' if found.endswith("=...") else
                   "commands run without a shell: put the shell part in a script (e.g. bash run.sh) "
                   "or drop it; SpeedLab keeps each side's output itself")
            raise ConfigError(field, text.strip(), f"uses shell syntax ({found})", fix)
    if not 1 <= pairs <= MAX_PAIRS:
        raise ConfigError("pairs", pairs, "is out of range", f"give 1 to {MAX_PAIRS} pairs (2 or more for an interval)")
    if not timeout_s > 0:
        raise ConfigError("timeout_s", timeout_s, "is not positive", "give seconds per side, e.g. 3600")


def can_start(field: str, argv: list[str], path: Optional[str] = None) -> None:
    """Raises ConfigError (one line naming the program) unless `argv`'s program can start: an
    executable file at the path given (relative to the working folder), else a program on
    PATH (`path`, default $PATH); for an interpreter (python, bash, sh) given a script file
    (`*.py`, `*.sh`), that file must exist too."""
    prog = argv[0]
    if os.sep in prog:
        if not os.path.isfile(prog):
            raise ConfigError(field, prog, "cannot start: there is no such file",
                              f"give the program's path from {os.getcwd()} or its name on PATH")
        if not os.access(prog, os.X_OK):
            raise ConfigError(field, prog, "cannot start: the file is not executable",
                              f"run chmod +x {shlex.quote(prog)}, or give its interpreter (python FILE, bash FILE)")
    elif shutil.which(prog, path=path) is None:
        raise ConfigError(field, prog, "cannot start: no such program on PATH",
                          "check its spelling, or give its full path")
    name = os.path.basename(prog)
    script = argv[1] if len(argv) > 1 else ""
    if (name.startswith("python") or name in ("bash", "sh")) and script.endswith((".py", ".sh")) \
            and not os.path.isfile(script):
        raise ConfigError(field, script, f"cannot start: {name} has no such script file",
                          f"give its path from {os.getcwd()}")


def side_env(home: str, seed: int, group: str, role: str, run_file: str, base: Optional[dict] = None) -> dict:
    """The environment of one side: `base` (default os.environ) plus the contract's variables."""
    env = dict(os.environ if base is None else base)
    env.update(SPEEDLAB_HOME=home, SPEEDLAB_SEED=str(seed), SPEEDLAB_GROUP=group, SPEEDLAB_ROLE=role,
               SPEEDLAB_RUN_FILE=run_file)
    return env


def stop(comparison_id: int, store_path: Optional[os.PathLike] = None, reason: str = USER_STOP) -> str:
    """The dashboard's Stop for a running two-command comparison: record `reason` ("stopped by
    the user"; engine.jobs.stopping.stop_all gives a signal's line) as its reason, then SIGTERM
    its `engine pairs` process, which stops the running side's process group and ends the
    comparison `stopped` with its complete pairs kept. Returns one line saying what was done."""
    store = Store(store_path)
    try:
        comp = cstore.get(store, comparison_id)
        if comp is None or comp["status"] != "running":
            return f"comparison {comparison_id} is not running"
        s = comp.get("settings") or {}
        if not comparison.owner_alive(comp):  # its process is gone: end it here, keeping what it stored
            _finish(store, comparison_id, comp.get("plan") or [], int(s.get("pairs") or 0),
                    "its pairs process had ended", True)
            return f"comparison {comparison_id}: its pairs process had ended; marked stopped"
        cstore.mark_stopping(store, comparison_id, reason)
    finally:
        store.close()
    try:
        os.kill(int(s["pid"]), signal.SIGTERM)
    except (ProcessLookupError, PermissionError) as e:
        return f"comparison {comparison_id}: its pairs process (pid {s['pid']}) could not be signalled ({e})"
    return f"comparison {comparison_id}: stop requested (its pairs process, pid {s['pid']}, stops the running side)"


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - STDERR_TAIL_BYTES))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""




def _run_id(store: Store, run_file: str, group: str, role: str, since: float) -> tuple[Optional[int], Optional[str]]:
    """(the side's run, None), or (None, why it is refused: one line). The run is the one its
    run file names, when it is in this store and of this group and role; else the newest row
    of group+role created since `since`. A run file naming another store is refused."""
    try:
        with open(run_file, encoding="utf-8") as f:
            data = json.load(f)
        rid = int(data["run_id"])
    except (OSError, ValueError, KeyError, TypeError):
        data, rid = None, None
    if rid is not None:
        where = data.get("store") if isinstance(data, dict) else None
        if where and os.path.realpath(str(where)) != os.path.realpath(str(store.path)):
            return None, one_line(f"{SIDE_NAMES[role]} wrote to another store: {where}")
        run = store.get_run(rid)
        if run is not None and run.get("group_id") == group and run.get("role") == role:
            return rid, None
    row = store.conn.execute("SELECT id FROM runs WHERE group_id=? AND role=? AND created>=? ORDER BY id DESC LIMIT 1",
                             (group, role, since - 1.0)).fetchone()
    if row:
        return int(row[0]), None
    if rid is not None:  # the file names a run that is not this side's: never touch it
        return None, f"{SIDE_NAMES[role]}'s run file names run #{rid}, which is not this comparison's {role}"
    return None, None


def _hold_signals() -> None:
    """After the first stop signal, more only get recorded: the side's group is stopped and the
    comparison ended once, whatever else arrives (a second Ctrl-C, a SIGTERM to the group)."""
    try:
        process.on_stop_signals()
    except ValueError:  # not the main thread: nothing was installed there to raise again
        pass


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the side's process group, SIGKILL after 10 s."""
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def run_side(store: Store, argv: list[str], env: dict, group: str, role: str, timeout_s: float,
             workdir: str, stdout=None, why: Optional[Callable[[], str]] = None) -> dict:
    """Run one side to its end. Returns {'run_id' (or None), 'exit_code', 'error' (one line of
    at most 300 characters, or None: why the side does not count), 'refused' (True when the
    side's run is not this comparison's to take: the comparison ends)}. Its stderr is kept in
    `workdir`. Raises: KeyboardInterrupt after stopping the side's process group; its run, if
    it recorded one, then ends `cancelled` with `why()` (default: the signal this process got)."""
    err_path = os.path.join(workdir, f"{role}-{uuid.uuid4().hex[:6]}.stderr")
    since = time.time()
    with open(err_path, "wb") as err:
        try:
            proc = subprocess.Popen(argv, env=env, stdout=stdout if stdout is not None else sys.stderr,
                                    stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            return {"run_id": None, "exit_code": None, "refused": False,
                    "error": one_line(f"cannot start {argv[0]}: {e.strerror or e}")}
        error = None
        try:
            code = proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc)
            code, error = proc.returncode, f"timed out after {timeout_s:g} s"
        except KeyboardInterrupt:
            _hold_signals()
            _stop(proc)
            rid, _ = _run_id(store, env["SPEEDLAB_RUN_FILE"], group, role, since)
            if rid is not None:
                store.finish_run(rid, "cancelled", (why or (lambda: process.stop_reason(WHO)))(),
                                 only_if_active=True)
            raise
    rid, refused = _run_id(store, env["SPEEDLAB_RUN_FILE"], group, role, since)
    if refused:
        return {"run_id": None, "exit_code": code, "error": refused, "refused": True}
    last = last_error_line(_tail(err_path))
    run = (store.get_run(rid) or {}) if rid is not None else {}
    if error is None and code != 0:  # the run's own reason (its exception) says more than stderr's last line
        why = run.get("error") if run.get("status") == "failed" else None
        error = f"exited with code {code}" + (f": {why or last}" if why or last else "")
    if error is None and rid is None:
        error = "recorded no run (is SpeedLabCallback in its fit()?)" + (f"; last stderr line: {last}" if last else "")
    if rid is not None:
        if error is None and run.get("status") != "completed":
            error = f"its run #{rid} ended {run.get('status')}" + (f": {run.get('error')}" if run.get("error") else "")
    if error is not None:
        error = one_line(error, log=err_path)
        if rid is not None:  # a run the side left open must not read as running
            store.finish_run(rid, "failed", error, only_if_active=True)
    return {"run_id": rid, "exit_code": code, "error": error, "refused": False}


def run(baseline_cmd: str, cmd: str, pairs: int, seed: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S,
        store_path: Optional[os.PathLike] = None, on_side: Optional[Callable[[dict], None]] = None,
        comparison_id: Optional[Callable[[int], None]] = None, stdout=None) -> dict:
    """Run `pairs` interleaved pairs of the two commands and store them as a comparison.

    Args:
        baseline_cmd, cmd: command lines (split with shlex; no shell); A = baseline.
        seed: pair i runs both sides with SPEEDLAB_SEED = seed + i.
        timeout_s: per side, in s; a side past it is stopped and its pair fails.
        on_side: called after each side with {'pair', 'role', 'order', 'run_id', 'error'}.
        comparison_id: called with the new comparison's id once it is stored.
        stdout: where the sides' stdout goes (default: this process's stderr, so that
            --json's last stdout line stays the JSON).
    Returns: the final comparison row (engine.store.comparisons; 'result' is
    engine.report.comparison.evaluate), with 'refused' (one line) when a side's run was not
    the comparison's to take (it wrote to another store): the comparison ended there. Raises: ConfigError before anything runs.
    A Ctrl-C stops the running side and ends the comparison with its complete pairs.
    """
    check(baseline_cmd, cmd, pairs, timeout_s)
    argvs = {"baseline": split_command("baseline_cmd", baseline_cmd), "run": split_command("cmd", cmd)}
    for role, field in (("baseline", "baseline_cmd"), ("run", "cmd")):
        can_start(field, argvs[role])  # both, before the first pair trains
    group = comparison.GROUP_PREFIX + uuid.uuid4().hex[:8]
    store = Store(store_path)
    workdir = tempfile.mkdtemp(prefix="speedlab-pairs-")  # the run files
    try:
        home = str(store.path.parent)
        logdir = os.path.join(home, "pairs", group)  # each side's stderr, kept
        os.makedirs(logdir, exist_ok=True)
        settings = {"pairs": pairs, "max_pairs": pairs, "min_pairs": min(2, pairs), "baseline_kind": "command",
                    "commands": {"baseline": baseline_cmd.strip(), "run": cmd.strip()}, "seed": seed,
                    "timeout_s": timeout_s, "target_half_width": None, "budget_s": None, "margin": None,
                    "pid": os.getpid(), "pid_started": start_time(os.getpid()),
                    "fingerprint": fingerprint_short()}  # the machine (engine.hardware.fingerprint)
        cid = cstore.create(store, "ab", group, settings, [], os.uname().nodename)
        if comparison_id:
            comparison_id(cid)
        plan: list[dict] = []
        ended_by = refused = None

        def why() -> str:  # the dashboard's Stop marked the comparison first; else the signal's name
            marked = (cstore.get(store, cid) or {}).get("ended_by")
            if marked:
                return marked
            return process.stop_line(WHO, process.RECEIVED["signal"]) if process.RECEIVED["signal"] else USER_STOP

        def run_why() -> str:  # the side's run: "cancelled by the user" for Stop, as a queued run's
            reason = why()
            return process.USER_CANCEL if reason == USER_STOP else reason

        try:
            for i, order in enumerate(comparison.orders(pairs)):
                entry = {"pair": i, "seed": seed + i, "order": order, "baseline_id": None, "run_id": None}
                for side in order:
                    role = "baseline" if side == "A" else "run"
                    run_file = os.path.join(workdir, f"pair{i}-{role}.json")
                    env = side_env(home, seed + i, group, role, run_file)
                    res = run_side(store, argvs[role], env, group, role, timeout_s, logdir, stdout, run_why)
                    entry[f"{role}_id"] = res["run_id"]
                    if on_side:
                        on_side({"pair": i, "role": role, "order": order, **res})
                    if res.get("refused"):
                        ended_by = refused = res["error"]
                        break
                    if res["error"]:
                        entry["error"] = one_line(f"{role} command: {res['error']}")
                        break
                if ended_by:  # a refused side: nothing of this pair is the comparison's
                    break
                _link(store, entry)
                plan.append(entry)
                _store(store, cid, plan)
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP (engine.cli.main), in a side or between two
            _hold_signals()
            ended_by = why()
            stopped = True
        else:
            stopped = False
        comp = _finish(store, cid, plan, pairs, ended_by, stopped)
        return {**comp, "refused": refused} if refused else comp
    finally:
        store.close()
        for name in os.listdir(workdir):
            os.unlink(os.path.join(workdir, name))
        os.rmdir(workdir)


def _link(store: Store, entry: dict) -> None:
    """Give both runs of a pair baseline_id = the baseline's, as a queued comparison does."""
    bid = entry.get("baseline_id")
    for k in ("baseline_id", "run_id"):
        if entry.get(k) is not None and bid is not None:
            store.update_run(entry[k], baseline_id=bid)


def _store(store: Store, cid: int, plan: list[dict]) -> dict:
    comp = cstore.get(store, cid)
    comp["plan"] = plan
    result = evaluate(store, comp) if plan else None
    cstore.update(store, cid, plan=plan, **({"result": result} if result else {}))
    return cstore.get(store, cid)


def _finish(store: Store, cid: int, plan: list[dict], pairs: int, ended_by: Optional[str],
            stopped: bool = False) -> dict:
    """Store the comparison's end: `stopped` (a stop signal or Stop) ends it 'stopped' whatever
    it kept, as a queued comparison (engine.jobs.comparison.finish_if_done)."""
    comp = _store(store, cid, plan)
    result = comp.get("result") or {}
    rows = result.get("pair_rows") or []
    # Pairs with a ratio: a pair whose side failed is counted (engine.report.comparison), not usable.
    k = (result.get(result.get("measure") or "time_to_accuracy") or {}).get("pairs") or 0
    kept = f"{k} complete pair{'s' if k != 1 else ''} kept"
    failed = [p for p in plan if p.get("error")]
    if ended_by:
        status, ended_by = ("stopped" if k or stopped else "failed"), f"{ended_by}; {kept}"
    elif failed:
        status = "stopped" if k else "failed"
        ended_by = f"pair {failed[0]['pair'] + 1} failed ({failed[0]['error']}); {kept}"
    elif len(rows) == pairs and k == pairs:
        status, ended_by = "completed", f"the {pairs} pair{'s' if pairs != 1 else ''} asked for"
    else:
        status, ended_by = ("stopped" if k else "failed"), f"a pair did not complete; {kept}"
    cstore.update(store, cid, status=status, ended=time.time(), ended_by=one_line(ended_by))
    return cstore.get(store, cid)
