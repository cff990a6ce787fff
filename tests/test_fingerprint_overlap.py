"""Runs that trained at the same time on one machine (engine.hardware.fingerprint.overlap) are
flagged wherever two of them are compared: `engine compare`, a stored comparison's headline (the
pairs of two scripts included) and the Runs page's speedup bars."""
from __future__ import annotations

import json

import pytest

from engine.config import RunConfig
from engine.hardware.fingerprint import overlap
from tests.helpers.pages import app, fake_run, no_errors, texts

ZEN4 = {"id": "abcdef012345", "name": "AMD EPYC Zen 4, AVX-512+bf16, 2 cores"}
ZEN3 = {"id": "0123456789ab", "name": "AMD EPYC Zen 3, AVX2+FMA, no bf16, 2 cores"}


def _row(rid, started, ended, fp=ZEN4):
    return {"id": rid, "started": started, "ended": ended,
            "environment": {"hostname": "vm", **({"fingerprint": fp} if fp else {})}}


def _line(n: int) -> str:
    return f"these runs overlapped for {n} s on this machine: their times are not independent"


def test_overlap_is_the_shared_seconds_on_one_machine_and_nothing_else():
    # 100-160 and 130-200 share 130-160: 30 s, either order
    assert overlap(_row(1, 100.0, 160.0), _row(2, 130.0, 200.0)) == _line(30)
    assert overlap(_row(2, 130.0, 200.0), _row(1, 100.0, 160.0)) == _line(30)
    # one inside the other: the inner run's whole 3,600 s
    assert overlap(_row(1, 0.0, 10_000.0), _row(2, 1_000.0, 4_600.0)) == _line("3,600")
    # still running (no end): counted to `now`, 150 - 130
    assert overlap(_row(1, 100.0, None), _row(2, 130.0, 170.0), now=150.0) == _line(20)
    # one after the other (a pair's sides), touching, or under half a second: none
    assert overlap(_row(1, 100.0, 160.0), _row(2, 160.0, 220.0)) is None
    assert overlap(_row(1, 100.0, 160.0), _row(2, 159.6, 220.0)) is None
    assert overlap(_row(1, 100.0, 160.0), _row(2, 159.4, 220.0)) == _line(1)
    # two machines (that is two_machines' line), or a run that cannot be placed: none
    assert overlap(_row(1, 100.0, 160.0), _row(2, 130.0, 200.0, ZEN3)) is None
    assert overlap(_row(1, 100.0, 160.0, None), _row(2, 130.0, 200.0, None)) is None  # same hostname is no proof
    assert overlap(_row(1, None, None), _row(2, 130.0, 200.0)) is None  # never started
    assert overlap(_row(1, 100.0, 160.0), _row(1, 100.0, 160.0)) is None  # a run with itself


def _overlapping(store, offset_s: float) -> tuple[int, int]:
    """Two completed fake runs on one fingerprint: the baseline 1000-1060 s, the run from 1000 + offset_s."""
    b = fake_run(store, RunConfig(epochs=3, target_accuracy=0.7), "baseline", group="a")
    r = fake_run(store, RunConfig(epochs=3, target_accuracy=0.7), "run", group="b", rate=20_000.0)
    for rid, start in ((b, 1000.0), (r, 1000.0 + offset_s)):
        store.update_run(rid, started=start, ended=start + 60.0,
                         environment={"hostname": "vm", "fingerprint": ZEN4})
    return b, r


def test_engine_compare_says_the_runs_overlapped(store, capsys):
    from engine.cli.main import main

    b, r = _overlapping(store, 15.0)
    assert main(["compare", str(b), str(r), "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["overlap"] == _line(45) and out["caveats"][0] == _line(45)
    assert main(["compare", str(b), str(r)]) == 0
    assert f"caveat: {_line(45)}" in capsys.readouterr().out.splitlines()
    store.update_run(r, started=1060.0, ended=1120.0)  # one after the other: no such line
    assert main(["compare", str(b), str(r), "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["overlap"] is None and not any("overlapped" in c for c in out["caveats"])


def test_a_stored_comparison_of_two_commands_notes_its_overlapping_pair(store):
    from engine.report import comparison
    from engine.report import headline as report_headline
    from engine.store import comparisons as cstore

    b0, r0 = _overlapping(store, 50.0)  # pair 0 shares 10 s
    b1, r1 = _overlapping(store, 60.0)  # pair 1 is one after the other
    plan = [{"pair": 0, "seed": 0, "order": "AB", "baseline_id": b0, "run_id": r0},
            {"pair": 1, "seed": 1, "order": "BA", "baseline_id": b1, "run_id": r1}]
    cid = cstore.create(store, "ab", "cmd", {"pairs": 2, "baseline_kind": "command"}, plan, "vm")
    result = comparison.evaluate(store, cstore.get(store, cid))
    assert result["overlap"] == f"pair 0: {_line(10)}"
    assert [row["overlap"] for row in result["pair_rows"]] == [_line(10), None]
    note = report_headline.comparison_headline(result)["note"]
    assert note.startswith(f"pair 0: {_line(10)}")
    store.update_run(r1, started=1030.0, ended=1090.0)  # now both pairs shared the machine
    result = comparison.evaluate(store, cstore.get(store, cid))
    assert result["overlap"] == f"pair 0: {_line(10)} (and 1 more pair)"


@pytest.mark.page
def test_the_runs_page_says_which_runs_overlapped_the_baseline(store):
    b, r = _overlapping(store, 20.0)
    at = app("views/runs/runs.py")
    no_errors(at)
    assert f"run #{r} and baseline #{b}: {_line(40)}" in texts(at.warning)
