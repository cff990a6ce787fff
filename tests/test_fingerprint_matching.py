"""Same machine means the same fingerprint id (engine.hardware.fingerprint), never the same hostname:
a stored baseline, a tuned baseline and a noise floor of another CPU behind hostname `vm` are not
used, and two runs of two machines are never compared silently."""
from __future__ import annotations

import json
import os

import pytest

from engine.base.errors import ConfigError
from engine.config import RunConfig, baseline_config
from engine.hardware import fingerprint
from engine.jobs import comparison, runner
from engine.store import comparisons as cstore, tuned_baselines
from tests.helpers.pages import app, fake_run, no_errors, texts

HOST = os.uname().nodename  # every machine here reports the same one: it must not decide
ZEN3 = {"id": "0123456789ab", "name": "AMD EPYC Zen 3 (family 25 model 1), AVX2+FMA, no bf16, 2 cores"}
CFG = RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2)


@pytest.fixture
def no_queue(store_home, monkeypatch, fake_cpu):
    """No queue process; old rows not opted in; a CPU with native bf16 (CFG trains in bf16: launch
    does not ask to allow it, whatever CPU runs the test)."""
    monkeypatch.setattr(runner, "ensure_queue", lambda *a, **k: False)
    monkeypatch.delenv(fingerprint.UNKNOWN_SETTING, raising=False)
    fake_cpu({"avx2", "fma", "avx512f", "avx512_bf16"})
    return store_home


def _baseline(store, fp) -> int:
    rid = fake_run(store, baseline_config(CFG), "baseline", group="old")
    store.update_run(rid, environment={"hostname": HOST, **({"fingerprint": fp} if fp else {})})
    return rid


def test_a_stored_baseline_of_another_machine_is_not_reused_and_says_why(no_queue, store):
    from engine.jobs.launch import launch

    other = _baseline(store, ZEN3)
    done = launch(CFG, baseline="default", reuse=True)
    here = fingerprint.fingerprint()["name"]
    assert not done.reused and done.baseline_id != other
    assert done.note == (f"stored baseline run {other} not reused: it was measured on another machine "
                         f"({ZEN3['name']}; this one is {here}); a fresh one is queued")
    mine = _baseline(store, fingerprint.short())
    assert runner.find_baseline(store, CFG)["id"] == mine
    assert runner.baseline_elsewhere(store, CFG) is None


def test_a_baseline_stored_before_fingerprints_needs_the_opt_in(no_queue, store, monkeypatch):
    old = _baseline(store, None)
    assert runner.find_baseline(store, CFG) is None
    assert runner.baseline_elsewhere(store, CFG) == (
        f"stored baseline run {old} not reused: it was stored before machine fingerprints (machine unknown); "
        "set SPEEDLAB_USE_UNKNOWN_MACHINE=1 (run --use-unknown-machine) to reuse it")
    monkeypatch.setenv(fingerprint.UNKNOWN_SETTING, "1")
    assert runner.find_baseline(store, CFG)["id"] == old
    from engine.jobs.launch import launch

    done = launch(CFG, baseline="default", reuse=True)  # reused, and labelled
    assert done.reused and done.baseline_id == old
    assert done.note == (f"reusing stored baseline run {old}: machine unknown (stored before machine fingerprints, "
                         "used as this machine's because SPEEDLAB_USE_UNKNOWN_MACHINE=1)")


def test_a_tuned_baseline_of_another_machine_is_not_used(no_queue, store):
    tuned_baselines.put(store, CFG, 0.004, 0.95, {"schedule": "constant", "fingerprint": ZEN3}, HOST)
    assert tuned_baselines.get(store, CFG, fingerprint.row_here) is None
    with pytest.raises(ConfigError) as e:
        comparison.baseline_of(CFG, "tuned")
    assert str(e.value) == (f"baseline: 'tuned' for digits/mlp was tuned on another machine ({ZEN3['name']}), not "
                            f"this one ({fingerprint.fingerprint()['name']}); run python -m engine tune-baseline here")
    tuned_baselines.put(store, CFG, 0.002, 0.95, {"schedule": "constant", "fingerprint": fingerprint.short()}, HOST)
    base, row = comparison.baseline_of(CFG, "tuned")
    assert base.learning_rate == 0.002 and row["fingerprint"] == fingerprint.short()


def _aa(store, fp, pairs=5) -> int:
    base = fake_run(store, baseline_config(CFG), "baseline", group=f"aa-{fp['id'] if fp else 'old'}")
    cid = cstore.create(store, "aa", f"aa-{fp['id'] if fp else 'old'}", {"fingerprint": fp} if fp else {}, [], HOST)
    cstore.update(store, cid, status="completed", result={
        "pairs": pairs, "baseline_ids": [base], "time_to_accuracy": {"half_width": 0.04}})
    return cid


def test_a_noise_floor_of_another_machine_is_not_used(no_queue, store, monkeypatch):
    from engine.jobs import noise
    from engine.report.comparison import noise_floor

    _aa(store, ZEN3)
    old = _aa(store, None)
    ab = {"kind": "ab"}
    cfg = baseline_config(CFG).to_dict()
    assert cstore.matching_noise(store, fingerprint.row_here, cfg, 5) is None
    assert noise_floor(store, ab, cfg) is None and noise.latest(store) is None
    monkeypatch.setenv(fingerprint.UNKNOWN_SETTING, "1")  # the opt-in: the old one (this hostname) counts
    assert noise_floor(store, ab, cfg)["comparison_id"] == old
    monkeypatch.delenv(fingerprint.UNKNOWN_SETTING)
    mine = _aa(store, fingerprint.short())
    assert noise_floor(store, ab, cfg) == {"comparison_id": mine, "pairs": 5, "config": {
        "dataset": "digits", "model": "mlp", "epochs": 2, "precision": "float32"},
        "half_width": {"time_to_accuracy": 0.04, "end_to_end": None, "steady": None}}


def _two_machines(store) -> tuple[int, int]:
    b = fake_run(store, RunConfig(epochs=3, target_accuracy=0.7), "baseline", rate=8000.0)
    r = fake_run(store, RunConfig(epochs=3, target_accuracy=0.7, precision="mixed_bfloat16"), "run", rate=12000.0)
    store.update_run(b, environment={"hostname": "vm", "fingerprint": ZEN3})
    store.update_run(r, environment={"hostname": "vm", "fingerprint": {"id": "fedcba987654", "name": "Zen 4 box"}})
    return b, r


def test_compare_across_two_machines_says_so_first_and_gives_no_verdict(store, capsys):
    from engine.cli.main import main

    b, r = _two_machines(store)
    assert main(["compare", str(b), str(r)]) == 0
    lines = capsys.readouterr().out.splitlines()
    line = f"measured on two machines: {ZEN3['name']} vs Zen 4 box"
    assert lines[0] == f"{line}: not comparable as a speedup"
    assert main(["compare", str(b), str(r), "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["verdict"] == "not comparable" and out["machines"] == line and out["caveats"][0] == line
    store.update_run(r, environment={"hostname": "vm", "fingerprint": ZEN3})  # one machine: no such line
    assert main(["compare", str(b), str(r), "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["machines"] is None and "verdict" not in out


def test_the_pair_headline_is_never_faster_across_two_machines():
    from engine.report.headline import pair_headline

    cmp = {"time_to_accuracy_speedup": 1.8, "baseline_time_to_accuracy_sec": 18.0, "time_to_accuracy_sec": 10.0,
           "target_accuracy": 0.95, "machines": "measured on two machines: A vs B"}
    h = pair_headline(cmp)
    assert h["value"] == "1.80× (not comparable)" and h["machines"] == "measured on two machines: A vs B"
    assert pair_headline({**cmp, "machines": None})["value"] == "1.80× faster"


@pytest.mark.page
def test_the_runs_page_says_two_machines_before_the_bars(store):
    _two_machines(store)
    at = app("views/runs/runs.py")
    no_errors(at)
    assert (f"measured on two machines: {ZEN3['name']} vs Zen 4 box: those bars are not speedups of a "
            "configuration (hover a bar for its machine)") in texts(at.warning)


def test_doctor_counts_the_runs_of_each_machine(store, capsys):
    from engine.cli.main import main

    b, r = _two_machines(store)  # one on the Zen 3, one on the "Zen 4 box"
    third = fake_run(store, RunConfig(epochs=3), "run")
    store.update_run(third, environment={"hostname": "vm", "fingerprint": ZEN3})
    fake_run(store, RunConfig(epochs=3), "run")  # stored before fingerprints: {"hostname": ...} only
    store.create_run(RunConfig().to_json(), role="run", group_id="q", status="queued")  # never ran: no machine
    assert main(["doctor", "--json"]) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert got["machines"] == [{"id": ZEN3["id"], "name": ZEN3["name"], "runs": 2},
                               {"id": "fedcba987654", "name": "Zen 4 box", "runs": 1},
                               {"id": None, "name": "machine unknown", "runs": 1}]
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [f"2 runs measured on {ZEN3['name']} (fingerprint {ZEN3['id']})",
            "1 run measured on Zen 4 box (fingerprint fedcba987654)", "1 run measured on machine unknown"] == [
        line for line in out if " measured on " in line]


def test_a_bundle_carries_each_runs_machine(tmp_path):
    from engine import bundle
    from engine.store import Store

    src, dst = Store(tmp_path / "a.sqlite"), Store(tmp_path / "b.sqlite")
    try:
        b, r = _two_machines(src)
        manifest = bundle.export_runs(src, [b, r], tmp_path / "two.zip")
        assert manifest["exported_from_machine"] == fingerprint.short()
        mapping = dict(bundle.import_bundle(dst, tmp_path / "two.zip"))
        got = {old: dst.get_run(new) for old, new in mapping.items()}
    finally:
        src.close()
        dst.close()
    assert got[b]["environment"]["fingerprint"] == ZEN3 and got[b]["origin"]["machine"] == ZEN3["name"]
    assert got[r]["origin"]["machine"] == "Zen 4 box"


@pytest.mark.page
def test_the_train_page_headline_says_two_machines_first_and_no_faster(store):
    b, r = _two_machines(store)
    store.update_run(r, baseline_id=b)
    at = app()
    no_errors(at)
    line = f"measured on two machines: {ZEN3['name']} vs Zen 4 box"
    assert texts(at.warning).splitlines()[0] == f"{line}: the ratio is not a speedup of this configuration"
    values = [m.value for m in at.metric]
    assert not any("faster" in v for v in values) and any("(not comparable)" in v for v in values)
    assert line not in texts(at.caption)  # said once, as the warning


def test_run_reuse_baseline_says_in_one_line_why_another_machines_is_not_reused(no_queue, store, monkeypatch,
                                                                               capsys):
    import engine.cli.run as cli_run
    from engine.cli.main import main

    def follow(rid, quiet):  # no worker here: each queued run ends at once
        if store.get_run(rid)["status"] == "queued":
            store.finish_run(rid, "cancelled", "cancelled before it started")
        return store.get_run(rid)

    monkeypatch.setattr(cli_run, "follow", follow)
    other = _baseline(store, ZEN3)
    main(["run", "--model", "mlp", "--precision", "mixed_bfloat16", "--epochs", "2", "--baseline",
          "--reuse-baseline", "--quiet"])
    err = capsys.readouterr().err.splitlines()
    assert (f"note: stored baseline run {other} not reused: it was measured on another machine ({ZEN3['name']}; "
            f"this one is {fingerprint.fingerprint()['name']}); a fresh one is queued") in err
    assert other not in {r["baseline_id"] for r in store.list_runs() if r["id"] != other}
