"""engine.report.live_refresh: the live Train page redraws every second while a run
starts and every STEADY_REFRESH_S once it is past its warm-up."""
import pytest

from engine.config import RunConfig
from engine.report import live_refresh
from tests.helpers.pages import fake_run


def test_a_run_is_steady_once_it_records_a_steady_execution(store):
    queued = fake_run(store, RunConfig(epochs=2), status="queued")
    assert live_refresh.phase(store, [queued]) == "starting"  # nothing running yet
    assert live_refresh.phase(store, []) == "starting"
    rid = store.create_run(RunConfig(epochs=2).to_json(), role="run", group_id="g2", status="running")
    assert live_refresh.phase(store, [rid]) == "starting"  # the worker is starting: no execution
    # (idx, epoch, step, batches, t, duration, samples/s, loss, lr, warmup, data_wait)
    store.add_metrics(rid, [(0, 0, 1, 1, 2.0, 2.0, 64.0, 2.3, 0.01, 1, None)], [], [])
    assert live_refresh.phase(store, [rid]) == "starting"  # tracing / compiling
    store.add_metrics(rid, [(1, 0, 2, 1, 2.1, 0.1, 1280.0, 2.2, 0.01, 0, None)], [], [])
    assert live_refresh.phase(store, [rid]) == "steady"
    assert live_refresh.phase(store, [rid, queued]) == "steady"  # the queued one is not running
    assert live_refresh.refresh_s("steady") == live_refresh.STEADY_REFRESH_S == 3.0
    assert live_refresh.refresh_s("starting") == live_refresh.refresh_s(None) == 1.0


def test_a_second_running_run_still_in_warm_up_keeps_the_page_fast(store):
    a = store.create_run(RunConfig(epochs=2).to_json(), role="baseline", group_id="g3", status="running")
    b = store.create_run(RunConfig(epochs=2).to_json(), role="run", group_id="g3", status="running")
    store.add_metrics(a, [(0, 0, 1, 1, 2.0, 2.0, 64.0, 2.3, 0.01, 1, None),
                          (1, 0, 2, 1, 2.1, 0.1, 1280.0, 2.2, 0.01, 0, None)], [], [])
    store.add_metrics(b, [(0, 0, 1, 1, 2.0, 2.0, 64.0, 2.3, 0.01, 1, None)], [], [])
    assert live_refresh.phase(store, [a]) == "steady"
    assert live_refresh.phase(store, [a, b]) == "starting"


@pytest.mark.page
def test_the_live_page_of_a_steady_single_run_draws_its_charts(store):
    from tests.helpers.pages import app, no_errors, plotly_specs

    rid = fake_run(store, RunConfig(epochs=3), "baseline", status="running")
    assert live_refresh.phase(store, [rid]) == "steady"  # fake_run: a 1 s warm-up, then steady
    at = app()
    no_errors(at)
    assert {"throughput", "loss_t", "loss_step"} <= set(plotly_specs(at))
