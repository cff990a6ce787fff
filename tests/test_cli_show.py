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
    assert rows["time to 0.95 val acc"] == "not reached: cancelled before its first validation"


def test_compare_with_a_trial_stopped_before_its_first_validation(store, capsys):
    from engine.cli.main import main

    base = store.create_run(RunConfig(target_accuracy=0.95).to_json(), role="baseline", group_id="g", status="running")
    store.finish_run(base, "completed")
    rid = _stopped_trial(store)
    main(["compare", str(base), str(rid)])
    out = capsys.readouterr().out
    assert "-x" not in out
    assert "run not reached: cancelled before its first validation" in out
