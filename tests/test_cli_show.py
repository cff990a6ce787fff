"""`engine show` and `engine compare` on runs that ended early: a trial the autopilot
stopped in its warm-up (no plan, no validation yet) reads as such, not as 'None'
fields, 'not reached in 0 epochs' or two different error lines."""
from __future__ import annotations

from engine.config import RunConfig


def _stopped_trial(store) -> int:
    cfg = RunConfig(precision="mixed_bfloat16", target_accuracy=0.95, stop_at_target=True)
    rid = store.create_run(cfg.to_json(), role="trial", group_id="autopilot-abc123-t4", status="running")
    store.update_run(rid, summary={"error": "cancelled by the user", "wall_sec": 9.1})
    store.finish_run(rid, "cancelled", "autopilot: pruned at 2.60 s of training: slower than the best time so "
                                       "far (2.33 s)")
    return rid


def test_show_a_trial_stopped_before_its_first_validation(store, capsys):
    from engine.cli.main import main

    rid = _stopped_trial(store)
    assert main(["show", str(rid)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[1] == "why it ended: autopilot: pruned at 2.60 s of training: slower than the best time so far (2.33 s)"
    assert "cancelled by the user" not in out and "error" not in out
    rows = {line[:20].strip(): line[22:] for line in lines if line[20:22] == "  "}
    assert rows["replicas"] == "-"
    assert rows["precision"] == "mixed_bfloat16"
    assert rows["time to 0.95 val acc"] == "not reached: stopped before its first validation"


def test_compare_with_a_trial_stopped_before_its_first_validation(store, capsys):
    from engine.cli.main import main

    base = store.create_run(RunConfig(target_accuracy=0.95).to_json(), role="baseline", group_id="g", status="running")
    store.finish_run(base, "completed")
    rid = _stopped_trial(store)
    main(["compare", str(base), str(rid)])
    out = capsys.readouterr().out
    assert "-x" not in out
    assert "run not reached: stopped before its first validation" in out


def test_no_end_to_end_ratio_with_a_run_that_ended_in_its_warm_up(store, capsys):
    from engine.cli.main import main
    from engine.report.pair import compare

    base = store.create_run(RunConfig(target_accuracy=0.95).to_json(), role="baseline", group_id="g", status="running")
    # (idx, epoch, step, batches, t, duration, samples/s, loss, lr, warmup): one warm-up, two steady executions
    store.add_metrics(base, executions=[(0, 0, 1, 1, 0.50, 0.50, 256.0, 2.3, 1e-3, 1),
                                        (1, 0, 2, 1, 0.52, 0.02, 6400.0, 2.0, 1e-3, 0),
                                        (2, 0, 3, 1, 0.54, 0.02, 6400.0, 1.8, 1e-3, 0)])
    store.finish_run(base, "completed")
    rid = _stopped_trial(store)
    store.add_metrics(rid, executions=[(0, 0, 1, 1, 0.60, 0.60, 213.0, 2.3, 1e-3, 1)])
    got = compare(store, base, rid)
    # Before: 213 x 0.6 / 0.6 = 213 samples/s against (128 + 256) / 0.54 = 711: "0.30x end-to-end".
    assert got["end_to_end_speedup"] is None
    assert f"run #{rid} ended in its warm-up (1 execution, all warm-up): no end-to-end ratio" in got["caveats"]
    # Both finished runs with steady executions: the ratio is there and no such line.
    assert compare(store, base, base)["end_to_end_speedup"] == 1.0
    assert not any("warm-up" in c for c in compare(store, base, base)["caveats"])
    main(["compare", str(base), str(rid)])
    assert "ended in its warm-up" in capsys.readouterr().out


def test_summary_labels_stay_in_one_column(capsys):
    from engine.cli.printing import print_summary

    print_summary({"run_id": 7, "status": "completed", "end_to_end_samples_per_sec": 1234.5, "target_accuracy": 0.995,
                   "time_to_target_sec": 1.5, "epochs_run": 3})
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    # "time to 0.995 val acc" (21 characters) sets the width: every value starts in one column.
    assert " end-to-end samples/s  1,234 (training samples / wall time of training)" in lines
    assert "time to 0.995 val acc  1.50 s from the start of training" in lines
    assert {len(ln) - len(ln[21:].lstrip(" ")) for ln in lines} == {23}
