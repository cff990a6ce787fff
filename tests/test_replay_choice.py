"""What Replay opens on (issue 43 item 3): the newest ended comparison's last complete pair,
never runs that did not start; the shipped recording plays with one click at any time."""
from engine.report import replay


def _run(i, status="completed", started=100.0, role="run", group="g"):
    return {"id": i, "status": status, "started": started, "role": role, "group_id": group, "baseline_id": None}


def test_the_newest_ended_comparisons_last_complete_pair_is_chosen():
    runs = [_run(i) for i in range(1, 9)] + [_run(9, "cancelled", None), _run(10, "cancelled", None)]
    comps = [  # newest first
        {"status": "running", "plan": [{"baseline_id": 7, "run_id": 8}]},
        {"status": "stopped", "plan": [{"baseline_id": 3, "run_id": 4}, {"baseline_id": 6, "run_id": 5},
                                       {"baseline_id": 9, "run_id": 10}]},   # its last pair never started
        {"status": "completed", "plan": [{"baseline_id": 1, "run_id": 2}]},
    ]
    assert replay.comparison_pair(comps, runs) == (6, 5)
    assert replay.comparison_pair(comps[:1], runs) is None                      # still measuring
    from engine.store import started  # the one rule of pages, replay and compare()

    assert not started(runs[-1]) and started(runs[0])


def test_the_recording_plays_with_one_click_imported_or_not(store):
    from engine.jobs import recorded_demo

    b, r = recorded_demo.open_recorded(store)            # imports it
    n = len(store.list_runs())
    assert store.get_run(b)["role"] == "baseline" and store.get_run(r)["role"] == "run"
    assert recorded_demo.open_recorded(store) == (b, r)  # a second click finds it: nothing imported twice
    assert len(store.list_runs()) == n


def test_every_path_to_a_shipped_recording_in_the_docs_is_a_file_that_ships():
    # benchmarks/results/2026-12-04-mnist5k-5-pairs.md named mnist5k-baseline-vs-tuned.zip, a file
    # that never shipped (the recording is the preset's: mnist5k-baseline-vs-preset.zip).
    import re
    from pathlib import Path

    from engine.jobs import recorded_demo

    root = Path(__file__).resolve().parents[1]
    texts = [root / "README.md", *(root / "docs").glob("*.md"), *(root / "benchmarks").rglob("*.md"),
             *(root / "engine").rglob("*.py")]
    named = {(str(p.relative_to(root)), m) for p in texts
             for m in re.findall(r"engine/jobs/recorded/[\w.-]+\.zip", p.read_text(errors="replace"))}
    assert ("docs/datasets.md", "engine/jobs/recorded/mnist5k-baseline-vs-preset.zip") in named
    assert sorted(n for n in named if not (root / n[1]).is_file()) == []
    assert recorded_demo.RECORDED_BUNDLE.is_file()
