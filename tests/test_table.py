"""Slips from a first tour (issue 12): one number format for the CLI and the
Runs page, blank for missing, key columns and a column chooser, speed options
first, a typed data set path checked as the CLI checks it, and the batch-size
message naming the value on screen."""
from __future__ import annotations

import pytest
import math
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from engine.config import RunConfig
from engine.report.table import FIGURES, number
from engine.store import Store
from tests.helpers import cli
from tests.helpers.apptest import app_test


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.unit
def test_number_format():
    assert number(16520.4) == "16,520" and number(9210.0) == "9,210"
    assert number(1234.5678, 1) == "1,234.6" and number(0.96112, 3) == "0.961"
    assert number(None) == "" and number(math.nan, 2) == ""
    assert FIGURES["val_accuracy"] == ("final val acc", 3)


def stored_run(store: Store, rate: float | None, ttt: float | None, **cfg) -> int:
    rid = store.create_run(RunConfig(**cfg).to_json(), status="running")
    summary = {"samples_per_sec": rate, "warmup_sec": 1.0 if rate else None, "wall_sec": 5.25,
               "final_val_accuracy": 0.9611, "time_to_target_sec": ttt, "replicas_simulated": False}
    store.finish_run(rid, "completed" if rate else "failed", None if rate else "out of memory",
                     summary=summary)
    return rid


def test_cli_runs_writes_every_figure_one_way_and_blank_when_missing(store):
    stored_run(store, 16520.4, 2.5)
    stored_run(store, 9210.0, None, precision="mixed_bfloat16")
    stored_run(store, None, None, steps_per_execution=4)
    out = cli.engine("runs")
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()
    names = header.split()
    assert [n for n in names if n in FIGURES] == list(FIGURES) and names[-1] == "origin"
    assert "16,520" in rows[2] and "9,210" in rows[1] and "2.50" in rows[2]
    for text in ("e+", "None", "nan", "NaN"):
        assert text not in out.stdout, text
    # Wall time 5.25 s with one decimal in every row; accuracy with three.
    assert all(" 5.2 " in r and " 0.961 " in r for r in rows)


def app(page: str | None = None) -> AppTest:
    at = app_test()
    if page:
        at.switch_page(page)
    return at.run()


@pytest.mark.page
def test_runs_page_key_columns_chooser_and_blank_cells(store):
    a = stored_run(store, 16520.4, 2.5)
    b = stored_run(store, 9210.0, None)
    at = app("views/runs/runs.py")
    assert not at.exception
    table = at.dataframe[0]
    # Time to target right after the configuration (issue 43: the key columns at 1280 px).
    assert table.proto.column_order == ["id", "status", "role", "config", "time_to_target_sec", "samples_per_sec",
                                        "val_accuracy", "wall_sec", "mfu", "bound_by"]
    df = table.value
    assert df.set_index("id").loc[a, "time_to_target_sec"] == 2.5
    assert math.isnan(df.set_index("id").loc[b, "time_to_target_sec"])
    assert table.proto.placeholder == ""                                  # shown blank, not "None"
    at.get("button_group")[0].set_value(["warmup_sec", "created"]).run()
    assert at.dataframe[0].proto.column_order[-2:] == ["warmup_sec", "created"]


@pytest.mark.page
def test_speed_options_come_first_in_the_sidebar(store_home):
    at = app()
    heads = [m.value for m in at.sidebar.markdown if m.value.startswith("####")]
    assert heads[:4] == ["#### Speed options", "#### Data", "#### Model", "#### Training"]


@pytest.mark.page
def test_batch_size_message_names_the_value_on_screen(store_home):
    at = app()
    at.number_input(key="batch_size").set_value(0).run()
    assert at.number_input(key="batch_size").value == 0
    msg = "batch_size: 0 is out of range; use a value between 1 and 1048576"
    assert msg in [e.value for e in at.error]
    assert f"Launch is disabled: {msg}" in [e.value for e in at.error]
    assert at.button(key="launch").disabled


@pytest.mark.page
def test_a_typed_data_set_path_is_checked_like_the_cli(store_home, tmp_path):
    rng = np.random.default_rng(0)
    good = tmp_path / "stripes.npz"
    np.savez(good, x_train=rng.integers(0, 256, (200, 6, 5), dtype=np.uint8), y_train=np.arange(200) % 4)
    # AppTest cannot type into a selectbox: the URL sets it, as typing does (the box is bound to it).
    at = app_test()
    at.query_params["dataset"] = str(good)
    at.run()
    assert not at.exception and not at.error
    assert at.selectbox(key="dataset").value == str(good)
    assert ":material/dataset: 200 images of 6x5x1, 4 classes" in [c.value for c in at.sidebar.caption]
    assert not at.button(key="launch").disabled
    assert RunConfig(dataset=str(good)).dataset == str(good)  # the CLI's --dataset PATH takes it too

    missing = tmp_path / "nope.npz"
    at = app_test()
    at.query_params["dataset"] = str(missing)
    at.run()
    msg = f"dataset: {str(missing)!r} cannot be used: {missing} does not exist; check the path"
    assert msg in [e.value for e in at.error]
    assert at.button(key="launch").disabled
