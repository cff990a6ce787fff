"""Every Start is idempotent (issue 56, item 2): a second start of long work, a click a
moment later or another tab, is refused while the first one's job or runs are starting,
queued or running, and says which one runs (engine.jobs.background.start_job; runs:
engine.jobs.runner.submit under submit_lock)."""
from __future__ import annotations

import os
import shlex
import sys
import threading
import time

import pytest

from engine.base.process import start_time
from engine.config import RunConfig
from engine.jobs import background

TWO_CELLS = {"workload": {}, "cells": [{}, {}]}  # 2 cells x 2 repeats: 4, whatever this machine is
SIDE = f"{shlex.quote(sys.executable)} -m tests.helpers.command_side"


def _starters():
    """(name, job file, start, the error a second start raises): every background Start."""
    from engine.autopilot import search
    from engine.bench import quick
    from engine.jobs import demo
    from engine.lr_find import range_test
    from views.train import commands

    return {
        "quick benchmark": (background.BENCH_FILE, lambda: quick.start_background(matrix=TWO_CELLS), quick.BenchError),
        "LR range test": (background.LR_FIND_FILE, lambda: range_test.start_background(RunConfig(epochs=1)),
                          range_test.LRFindError),
        "autopilot": (background.AUTOPILOT_FILE, lambda: search.start_background(["--budget-s", "60"]),
                      search.AutopilotError),
        "transfer demo": (background.DEMO_FILE, lambda: demo.start_demo_background(), demo.TransferError),
        "Start the pairs": (background.PAIRS_FILE, lambda: int(commands.launch("python a.py", "python b.py", 2).rsplit(" ", 1)[1]),
                            commands.Busy),
    }


@pytest.fixture
def fake_spawn(store_home, monkeypatch):
    """spawn() that starts nothing and names this test process (alive) as the job's: a
    started job stays running for the test's length. Returns the list of argv it got."""
    calls = []

    def spawn(argv, log):
        time.sleep(0.05)  # a real spawn takes a moment: the window a second click fell into
        calls.append(argv)
        return os.getpid(), start_time(os.getpid())

    monkeypatch.setattr(background, "spawn", spawn)
    return calls


@pytest.mark.parametrize("name", ["quick benchmark", "LR range test", "autopilot", "transfer demo",
                                  "Start the pairs"])
def test_a_second_start_is_refused_while_the_first_runs(fake_spawn, store_home, name):
    job_file, start, error = _starters()[name]
    assert start() == os.getpid()
    job = background.read_json(store_home / job_file)
    assert job["state"] == "starting" and job["pid"] == os.getpid()
    with pytest.raises(error) as e:
        start()
    assert len(fake_spawn) == 1  # started once
    assert "not started" in str(e.value) or "busy" in str(e.value)
    assert background.busy()  # the running one is named
    assert background.busy() in str(e.value)
    for other, (_f, other_start, other_error) in _starters().items():  # and nothing else starts beside it
        if other != name:
            with pytest.raises(other_error):
                other_start()
    assert len(fake_spawn) == 1


def test_two_starts_at_the_same_moment_start_one(fake_spawn, store_home):
    from engine.bench import quick

    results = []

    def click():
        try:
            results.append(quick.start_background(matrix=TWO_CELLS))
        except quick.BenchError as e:
            results.append(str(e))

    threads = [threading.Thread(target=click) for _ in range(4)]  # four tabs pressing Start together
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(fake_spawn) == 1 and results.count(os.getpid()) == 1
    assert sorted(r for r in results if r != os.getpid()) == ["not started: the quick benchmark is running "
                                                              "(0/4 cells): wait for it to end or cancel it "
                                                              "on the Hardware page"] * 3


def test_a_start_after_the_first_ended_goes_through(fake_spawn, store_home):
    from engine.lr_find import range_test

    range_test.start_background(RunConfig(epochs=1))
    job = background.read_json(store_home / background.LR_FIND_FILE)
    background.write_json(store_home / background.LR_FIND_FILE, {**job, "pid_started": job["pid_started"] - 9})
    range_test.start_background(RunConfig(epochs=1))  # the first one's process is gone: not busy
    assert len(fake_spawn) == 2


def _in_order(node) -> list:
    """Every element under an AppTest block, in the order the page draws them."""
    kids = getattr(node, "children", None)
    if not isinstance(kids, dict):
        return [node]
    return [e for k in sorted(kids) for e in _in_order(kids[k])]


@pytest.mark.page
def test_launch_clicked_twice_queues_one_comparison_and_shows_it(store, monkeypatch, fake_cpu):
    from engine.jobs import runner
    from engine.store import comparisons as cstore
    from tests.helpers.pages import app, no_errors, texts

    fake_cpu({"avx512f", "avx512_bf16"})  # bf16 is native: Launch needs no second click
    monkeypatch.setattr(runner, "ensure_queue", lambda *a, **k: False)  # no training: the runs stay queued
    at = app()
    at.selectbox(key="model").set_value("mlp")
    at.selectbox(key="precision").set_value("mixed_bfloat16").run()
    at.button(key="launch").click().run()
    assert "Queued comparison #1: up to 5 interleaved pairs" in texts(at.caption)
    # Issue 57: a small line under the progress lines and Stop, never a banner above them.
    order = _in_order(at.main)
    banner = next(i for i, e in enumerate(order) if "Queued comparison #1" in str(getattr(e, "value", "")))
    assert order.index(at.button(key="stop")) < banner and not at.success
    at.button(key="launch").click().run()  # the second click of a double click
    no_errors(at)
    assert len(cstore.list_all(store)) == 1
    runs = store.list_runs()
    assert len({r["group_id"] for r in runs}) == 1 and len(runs) == 10  # 5 pairs, queued once
    # the second click says which run holds the machine: the first comparison's first baseline
    assert texts(at.warning) == ("Run #1 (#1 baseline fp32) is queued: one run at a time keeps measurements "
                                 "clean. Wait for it to finish or press Stop.")


@pytest.mark.worker
def test_start_the_pairs_clicked_twice_runs_one_comparison(store, monkeypatch):
    import streamlit as st

    from tests.helpers.pages import app, no_errors, texts

    monkeypatch.setattr(st, "get_option", lambda name, _o=st.get_option: "localhost" if name == "server.address"
                        else _o(name))
    monkeypatch.setenv("PYTHONPATH", os.getcwd())
    at = app()
    at.text_input(key="pairs_baseline_cmd").set_value(f"{SIDE} --sec 2 --sleep 2")
    at.text_input(key="pairs_cmd").set_value(f"{SIDE} --sec 1 --sleep 2")
    at.number_input(key="pairs_n").set_value(1)
    go = [b for b in at.button if b.label == "Start the pairs"][0]
    go.click().run()
    job = background.read_json(store.path.parent / background.PAIRS_FILE)
    pid = job["pid"]
    assert background.alive(job)
    go = [b for b in at.button if b.label == "Start the pairs"][0]
    go.click().run()  # a moment later: the first is still running its baseline side
    no_errors(at)
    refused = texts(at.error)
    assert f"the two commands' pairs are running (process {pid}" in refused
    assert f"last: running; baseline: {SIDE} --sec 2 --sleep 2" in texts(at.text)
    job = background.read_json(store.path.parent / background.PAIRS_FILE)
    deadline = time.monotonic() + 120
    while background.alive(job) and time.monotonic() < deadline:
        time.sleep(0.2)
    from engine.store import comparisons as cstore

    assert [(c["id"], c["status"]) for c in cstore.list_all(store)] == [(1, "completed")]
    assert len(store.list_runs()) == 2  # one pair: its baseline and its run


def test_busy_loops_over_the_declared_jobs(store_home, monkeypatch):
    """One job class (background.Job): busy() knows a kind by its declaration alone, and names
    a job that owns the machine between its runs (before_runs) ahead of a run."""
    me = {"pid": os.getpid(), "pid_started": start_time(os.getpid()), "started": time.time() - 7}
    new = background.Job("sweep.json", "sweep", "sweep.log", lambda job: f"a sweep runs ({job['elapsed']:.0f} s)")
    monkeypatch.setattr(background, "JOBS", (*background.JOBS, new))
    assert background.busy() is None
    background.write_json(store_home / "sweep.json", {**me, "state": "running"})
    assert background.busy() == "a sweep runs (7 s)"
    assert background.busy(skip=("sweep.json",)) is None
    background.write_json(store_home / "sweep.json", {**me, "state": "done"})
    assert background.busy() is None
    # The autopilot is named before anything else that runs.
    background.write_json(background.AUTOPILOT.path(), {**me, "state": "running", "phase": "search"})
    background.write_json(store_home / "sweep.json", {**me, "state": "running"})
    assert background.busy().startswith("the autopilot is searching (7 s so far, phase search)")
