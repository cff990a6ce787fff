"""engine.jobs.launch: the one launch decision the Train page and `python -m engine run` share.

The queue process is not started (`ensure_queue` is a no-op here): what is checked is what
gets queued, with which roles, group and settings, and what is refused."""
import pytest

from engine.base.errors import ConfigError
from engine.config import RunConfig, baseline_config
from engine.jobs import runner
from engine.jobs.launch import Busy, launch
from engine.store import comparisons as cstore

pytestmark = pytest.mark.unit  # lane: docs/testing.md (a store on disk, no TF, no process)

FAST = RunConfig(precision="mixed_bfloat16", steps_per_execution=4)  # not its own baseline


@pytest.fixture(autouse=True)
def bf16_cpu(fake_cpu):
    """FAST trains in bf16: a CPU with native bf16, so that launch() does not ask to allow it
    (tests/test_fingerprint_launch.py covers a CPU without)."""
    fake_cpu({"avx2", "fma", "avx512f", "avx512_bf16"})


@pytest.fixture
def no_queue(store_home, monkeypatch):
    monkeypatch.setattr(runner, "ensure_queue", lambda *a, **k: False)
    return store_home


def _end_all(store):
    """Play the queue: every queued run completes on this machine (its fingerprint, as the worker
    stores it), so the machine is free again."""
    import os

    from engine.hardware.fingerprint import short

    for r in store.list_runs(("queued",)):
        store.update_run(r["id"], environment={"hostname": os.uname().nodename, "fingerprint": short()})
        store.finish_run(r["id"], "completed")


def _roles(store):
    return [(r["role"], RunConfig.from_dict(r["config"])) for r in sorted(store.list_runs(("queued",)),
                                                                         key=lambda r: r["id"])]


def test_no_baseline_queues_the_run_alone(no_queue, store):
    done = launch(FAST)
    assert (done.what, done.baseline_id, done.comparison_id) == ("run", None, None)
    assert [(role, cfg) for role, cfg in _roles(store)] == [("run", FAST)]


def test_a_baseline_queues_interleaved_pairs_that_stop_at_the_target(no_queue, store):
    done = launch(FAST, baseline="default", pairs=3, budget_s=900.0)
    assert (done.what, done.kind) == ("comparison", "ab")
    comp = cstore.get(store, done.comparison_id)
    assert comp["settings"]["pairs"] == 3 and comp["settings"]["budget_s"] == 900.0
    assert [p["order"] for p in comp["plan"]] == ["AB", "BA", "AB"]
    assert done.config.stop_at_target and done.config.replace(stop_at_target=FAST.stop_at_target) == FAST
    # 3 pairs: 6 runs, the first pair's baseline first, every run of the comparison's group.
    roles = [r["role"] for r in sorted(store.list_runs(("queued",)), key=lambda r: r["id"])]
    assert roles == ["baseline", "run", "run", "baseline", "baseline", "run"]


def test_a_configuration_that_is_its_own_baseline(no_queue, store):
    own = baseline_config(FAST)
    done = launch(own, baseline="default", own_baseline="run")  # the Train page: run it once
    assert (done.what, done.run_id == done.baseline_id, done.reused) == ("pair", True, False)
    _end_all(store)
    done = launch(own, baseline="default", own_baseline="aa", pairs=2)  # the CLI: against itself
    assert (done.what, done.kind) == ("comparison", "aa")


def test_reuse_runs_one_pair_against_the_stored_baseline(no_queue, store):
    first = launch(FAST, baseline="default", reuse=True)  # nothing stored yet: baseline, then run
    assert (first.what, first.reused) == ("pair", False) and first.baseline_id != first.run_id
    _end_all(store)
    again = launch(FAST, baseline="default", reuse=True)
    assert (again.what, again.reused, again.baseline_id) == ("pair", True, first.baseline_id)


def test_busy_and_bad_settings_are_one_line_and_queue_nothing(no_queue, store):
    launch(FAST)
    with pytest.raises(Busy, match=r"^run #1 is queued: wait for it to end") as busy:
        launch(FAST, baseline="default")
    assert busy.value.run["id"] == 1  # the page names it with its label
    assert len(store.list_runs()) == 1
    _end_all(store)
    with pytest.raises(ConfigError, match="reuse_baseline"):
        launch(FAST, baseline="tuned", reuse=True)
    with pytest.raises(ConfigError, match="baseline"):  # no tuned baseline stored for digits/cnn
        launch(FAST, baseline="tuned")
    with pytest.raises(ConfigError, match="baseline"):
        launch(FAST, baseline="fastest")
    assert len(store.list_runs()) == 1
