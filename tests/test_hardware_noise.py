"""The hardware check's noise floor (engine.jobs.noise): a short A/A comparison,
stored, read back, and named by a later headline whose effect is below it.

The queue is played by the test (tests/test_comparisons.py `_play`), so no TF runs."""
import pytest

from engine.hardware.fingerprint import short
from engine.store import comparisons as cstore
from engine.config import RunConfig
from engine.jobs import noise
from engine.jobs import comparison
from tests.test_comparisons import _play, no_queue  # noqa: F401 - the fixture

# Per pair, the A/A run's time-to-accuracy ratio: logs 0.0198026, -0.0202027, 0.0099503;
# mean 0.0031834, sd 0.0208435, sem 0.0120340, t(0.975, 2) = 4.302653: exp(4.302653 x
# 0.0120340) - 1 = 0.053142, a floor of ±5.3%.
AA = {1000: 1.02, 1001: 0.98, 1002: 1.01}  # an A/A pair's second side trains on seed + 1000
FLOOR = 0.053142


def _measure_floor(store) -> int:
    cid = noise.start()
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else
          (10.0 / AA[run["config"]["seed"]], 100.0))
    return cid


def test_the_check_runs_three_a_a_pairs_of_the_digits_cnn_and_stores_the_floor(no_queue, store):  # noqa: F811
    assert noise.latest(store) is None and noise.floor(store) is None
    cid = _measure_floor(store)
    runs = store.list_runs()
    assert len(runs) == 6  # 3 pairs, both sides the float32 baseline
    assert {(r["config"]["dataset"], r["config"]["model"], r["config"]["epochs"], r["config"]["precision"])
            for r in runs} == {("digits", "cnn", 10, "float32")}
    comp = cstore.get(store, cid)
    assert comp["kind"] == "aa" and comp["status"] == "completed"
    assert comp["result"]["verdict"] == "inconclusive"  # [0.95, 1.06] is not inside the A/A's ±2%
    assert {r["config"]["seed"] for r in runs if r["role"] == "run"} == {1000, 1001, 1002}
    info = noise.latest(store)
    assert info["comparison_id"] == cid and info["pairs"] == 3 and info["measure"] == "time_to_accuracy"
    assert info["floor"] == pytest.approx(FLOOR, abs=1e-6)
    assert info["config"] == {"dataset": "digits", "model": "cnn", "epochs": 10}
    assert noise.floor_text(info, now=info["measured"] + 720) == (
        f"noise floor ±5.3% (A/A comparison #{cid}: 3 pairs of digits/cnn, 10 epochs, "
        "time to accuracy; 12 min ago): a speedup inside it is within this machine's noise")
    # The floor is this machine's: the same hostname with another CPU (fingerprint) has none.
    assert comp["settings"]["fingerprint"] == short()
    cstore.update(store, cid, settings={**comp["settings"], "fingerprint": {"id": "0123456789ab", "name": "Zen 3"}})
    assert noise.latest(store) is None and noise.floor(store) is None


def test_a_floor_needs_an_interval(no_queue, store):  # noqa: F811
    with pytest.raises(ValueError):
        noise.start(pairs=1)
    cid = comparison.start(noise.noise_config(), kind="aa", pairs=2)
    _play(store, lambda run: (10.0, 100.0), stop_after=2)  # one complete pair: no interval
    assert cstore.get(store, cid)["result"]["pairs"] == 1
    assert noise.latest(store) is None
    assert noise.floor_text(None).startswith("noise floor: not measured on this machine yet")


# A 5-pair A/A of the comparison's own baseline (mlp, 2 epochs, float32): ratios 1.04, 0.96, 1.03, 0.95,
# 1.05 (the second side trains on seed + 1000).
AA5 = {1000: 1.04, 1001: 0.96, 1002: 1.03, 1003: 0.95, 1004: 1.05}
MLP = RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2)


def _four_percent(store) -> dict:
    """A 3-pair comparison of MLP whose run is 1.03, 1.04, 1.05x faster: t interval [1.0154, 1.0651]."""
    cid = comparison.start(MLP, pairs=3)
    speed = {0: 1.03, 1: 1.04, 2: 1.05}
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else
          (10.0 / speed[run["config"]["seed"]], 100.0))
    return cstore.get(store, cid)


def test_only_a_matching_five_pair_floor_widens_inconclusive(no_queue, store):  # noqa: F811
    from engine.report import stats
    from engine.report.headline import comparison_headline

    # The hardware check's floor (3 pairs of digits/cnn, 10 epochs) is not this comparison's: unused.
    _measure_floor(store)
    first = _four_percent(store)
    assert first["result"]["noise_floor"] is None and first["result"]["verdict"] == "faster"
    h = comparison_headline(first["result"])
    assert h["text"] == "1.04x faster (+2% to +7%), 3 pairs vs Keras-default Adam 1e-3" and h["note"] is None
    # Nor is a matching one of 3 pairs (t with 2 df: too wide to judge by).
    aa3 = comparison.start(MLP, kind="aa", pairs=3)
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else (10.0 / AA5[run["config"]["seed"]], 100.0))
    assert _four_percent(store)["result"]["noise_floor"] is None
    # A matching A/A of 5 pairs: its ±6.2% holds the 4% effect, which then reads inconclusive.
    aa = comparison.start(MLP, kind="aa", pairs=5)
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else (10.0 / AA5[run["config"]["seed"]], 100.0))
    floor = stats.summarize([10.0] * 5, [10.0 / AA5[1000 + i] for i in range(5)], False)["half_width"]
    r = _four_percent(store)["result"]
    assert r["noise_floor"]["comparison_id"] == aa != aa3 and r["noise_floor"]["pairs"] == 5
    assert r["noise_floor"]["config"] == {"dataset": "digits", "model": "mlp", "epochs": 2, "precision": "float32"}
    assert r["noise_floor"]["half_width"]["time_to_accuracy"] == pytest.approx(floor) and floor > 0.05
    assert r["time_to_accuracy"]["verdict"] == "faster" and r["verdict"] == "inconclusive"
    h = comparison_headline(r)
    assert h["verdict"] == "inconclusive" and h["text"].startswith("inconclusive: 1.04x (+2% to +7%), 3 pairs")
    assert h["note"] == f"within a measured noise floor (±{floor * 100:.0f}%): not called faster or slower"
    # The equivalence margin stays the fixed 5% whatever the floor: a floor never widens 'equivalent'.
    assert r["margin"] == stats.DEFAULT_MARGIN


@pytest.mark.page
def test_the_train_page_headline_names_the_matching_floor(no_queue, store):  # noqa: F811
    from tests.helpers.pages import app, no_errors, texts

    comparison.start(MLP, kind="aa", pairs=5)
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else (10.0 / AA5[run["config"]["seed"]], 100.0))
    _four_percent(store)
    at = app()
    no_errors(at)
    assert "inconclusive: 1.04x (+2% to +7%)" in texts(at.markdown)  # large: the verdict and interval
    assert "3 pairs vs Keras-default Adam 1e-3" in texts(at.caption)  # small: pairs and baseline
    assert "within a measured noise floor (±6%): not called faster or slower" in texts(at.caption)


@pytest.mark.page
def test_the_hardware_page_shows_the_floor_and_starts_a_measurement(no_queue, store):  # noqa: F811
    from tests.test_hardware_page import cache, facts
    from tests.helpers.pages import app, no_errors, texts

    cache(no_queue, facts())  # no probe
    at = app("views/hardware/hardware.py")
    no_errors(at)
    assert "Noise floor: not measured on this machine yet" in texts(at.caption)
    at.button(key="noise_start").click().run()
    no_errors(at)
    (comp,) = cstore.list_all(store, "aa")
    assert comp["status"] == "running" and len(comp["plan"]) == noise.NOISE_PAIRS
    assert at.button(key="noise_start").disabled  # one at a time
    assert f"Measuring the noise floor: A/A comparison #{comp['id']}, pair 1 of 3" in \
        "\n".join(p.proto.text for p in at.get("progress"))
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else
          (10.0 / AA[run["config"]["seed"]], 100.0))
    at = app("views/hardware/hardware.py")
    no_errors(at)
    assert "**Noise floor ±5.3%**" in texts(at.markdown)


def test_the_hardware_command_reports_the_stored_floor(no_queue, store, monkeypatch, capsys):  # noqa: F811
    import argparse
    import json

    from engine.cli import hardware as cli_hardware

    monkeypatch.setattr(cli_hardware, "probe", lambda **kw: {"facts": {"hostname": "h"}, "verdicts": []})
    parser = argparse.ArgumentParser()
    cli_hardware.add_parser(parser.add_subparsers())
    args = parser.parse_args(["hardware", "--json"])
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out)["noise"] is None
    cid = _measure_floor(store)
    assert args.func(args) == 0
    got = json.loads(capsys.readouterr().out)["noise"]
    assert got["comparison_id"] == cid and got["floor"] == pytest.approx(FLOOR, abs=1e-6)
