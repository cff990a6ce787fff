"""Shared fixtures: every test gets its own store folder (SPEEDLAB_HOME).

Under pytest-xdist (scripts/test.sh runs `-n 3`), the hooks below start the
longest tests first, so that no worker is left alone with a 90-s test at the
end, and keep the tests that share a module-scoped fixture (one real search,
one matrix subprocess) on one worker, so that it runs once.
"""
import faulthandler
import gc
import importlib.abc
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Runs start cold and queues exit soon after their last run, as each test has its
# own store; tests of the warm spare worker switch it on themselves.
os.environ.setdefault("SPEEDLAB_WARM_WORKER", "0")
os.environ.setdefault("SPEEDLAB_QUEUE_IDLE_S", "1")
# The default store is per user ($XDG_DATA_HOME/speedlab, engine.store.db.home): no test, and no
# process a test starts, may write to the real one. A test without `store_home` (and a child
# that drops SPEEDLAB_HOME) lands in this session's own folder instead; the shell's
# SPEEDLAB_HOME is dropped for the same reason.
os.environ.pop("SPEEDLAB_HOME", None)
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="speedlab-tests-data-")

# Test lanes (docs/testing.md): the most expensive thing a test needs. A test has at most one
# lane marker, on itself or in its module's `pytestmark` (never both: `-m LANE` would select
# it twice); a test with none is `unit`. LANES is cheapest first; the seconds are rough (setup + call, 2 cores) and set when a
# slow test's stacks are taken (`_stacks_after`).
LANES = {"unit": 0.2, "page": 2.0, "tf": 5.0, "worker": 15.0, "browser": 40.0}
# Full-suite order under xdist: page tests first, so that they run before anything in their
# process has imported TensorFlow (their guard below checks it), then the long ones (browser,
# worker) so that no process is left alone with one at the end, then tf, then unit to fill gaps.
ORDER = ("page", "browser", "worker", "tf", "unit")
FRAMEWORKS = ("tensorflow", "keras", "jax", "jaxlib")


def lane(item) -> str:
    """The test's lane: its lane marker, else unit."""
    for mark in item.iter_markers():
        if mark.name in LANES:
            return mark.name
    return "unit"


# Test modules with a module-scoped fixture (one real search, one matrix subprocess, one
# Streamlit server and Chromium: tests/helpers/browser.py `stage`):
# under xdist each runs whole on one worker, so that its fixture runs once.
SHARED_MODULES = ("tests/test_app_browser.py", "tests/test_autopilot.py", "tests/test_bench.py", "tests/test_build.py",
                  "tests/test_command_pairs_scripts.py", "tests/test_presenter_browser.py",
                  "tests/test_presenter_fit.py", "tests/test_queue_runner.py", "tests/test_runs.py",
                  "tests/test_saved_models.py")


def _shared_fixture(item) -> str | None:
    """The first module-, package- or session-scoped fixture defined in tests/ that the test uses, or None."""
    for name in item.fixturenames:
        for fdef in item._fixtureinfo.name2fixturedefs.get(name, ()):
            if fdef.scope in ("module", "package", "session") and fdef.baseid.startswith("tests"):
                return f"{fdef.baseid}::{name}"
    return None


def _seconds(item) -> float:
    return LANES[lane(item)]


def pytest_collection_modifyitems(config, items):
    """Give every test its lane marker; under xdist, order the tests by lane (ORDER), a
    SHARED_MODULES module counted as one unit with the costliest lane of its tests, its tests
    kept together in file order."""
    for item in items:
        marked = [m.name for m in item.iter_markers() if m.name in LANES]
        if not marked:
            item.add_marker("unit")
        elif len(marked) > 1:
            item.stash[_UNSHARED] = (f"{item.nodeid} has the lane markers {marked}: give it one "
                                     "(on the test or in its module's pytestmark; docs/testing.md)")
    if not hasattr(config, "workerinput"):
        return  # a plain serial run keeps file order
    for item in items:
        shared = _shared_fixture(item)
        if shared and item.nodeid.split("::")[0] not in SHARED_MODULES:
            item.stash[_UNSHARED] = (f"{item.nodeid} uses the shared fixture {shared}: add its module to "
                                     "SHARED_MODULES in tests/conftest.py so that it runs on one worker")
    units: dict[str, int] = {}
    for item in items:
        unit = _unit(item.nodeid)
        units[unit] = min(units.get(unit, len(ORDER)), ORDER.index(lane(item)))
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda item: (units[_unit(item.nodeid)], _unit(item.nodeid) if _unit(item.nodeid) in SHARED_MODULES
                                 else "", order[id(item)]))


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
    """Load scheduling by the units above, in the workers' (sorted) collection order, mended
    where xdist hangs after a worker dies (tests/helpers/scheduling.py). (xdist's own --dist
    loadgroup does not group under pytest 9.2: its @group suffix no longer reaches the node ids.)"""
    if config.getvalue("dist") not in ("load", "loadgroup"):
        return None  # --dist each / loadfile / worksteal ...: xdist's own
    from tests.helpers.scheduling import scheduler

    return scheduler(config, log, _unit)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook, called in the controller
def pytest_testnodedown(node, error):
    """A worker that died: how it ended, in the log beside xdist's "Not properly terminated"."""
    if error:
        from tests.helpers.scheduling import death_line

        sys.stderr.write(death_line(node) + "\n")


# A test still running after twice its lane's seconds, and at least STACKS_AFTER_S, gets every
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
    clock then showed one generation-2 collection of 37.5 s (2026-12-02), 18-49 s later. The
    cause: an earlier test's TensorFlow garbage destroyed there (`garbage_collected_after`)."""

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
    # unfreeze handed it back. Tests run train() unfrozen (test_recorder switches it back
    # on to test it). The 18-49 s generation-2 collections that now and then stalled a test
    # were first blamed on that; they were earlier tests' TF garbage (`garbage_collected_after`).
    # Page tests run in processes without TF (docs/testing.md, "Page tests and TensorFlow").
    import engine.training.train as train_module

    train_module.FREEZE_HEAP = False
    if not hasattr(config, "workerinput"):  # the controller: xdist's workers inherit its mark
        from tests.helpers import session_guard

        session_guard.start()
    else:
        for s in _STRAY_SIGNALS:
            signal.signal(s, _stray_signal)
    _BASELINE.update({s: signal.getsignal(s) for s in _STOP_SIGNALS})


def pytest_unconfigure(config):
    """The controller kills what the session left: a worker that died mid-test never ran the
    teardown that would have stopped its servers, queues and browsers."""
    if hasattr(config, "workerinput"):
        return
    from tests.helpers import session_guard

    left = session_guard.reap()
    if left:
        sys.stderr.write(f"killed {len(left)} process(es) the tests left behind: {left}\n")


class _LaneGuard(importlib.abc.MetaPathFinder):
    """While a unit or page test runs: importing a framework fails, naming the lane to mark."""

    test: str | None = None

    def find_spec(self, name, path, target=None):
        if self.test and name.split(".")[0] in FRAMEWORKS:
            raise ImportError(f"{self.test} imports {name} in the test process: a unit or page test must not "
                              "(mark it tf, or for a page test seed its data without TF; docs/testing.md)")
        return None


_GUARD = _LaneGuard()
sys.meta_path.insert(0, _GUARD)


@pytest.fixture(autouse=True)
def lane_guard(request, monkeypatch):
    """unit: no framework import, no process; page: the same, and no framework already loaded
    in this process (the GC stall of a page test in a process holding TF's heap)."""
    which = lane(request.node)
    if which not in ("unit", "page"):
        yield
        return
    nodeid = request.node.nodeid
    if which == "page":
        loaded = [m for m in FRAMEWORKS if m in sys.modules]
        assert not loaded, (f"{nodeid} is a page test but this process has already imported {loaded}: run page "
                            "tests before tf tests (tests/conftest.py ORDER) or in a process of their own")

    def no_process(self, *args, **kwargs):
        raise RuntimeError(f"{nodeid} starts a process: a {which} test must not (mark it worker; docs/testing.md)")

    monkeypatch.setattr(subprocess.Popen, "__init__", no_process)
    _GUARD.test = nodeid
    try:
        yield
    finally:
        _GUARD.test = None


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# xdist never sends its workers either (it ends them over their channel, then SIGKILL): one
# that arrives was sent by something a test ran, which took this process for one it may stop
# (a stored owner or job pid, say). By default it would end the worker without a word ("node
# down: Not properly terminated", CI 2026-12-06, twice); here the test goes on and the session
# says so (`signal_state_restored`).
_STRAY_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_STRAY: list[str] = []
# This test process's own handlers of _STOP_SIGNALS (pytest_configure): every test starts and
# ends with them, whatever a test, a fixture of a wider scope or code it ran installed.
_BASELINE: dict = {}
# signal.signal itself, as imported: a test that monkeypatches it away (to keep an in-process
# command from installing handlers) still has it patched when this fixture puts handlers back
# (monkeypatch is undone after it), and its first command's handlers then outlived it.
_SET_HANDLER = signal.signal


def _stray_signal(signum, frame) -> None:
    where = "".join(traceback.format_stack(frame)[-6:]) if frame else "(no frame)\n"
    _STRAY.append(f"{signal.Signals(signum).name}, received at:\n{where}")
    sys.stderr.write(f"this test process (pid {os.getpid()}) got {_STRAY[-1]}")


@pytest.fixture(autouse=True)
def signal_state_restored(request):
    """A command run in-process (engine.cli.main.main) installs its SIGINT, SIGTERM and SIGHUP
    handlers, or ignores the three after a first Ctrl-C, and records the signal it got: none of
    it may outlive the test in this test process (a later test's SIGINT would be ignored, a
    stray SIGTERM raise KeyboardInterrupt). Every test starts and ends with the process's own
    handlers (`_BASELINE`); one that starts with another handler, left by a module fixture or
    by what ran between two tests, says so as a warning. A stray SIGTERM or SIGHUP the test got
    (`_stray_signal`) is said as a warning too."""
    baseline = _BASELINE or {s: signal.getsignal(s) for s in _STOP_SIGNALS}
    left = {s: h for s in _STOP_SIGNALS if (h := signal.getsignal(s)) is not baseline[s]}
    for s in left:
        _SET_HANDLER(s, baseline[s])
    if left:
        warnings.warn(f"{request.node.nodeid} started with stop-signal handlers this test process does not set: "
                      + ", ".join(f"{signal.Signals(s).name}: {getattr(h, '__qualname__', h)}" for s, h in left.items())
                      + " (left by a module fixture or by what ran before; put back)", pytest.PytestWarning)
    yield
    for s, handler in baseline.items():
        if signal.getsignal(s) is not handler:
            _SET_HANDLER(s, handler)
    while _STRAY:
        warnings.warn(f"{request.node.nodeid}: this test process (pid {os.getpid()}) got {_STRAY.pop(0)}"
                      "xdist sends its workers no such signal: something the test ran took this process "
                      "for one it may stop; the test went on", pytest.PytestWarning)
    if "engine.base.process" in sys.modules:
        sys.modules["engine.base.process"].RECEIVED["signal"] = None
    if "engine.cli.follow" in sys.modules:
        sys.modules["engine.cli.follow"].INTERRUPTED["by_user"] = False


@pytest.fixture(autouse=True)
def garbage_collected_after():
    """In a test process holding TensorFlow or JAX, a test's cyclic garbage is collected at its
    own end, and what is left is frozen (gc.freeze) so that the next collection walks only what
    later tests make. Left to Python, a later test's generation-2 collection destroyed it, and
    both kinds of TF garbage then waited: a tf.data iterator for its autotune thread's period,
    which doubles up to 60 s while the iterator lives (29-41 s stalls, and 37 s of 40 s
    reproduced), and a concrete function for that later test's running step (18 s). At the end
    of its test an iterator is young and nothing runs. (A 900,000-object heap also took 1-2 s
    per collection.)"""
    yield
    if "tensorflow" in sys.modules or "jax" in sys.modules:
        gc.collect()
        gc.freeze()


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
def fake_cpu(monkeypatch):
    """Make this process's live CPU the one a test names: `fake_cpu({"avx512_bf16"})` (a Zen 4
    or a Xeon with AMX) or `fake_cpu({"avx2", "fma"})` (a Zen 3, no native bf16). CI's CPU
    changes from day to day (docs/testing.md), so a test that depends on the live CPU's flags
    fakes them. This process's machine fingerprint follows the faked flags (a new id).
    In-process only: a worker or `python -m engine` child reads the real CPU."""
    from engine.hardware import fingerprint, machine

    def fake(flags):
        monkeypatch.setattr(machine, "cpu_flags", lambda: set(flags))
        machine.quick_facts.cache_clear()
        fingerprint.fingerprint.cache_clear()  # its flags (and so its id) are the faked ones

    yield fake
    machine.quick_facts.cache_clear()
    fingerprint.fingerprint.cache_clear()


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
