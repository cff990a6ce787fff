"""The hardware check's noise floor (engine.jobs.noise): a short A/A comparison,
stored, read back, and named by a later headline whose effect is below it.

The queue is played by the test (tests/test_comparisons.py `_play`), so no TF runs."""
import pytest

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
    assert noise.latest(store, "another-host") is None  # the floor is this machine's


def test_a_floor_needs_an_interval(no_queue, store):  # noqa: F811
    with pytest.raises(ValueError):
        noise.start(pairs=1)
    cid = comparison.start(noise.noise_config(), kind="aa", pairs=2)
    _play(store, lambda run: (10.0, 100.0), stop_after=2)  # one complete pair: no interval
    assert cstore.get(store, cid)["result"]["pairs"] == 1
    assert noise.latest(store) is None
    assert noise.floor_text(None).startswith("noise floor: not measured on this machine yet")


def test_a_headline_below_the_floor_says_so(no_queue, store):  # noqa: F811
    from engine.report.stats import comparison_headline

    _measure_floor(store)
    floor = noise.floor(store)
    cid = comparison.start(RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2), pairs=3)
    speed = {0: 1.03, 1: 1.04, 2: 1.05}
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else
          (10.0 / speed[run["config"]["seed"]], 100.0))
    # logs of 1.03, 1.04, 1.05: geometric mean 1.0400, t interval [1.0154, 1.0651]: faster,
    # but a 4% effect is inside the ±5.3% floor.
    h = comparison_headline(cstore.get(store, cid)["result"], floor=floor)
    assert h["text"] == "1.04x faster (+2% to +7%), 3 pairs vs Keras-default Adam 1e-3"
    assert h["note"] == "below this machine's noise floor (±5%)"
    # A larger effect is not flagged.
    assert comparison_headline(cstore.get(store, cid)["result"], floor=0.03)["note"] is None


@pytest.mark.page
def test_the_train_page_headline_names_the_stored_floor(no_queue, store):  # noqa: F811
    from tests.helpers.pages import app, no_errors, texts

    _measure_floor(store)
    comparison.start(RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2), pairs=3)
    speed = {0: 1.03, 1: 1.04, 2: 1.05}
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else
          (10.0 / speed[run["config"]["seed"]], 100.0))
    at = app()
    no_errors(at)
    assert "1.04x faster (+2% to +7%)" in texts(at.markdown)  # large: the verdict and interval
    assert "3 pairs vs Keras-default Adam 1e-3" in texts(at.caption)  # small: pairs and baseline
    assert "below this machine's noise floor (±5%)" in texts(at.caption)


@pytest.mark.page
def test_the_hardware_page_shows_the_floor_and_starts_a_measurement(no_queue, store):  # noqa: F811
    from tests.test_hardware_page import cache, facts
    from tests.helpers.pages import app, no_errors, texts

    cache(no_queue, facts())  # no probe
    at = app("views/hardware.py")
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
    at = app("views/hardware.py")
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
