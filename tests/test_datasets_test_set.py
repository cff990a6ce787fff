"""The held-out test set (issue 40 item 3): a real run reports its accuracy on Split.x_test,
measured once after the clocks stop. The split itself: tests/test_meta_splits.py."""
import threading

import numpy as np
import pytest


@pytest.mark.tf
def test_a_digits_run_reports_its_test_accuracy_measured_after_the_clocks_stop(monkeypatch):
    from engine.config import RunConfig
    from engine.data import datasets
    from engine.training import train as train_mod
    from engine.training.timeline import Timeline

    cfg = RunConfig(model="cnn", epochs=2)
    tl = Timeline()
    seen = {}
    measure = train_mod.test_accuracy

    def spy(summary, *args):  # what the summary holds when the test evaluation begins
        seen["wall_sec"], seen["timeline"] = summary.wall_sec, [list(span) for span in summary.timeline]
        measure(summary, *args)

    monkeypatch.setattr(train_mod, "test_accuracy", spy)
    out = train_mod.train(cfg, lambda t, r: None, threading.Event(), timeline=tl)
    s = out.summary
    assert out.status == "completed", out.error
    # ceil(0.2 x 1797) = 360 held out of training: 360 // 2 = 180 test (the fixed draw), 180 validation.
    assert (s["test_samples"], s["test_split"], s["test_note"]) == (180, "split", None)
    # The same accuracy computed apart: the split loaded again, the returned model's predictions.
    split = datasets.load(cfg)
    assert len(split.y_test) == 180
    pred = np.asarray(out.model.predict(split.x_test, verbose=0)).argmax(-1)
    assert s["test_accuracy"] == pytest.approx(float((pred == split.y_test).mean()), abs=1e-9)
    assert 0.5 < s["test_accuracy"] <= 1.0  # 2 epochs of the cnn learn digits (chance: 0.1)
    # Outside the clocks: the evaluation changes neither the wall time nor the timeline, and the
    # wall time is still exactly its parts (setup + warm-up + training + validation + other).
    assert s["wall_sec"] == seen["wall_sec"]
    assert [list(span) for span in s["timeline"]] == seen["timeline"]
    parts = sum(s[k] for k in ("setup_sec", "warmup_sec", "train_sec", "validation_sec", "other_sec"))
    assert parts == pytest.approx(s["wall_sec"], abs=1e-6)
    assert isinstance(s["test_sec"], float)  # its own figure, beside the clocks
