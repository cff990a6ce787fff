"""engine.report.live: the live page's incremental reader and what it keeps per run."""
from engine.config import RunConfig
from engine.report.progress import live_summary, progress
from engine.report.live import LiveMetrics, StoreMetrics


def _rows(start, n, duration):
    # (idx, epoch, step, batches, t, duration, samples_per_sec, loss, lr, warmup, data_wait)
    return [(i, 0, i + 1, 1, (i + 1) * duration, duration, 128 / duration, 1.0, 1e-3, int(i == 0), 0.0)
            for i in range(start, start + n)]


def test_new_rows_are_read_and_derived_figures_follow_them(store):
    rid = store.create_run(RunConfig(batch_size=128).to_json(), status="running")
    # Warm-up 1 s, then three executions of 0.5 s: 256 samples/s each.
    store.add_metrics(rid, executions=[(0, 0, 1, 1, 1.0, 1.0, 128.0, 1.0, 1e-3, 1, 0.0)] + _rows(1, 3, 0.5))
    live = LiveMetrics().use(store)
    run = store.get_run(rid)
    first = live.executions(run)
    assert len(first) == 4
    assert live_summary(store, run, first, [], live)["samples_per_sec"] == 256.0
    # Nothing new: the same frame, and the kept steady state is handed back.
    assert live.executions(run) is first
    calls = []
    assert live.memo(run, first, "steady_state", lambda: calls.append(1)) is not None and calls == []
    # Two executions of 0.25 s (512 samples/s) arrive: the median of 256, 256, 256, 512, 512 is 256;
    # one more makes it (256 + 512) / 2 = 384: recomputed from the new rows, not the kept value.
    store.add_metrics(rid, executions=_rows(4, 2, 0.25))
    second = live.executions(run)
    assert len(second) == 6 and second is not first
    assert live_summary(store, run, second, [], live)["samples_per_sec"] == 256.0
    store.add_metrics(rid, executions=_rows(6, 1, 0.25))
    third = live.executions(run)
    assert live_summary(store, run, third, [], live)["samples_per_sec"] == 384.0
    # The same figures as reading everything from the store.
    assert live_summary(store, run, third, [], live) == live_summary(store, run)
    assert progress(store, rid, source=live)["samples_per_sec"] == progress(store, rid)["samples_per_sec"] == 384.0


def test_memo_is_only_for_the_frame_the_reader_returned(store):
    rid = store.create_run(RunConfig().to_json(), status="running")
    store.add_metrics(rid, executions=_rows(0, 5, 0.5))
    live = LiveMetrics().use(store)
    run = store.get_run(rid)
    execs = live.executions(run)
    assert live.memo(run, execs, "n", lambda: len(execs)) == 5
    part = execs.iloc[:2]
    assert live.memo(run, part, "n", lambda: len(part)) == 2  # another frame: computed, not the kept 5
    assert live.memo(run, execs, "n", lambda: -1) == 5
    # The plain reader keeps nothing.
    plain = StoreMetrics(store)
    assert plain.memo(run, execs, "n", lambda: 7) == 7
    # Runs no longer shown are dropped with what was kept for them.
    live.keep([])
    assert live.memo(run, live.executions(run), "n", lambda: 9) == 9
