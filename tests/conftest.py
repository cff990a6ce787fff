"""Shared fixtures: every test gets its own store folder (SPEEDLAB_HOME).

Under pytest-xdist (scripts/test.sh runs `-n 2`), the hooks below start the
longest tests first, so that no worker is left alone with a 90-s test at the
end, and keep the tests that share a module-scoped fixture (one real search,
one matrix subprocess) on one worker, so that it runs once.
"""
import faulthandler
import gc
import os
import sys
import tempfile
import time
import warnings

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Runs start cold and queues exit soon after their last run, as each test has its
# own store; tests of the warm spare worker switch it on themselves.
os.environ.setdefault("SPEEDLAB_WARM_WORKER", "0")
os.environ.setdefault("SPEEDLAB_QUEUE_IDLE_S", "1")

# Rough seconds (setup + call) on a 2-core machine, from `pytest --durations`: they order the
# tests (longest first) and set when a test's stacks are taken (`_stacks_after`). A test not
# listed counts as 1 s.
SLOW = {
    "test_talk_browser.py::test_no_chart_text_is_cut_off_on_any_page_at_projector_sizes": 90,
    "test_autopilot.py::test_search_ends_within_its_budget_and_stores_every_trial_with_its_reason": 100,
    "test_jax.py::test_all_24_combinations_train_two_steps_on_jax": 80,
    "test_composition.py::test_all_24_combinations_train_two_steps": 60,
    "test_browser.py::test_launch_watch_and_review_in_chromium": 55,
    "test_autopilot_browser.py::test_start_a_search_and_watch_the_trials_chart_grow": 35,
    "test_browser.py::test_jax_run_with_a_tensorflow_baseline_shows_the_backend_speedup": 31,
    "test_transfer.py::test_backbone_trains_saves_and_loads": 30,
    "test_multiworker.py::test_two_workers_match_one_process": 40,
    "test_transfer.py::test_demo_through_the_cli": 25,
    "test_talk_browser.py::test_replay_at_10x_draws_over_time_and_ends_with_the_stored_numbers": 23,
    "test_pages.py::test_real_run_launched_from_the_train_page": 22,
    "test_runs.py::test_baseline_launch_reuse_and_compare": 20,
    "test_store_lock.py::test_run_keeps_every_row_through_a_long_lock": 18,
    "test_runs.py::test_cli_digits_run_reaches_095_and_prints_json": 18,
    "test_warm_worker.py::test_a_warm_spare_runs_the_next_run_and_is_replaced_after_it": 17,
    "test_jax.py::test_jax_worker_never_imports_tensorflow_and_matches_tensorflow_accuracy": 25,
    "test_runs.py::test_two_simulated_replicas_then_one_back_to_back": 17,
    "test_browser.py::test_hardware_page_with_a_finished_benchmark_in_chromium": 16,
    "test_transfer.py::test_finetune_takes_weights_over_freezes_then_unfreezes_and_keeps_batchnorm": 15,
    "test_pages.py::test_pages_never_import_tensorflow": 14,
    "test_pages.py::test_lr_finder_runs_in_the_background": 13,
    "test_timeline.py::test_a_target_never_reached_is_said_not_numbered": 13,
    "test_pages.py::test_after_launch_the_previous_speedup_is_gone": 13,
    "test_bundle.py::test_real_run_exported_and_imported_into_a_second_home_keeps_metrics_and_provenance": 12,
    "test_talk_browser.py::test_presenter_mode_at_1280x720_shows_the_headline_and_both_charts_above_the_fold": 12,
    "test_multiworker.py::test_engine_worker_cli_two_processes": 18,
    "test_saved_models.py::test_a_backbone_model_loads_elsewhere": 11,
    "test_multiworker.py::test_killed_worker_fails_the_run_quickly_and_leaves_no_process": 20,
    "test_usable_cpus.py::test_the_stored_environment_and_threads_follow_the_usable_cpus": 8,
    "test_bench.py::test_tiny_real_matrix_one_row_per_cell_and_baseline_exactly_one": 8,
    "test_bench.py::test_background_benchmark_writes_progress_and_refuses_a_second": 13,
    "test_replay.py::test_play_and_restart_buttons_write_the_clock": 8,
    "test_saved_models.py::test_a_trained_one_cycle_cnn_loads_elsewhere": 8,
    "test_multiworker.py::test_cancel_multi_worker_run_ends_all_workers": 8,
    "test_lr_find.py::test_real_sweep_on_random_labels_offers_no_max_lr": 7,
    "test_warm_worker.py::test_stop_during_an_epoch_ends_cancelled_with_the_executions_before_it": 7,
    "test_lr_find.py::test_real_sweep_via_cli_json": 7,
    "test_bench.py::test_repeats_refit_each_cells_compiled_model": 12,
    "test_replica_input.py::test_two_simulated_replicas_fit_on_per_replica_pipelines": 10,
    "test_files_ports.py::test_the_worker_names_a_weights_file_that_breaks_after_the_check": 9,
    "test_runs.py::test_second_launch_is_refused_and_cancel_keeps_partial_metrics": 9,
    "test_runs.py::test_mixed_float16_records_loss_scale": 8,
    "test_runs.py::test_recorded_learning_rate_follows_the_schedule": 8,
    "test_fused_optimizer.py::test_fused_under_mirrored_strategy_updates_every_replica": 8,
    "test_timeline.py::test_epoch_end_sleep_is_other_and_lowers_end_to_end_but_not_steady": 6,
}


# Test modules with a module-scoped fixture (one real search, one matrix subprocess):
# under xdist each runs whole on one worker, so that its fixture runs once.
SHARED_MODULES = ("tests/test_autopilot.py", "tests/test_composition.py", "tests/test_jax.py")


def _shared_fixture(item) -> str | None:
    """The first module-, package- or session-scoped fixture defined in tests/ that the test uses, or None."""
    for name in item.fixturenames:
        for fdef in item._fixtureinfo.name2fixturedefs.get(name, ()):
            if fdef.scope in ("module", "package", "session") and fdef.baseid.startswith("tests"):
                return f"{fdef.baseid}::{name}"
    return None


def _seconds(item) -> float:
    return SLOW.get(item.nodeid.split("/", 1)[-1], 1.0)


def pytest_collection_modifyitems(config, items):
    """Under xdist: longest first, a SHARED_MODULES module counted as one unit
    (the sum of its tests), its tests kept together in file order."""
    if not hasattr(config, "workerinput"):
        return  # a plain serial run keeps file order
    for item in items:
        shared = _shared_fixture(item)
        if shared and item.nodeid.split("::")[0] not in SHARED_MODULES:
            item.stash[_UNSHARED] = (f"{item.nodeid} uses the shared fixture {shared}: add its module to "
                                     "SHARED_MODULES in tests/conftest.py so that it runs on one worker")
    units: dict[str, float] = {}
    for item in items:
        unit = _unit(item.nodeid)
        units[unit] = units.get(unit, 0.0) + _seconds(item)
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda item: (-units[_unit(item.nodeid)], _unit(item.nodeid), order[id(item)]))


_UNSHARED = pytest.StashKey[str]()


def pytest_runtest_setup(item):
    if _UNSHARED in item.stash:
        pytest.fail(item.stash[_UNSHARED], pytrace=False)


def _unit(nodeid: str) -> str:
    """What xdist hands to one worker at once: a SHARED_MODULES module, else the test."""
    path = nodeid.split("::")[0]
    return path if path in SHARED_MODULES else nodeid


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook; without xdist it is never called
def pytest_xdist_make_scheduler(config, log):
    """Load scheduling by the units above, in the workers' (sorted) collection order.
    (xdist's own --dist loadgroup does not group under pytest 9.2: its @group
    suffix no longer reaches the node ids.)"""
    if config.getvalue("dist") not in ("load", "loadgroup"):
        return None  # --dist each / loadfile / worksteal ...: xdist's own
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    config.option.loadscopereorder = False
    return Units(config, log)


# A test still running after twice its SLOW seconds, and at least STACKS_AFTER_S, gets every
# thread's stack taken: a failing test shows them in its report, a passing one as a warning in
# the summary (a test that crawls on CI then says where it spent its time; the Train page's
# AppTest, 1 s alone, took 57-65 s in 2 of 5 full runs here). SPEEDLAB_TEST_STACKS_AFTER_S
# sets one time for every test.
STACKS_AFTER_S = 20.0
_STACKS_ENV = os.environ.get("SPEEDLAB_TEST_STACKS_AFTER_S")


def _stacks_after(item) -> float:
    return float(_STACKS_ENV) if _STACKS_ENV else max(STACKS_AFTER_S, 2 * _seconds(item))


# Frames of the test runner itself, left out of the warning.
_RUNNER_FRAMES = ("/_pytest/", "/pluggy/", "/xdist/", "/execnet/", "<frozen runpy>")


class _GcClock:
    """Seconds spent in Python's cyclic garbage collector during the current test: a stalled
    page test's script thread was caught in pure-Python work (ast.parse, copy.deepcopy); this
    clock then showed one generation-2 collection of 37.5 s (2026-12-02); 18 and 39.6 s later,
    cause still open (see `pytest_configure`)."""

    def __init__(self):
        self.t0, self.count, self.total, self.longest = None, 0, 0.0, (0.0, None)

    def __call__(self, phase, info):
        if phase == "start":
            self.t0 = time.perf_counter()
        elif self.t0 is not None:
            d = time.perf_counter() - self.t0
            self.count, self.total = self.count + 1, self.total + d
            if d > self.longest[0]:
                self.longest = (d, info.get("generation"))

    def line(self) -> str:
        return (f"gc during the test: {self.count} collections, {self.total:.2f} s in all, longest "
                f"{self.longest[0]:.2f} s (generation {self.longest[1]})")


def pytest_configure(config):
    # train() freezes the heap before fit (gc.freeze: right for a worker, which exits after its
    # run). A test process runs many, and each froze its own and all earlier garbage until some
    # unfreeze handed it back. Tests run train() unfrozen (test_instrumentation switches it back
    # on to test it). The 18-41 s generation-2 collections that now and then stall a page test
    # were first blamed on that; they still occur, cause open (README, "The test suite").
    import engine.training.train as train_module

    train_module.FREEZE_HEAP = False


@pytest.fixture(autouse=True)
def stacks_if_slow(request):
    after = _stacks_after(request.node)
    clock = _GcClock()
    gc.callbacks.append(clock)
    try:
        yield from _stacks(request, after, clock)
    finally:
        gc.callbacks.remove(clock)


def _stacks(request, after, clock):
    with tempfile.TemporaryFile("w+") as f:
        faulthandler.dump_traceback_later(after, file=f)
        try:
            yield
        finally:
            faulthandler.cancel_dump_traceback_later()
            f.seek(0)
            stacks = "\n".join(line for line in f.read().splitlines()
                               if not any(s in line for s in _RUNNER_FRAMES))
        if stacks:
            stacks += "\n" + clock.line()
            sys.stderr.write(stacks + "\n")  # in the captured stderr of a failing test
            warnings.warn(f"{request.node.nodeid} was still running after {after:.0f} s; "
                          f"its threads then:\n{stacks}", pytest.PytestWarning)


@pytest.fixture
def store_home(tmp_path, monkeypatch):
    """A fresh SPEEDLAB_HOME for the test; the store lives at tmp_path/runs.sqlite."""
    monkeypatch.setenv("SPEEDLAB_HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def store(store_home):
    from engine.store import Store

    s = Store()
    yield s
    s.close()


# Long enough to cancel or kill mid-run: 400 epochs of 4 steps on 64 synthetic 8x8 images.
LONG_RUN = dict(dataset="synthetic", synthetic_shape=(8, 8, 1), synthetic_samples=80, model="mlp",
                batch_size=16, epochs=400, validation_fraction=0.2)


@pytest.fixture
def start_long_run(store_home):
    """Submit a long run (extra RunConfig fields as keywords) and return
    (run_id, store) once it has written `n` executions (default 5)."""
    from engine.jobs import runner
    from engine.config import RunConfig
    from engine.store import Store

    def start(n=5, timeout=120, **fields):
        (rid,) = runner.submit([RunConfig(**{**LONG_RUN, **fields})])
        st = Store()
        t0 = time.monotonic()
        while len(st.metrics("executions", rid)) < n:
            assert time.monotonic() - t0 < timeout, f"run {rid} wrote fewer than {n} executions"
            time.sleep(0.2)
        return rid, st

    return start
