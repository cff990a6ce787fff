"""Where the test suite's CPU goes: run a pytest command and sum the CPU time of it and of every
process it starts (workers, queues, commands, Streamlit servers, Chromium), by kind.

The suite is CPU-bound on two cores, so CPU seconds, not wall seconds, say what a change to a test
saves; on a shared machine they also move far less with the neighbours' load. Every process that
inherits this run's environment is counted: a tag variable (CPU_TAG) is set for the command and
/proc is read every POLL_S s (utime + stime of each process carrying the tag, its last reading).
A child of a counted process is counted too, tag or not: Chromium starts its zygote, renderers
and GPU process with an empty environment (they were 60% of a browser test's CPU, uncounted,
before 2026-12-07). A process that lives under POLL_S s may be missed; the machine's busy CPU
over the run (/proc/stat: everything but idle and iowait, the kernel's own work included) is
printed beside the sum, so what was missed shows.

    .venv/bin/python benchmarks/suite_cpu.py tests/test_runs.py            # pytest -p no:xdist FILE
    .venv/bin/python benchmarks/suite_cpu.py -- -n 3 -m "worker or browser"  # any pytest arguments

Prints one line: the exit code, wall s, total CPU-s and CPU-s by kind (docs/testing.md,
"Suite time", holds the figures measured with it). `--dump FILE` writes every process with
the test that started it; `--per-test FILE` each test's CPU in its own test process
(benchmarks/per_test_cpu.py), and the files whose tests spent most there.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLL_S = 0.3
# (kind, what its command line contains), first match wins; "other python" and "other" after.
KINDS = (("worker", "engine.jobs.worker"), ("queue", "engine.jobs.queue_runner"), ("probe", "engine.hardware.probe"),
         ("job worker", "engine.lr_find.worker"), ("job worker", "engine.bench.worker"),
         ("model check", "engine.training.user_model"), ("streamlit", "streamlit"), ("chromium", "chrom"),
         ("playwright", "playwright/driver"), ("pytest", "-m pytest"), ("engine command", "-m engine"))


def kind(cmd: str) -> str:
    """The kind of a process by its command line (KINDS)."""
    for name, part in KINDS:
        if part in cmd:
            return name
    return "other python" if "python" in cmd else "other"


def _read(pid: str, tag: bytes, tick: int, seen: dict, skip: set, counted: dict) -> None:
    """Record process `pid`'s CPU seconds and command line in `seen` when it carries `tag` or its
    parent is counted (`counted`: pid -> its entry in `seen`, for the parents)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        rest = stat[stat.rfind(")") + 2:].split()
        key = (pid, rest[19])  # the pid and its start time: a reused pid is another process
        if key in skip:
            return
        if key not in seen:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            parent = counted.get(rest[1])
            if tag not in env and parent is None:
                skip.add(key)
                return
            # The test that started it (pytest sets this in its process; children inherit it).
            test = next((v[len(b"PYTEST_CURRENT_TEST="):] for v in env if v.startswith(b"PYTEST_CURRENT_TEST=")), b"")
            seen[key] = {"cmd": "", "test": test.decode(errors="replace").rsplit(" (", 1)[0] if test
                         else (parent or {}).get("test", "")}
        counted[pid] = seen[key]
        seen[key]["cpu"] = (int(rest[11]) + int(rest[12])) / tick
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        if cmd:  # empty once it has exited (a zombie): keep what it was
            seen[key]["cmd"] = cmd
    except (OSError, ValueError, IndexError):
        pass


def measure(pytest_args: list[str], env: dict | None = None) -> tuple[int, float, dict, list]:
    """Run `python -m pytest -q -p no:cacheprovider *pytest_args` in the repository root and
    return (exit code, wall s, the machine's busy CPU-s over it, {kind: CPU-s},
    [{'kind', 'cmd', 'test', 'cpu'} per process])."""
    tag = f"suite-cpu-{os.getpid()}"
    seen: dict = {}
    skip: set = set()
    done = threading.Event()
    tick = os.sysconf("SC_CLK_TCK")

    counted: dict = {}

    def sample() -> None:
        while not done.is_set():
            # parents first (lower pids, unless pids wrapped), so a child met in the same pass is counted
            for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
                _read(pid, f"CPU_TAG={tag}".encode(), tick, seen, skip, counted)
            time.sleep(POLL_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0, busy0 = time.monotonic(), _machine_busy(tick)
    code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args],
                           cwd=ROOT, env={**os.environ, **(env or {}), "CPU_TAG": tag})
    wall, busy = time.monotonic() - t0, _machine_busy(tick) - busy0
    time.sleep(2 * POLL_S)  # what is still exiting
    done.set()
    sampler.join()
    by_kind: dict = collections.Counter()
    rows = []
    for p in seen.values():
        by_kind[kind(p["cmd"])] += p.get("cpu", 0.0)
        rows.append({"kind": kind(p["cmd"]), "cmd": p["cmd"][:300], "test": p["test"], "cpu": p.get("cpu", 0.0)})
    return code, wall, busy, dict(by_kind), rows


def _machine_busy(tick: int) -> float:
    """CPU-s this machine has been busy since boot, all cores: /proc/stat's first line less idle
    and iowait (steal included: time a neighbour took is time this run did not get)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / tick


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", type=Path, help="also write every process (kind, command, the test that "
                        "started it, CPU-s) to this JSON file")
    parser.add_argument("--per-test", type=Path, help="also write each test's CPU-s in its test process "
                        "(JSON lines) to this file, and print the ten files that spent most")
    parser.add_argument("args", nargs="*", help="test files (run with -p no:xdist), or after -- any pytest arguments")
    ns = parser.parse_args(argv)
    raw = sys.argv[1:] if argv is None else argv
    args = ns.args if "--" in raw else ["-p", "no:xdist", *ns.args]
    env = None
    if ns.per_test:
        ns.per_test.unlink(missing_ok=True)
        args, env = ["-p", "benchmarks.per_test_cpu", *args], {"SUITE_CPU_PER_TEST": str(ns.per_test.resolve())}
    code, wall, busy, by_kind, rows = measure(args, env)
    if ns.per_test and ns.per_test.exists():
        files: dict = collections.Counter()
        for line in ns.per_test.read_text().splitlines():
            t = json.loads(line)
            files[t["test"].split("::")[0]] += t["cpu"]
        print("in the test processes: " + ", ".join(f"{f} {c:.1f}" for f, c in files.most_common(10)))
    if ns.dump:
        ns.dump.write_text(json.dumps(rows, indent=0))
    parts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1]))
    print(f"exit {code} · wall {wall:.1f} s · CPU {sum(by_kind.values()):.1f} s · {parts} · "
          f"machine busy {busy:.1f} CPU-s ({busy / wall / os.cpu_count():.0%} of {os.cpu_count()} cores)")
    return code


if __name__ == "__main__":
    sys.exit(main())
