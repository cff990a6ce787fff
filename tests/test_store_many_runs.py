"""Fast at 10,000 runs and beyond (issue 42, item 1): the Runs page pages and filters in
SQL and draws one page; the Train page's reads and `engine runs` do not grow with the
number of stored runs (counted as run rows parsed, which is what grew before: every
script run parsed every run). Timings are in benchmarks/many_runs.py, not here."""
from __future__ import annotations

import json

import pytest

import engine.store.db as store_mod
from benchmarks.many_runs import build
from engine.cli.main import main as cli_main
from engine.store import Store, filter_sql
from tests.helpers.pages import app


@pytest.fixture
def parsed(monkeypatch):
    """Counts run rows parsed (engine.store.rows.parse_row via engine.store.db)."""
    n = {"rows": 0}
    real = store_mod.parse_row

    def counting(row):
        n["rows"] += 1
        return real(row)

    monkeypatch.setattr(store_mod, "parse_row", counting)
    return n


def test_query_runs_filters_pages_and_skips_damaged_rows(store_home):
    path = store_home / "runs.sqlite"
    build(path, 30)  # ids 1..30: odd baselines float32, even runs mixed_bfloat16
    with Store(path) as s:
        s.conn.execute("UPDATE runs SET config='{broken' WHERE id=29")
        where, params = filter_sql({"precision": ["float32"], "role": []})
        assert where.endswith(" IN (?)") and params == ["float32"]
        assert s.count_runs(where, params) == 14  # damaged #29: its precision cannot be read
        page = s.query_runs(where, params, limit=4, offset=2)
        assert [r["id"] for r in page] == [23, 21, 19, 17]  # newest first, #29 skipped
        assert s.distinct_values("precision") == ["float32", "mixed_bfloat16"]
        assert s.distinct_values("backend") == ["tensorflow"]  # a config without it is TensorFlow's
        assert [d["id"] for d in s.damaged_runs()] == [29]
        s.conn.execute("UPDATE runs SET summary='[1]' WHERE id=3")  # damaged later: seen at once
        assert [d["id"] for d in s.damaged_runs()] == [29, 3]
        assert {d["reason"] for d in s.damaged_runs()} == {"config is not valid JSON (JSONDecodeError)",
                                                         "summary is not a JSON object"}


def test_runs_command_shows_a_screenful_and_filters(store_home, capsys):
    build(store_home / "runs.sqlite", 60)
    assert cli_main(["runs"]) == 0
    out, err = capsys.readouterr()
    rows = out.strip().splitlines()[1:]
    assert len(rows) == 20 and rows[0].split()[0] == "60"
    assert "runs 1-20 of 60 (newest first)" in err
    assert cli_main(["runs", "--precision", "float32", "--limit", "3", "--offset", "1"]) == 0
    out, err = capsys.readouterr()
    assert [ln.split()[0] for ln in out.strip().splitlines()[1:]] == ["57", "55", "53"]
    assert "runs 2-4 of 30 matching" in err
    assert cli_main(["runs", "--json"]) == 0  # --json: every match unless --limit
    assert len(json.loads(capsys.readouterr().out.strip().splitlines()[-1])) == 60


def test_runs_command_reads_a_screenful_however_many_runs(store_home, parsed, capsys):
    build(store_home / "runs.sqlite", 300)
    cli_main(["runs"])
    assert parsed["rows"] <= 20 + 2  # the page (and the active runs), not 300
    capsys.readouterr()


def _page_parses(page: str, parsed, at_=None) -> tuple[int, object]:
    at = at_ or app(page)
    parsed["rows"] = 0
    at.run()
    return parsed["rows"], at


@pytest.mark.page
def test_runs_page_draws_one_page_and_its_reads_do_not_grow(store_home, parsed):
    path = store_home / "runs.sqlite"
    build(path, 120)
    small, at = _page_parses("views/runs/runs.py", parsed)
    assert not at.exception
    table = at.dataframe[0].value
    assert len(table) == 25 and table["id"].tolist()[:2] == [120, 119]
    assert "1-25 of 120 runs" in at.caption[0].value
    at.number_input(key="runs_page").set_value(5).run()
    assert at.dataframe[0].value["id"].tolist() == list(range(20, 0, -1))
    at.multiselect(key="filter_precision").set_value(["float32"]).run()
    assert "matching, of 120 runs" in at.caption[0].value
    assert set(at.dataframe[0].value["config"].str.contains("bf16")) == {False}
    build_into(path, 480)  # 600 runs: the page parses as many rows as with 120
    big, at = _page_parses("views/runs/runs.py", parsed)
    assert not at.exception and len(at.dataframe[0].value) == 25
    assert big <= small + 2, (small, big)


@pytest.mark.page
def test_train_page_reads_do_not_grow_with_the_stored_runs(store_home, parsed):
    path = store_home / "runs.sqlite"
    build(path, 40)
    small, at = _page_parses("views/train/train.py", parsed)
    assert not at.exception
    build_into(path, 960)
    big, at = _page_parses("views/train/train.py", parsed)
    assert not at.exception
    assert big <= small + 2, (small, big)


@pytest.mark.page
def test_replay_page_offers_the_newest_runs_and_its_reads_do_not_grow(store_home, parsed):
    from views.replay import PICKER_RUNS

    path = store_home / "runs.sqlite"
    build(path, PICKER_RUNS + 20)
    small, at = _page_parses("views/replay.py", parsed)
    assert not at.exception
    picks = at.selectbox(key="replay_base").options
    assert len(picks) == PICKER_RUNS and picks[0].startswith(f"#{PICKER_RUNS + 20} ")  # the newest, newest first
    build_into(path, 500)  # twice the runs: the same window, the same reads
    big, at = _page_parses("views/replay.py", parsed)
    picks = at.selectbox(key="replay_base").options
    # The newest PICKER_RUNS, and the pair already picked (#519, #520), now older than the window.
    assert not at.exception and len(picks) == PICKER_RUNS + 2 and picks[0].startswith(f"#{2 * PICKER_RUNS + 20} ")
    assert {p.split()[0] for p in picks[-2:]} == {f"#{PICKER_RUNS + 19}", f"#{PICKER_RUNS + 20}"}
    assert big <= small + 2, (small, big)


def build_into(path, n: int) -> None:
    """`n` more runs copied into the store at `path` (benchmarks.many_runs.build's shape)."""
    tmp = path.with_name(f"extra-{n}.sqlite")
    build(tmp, n)
    with Store(path) as s:
        s.conn.execute(f"ATTACH DATABASE '{tmp}' AS extra")
        off = s.conn.execute("SELECT MAX(id) FROM runs").fetchone()[0]
        cols = [r[1] for r in s.conn.execute("PRAGMA table_info(runs)") if r[1] != "id"]
        with s.tx() as conn:
            conn.execute(f"INSERT INTO runs (id, {', '.join(cols)}) SELECT id + {off}, {', '.join(cols)} "
                         "FROM extra.runs ORDER BY id")
            for t in ("executions", "epochs", "system"):
                tc = [r[1] for r in s.conn.execute(f"PRAGMA table_info({t})") if r[1] != "run_id"]
                conn.execute(f"INSERT INTO {t} (run_id, {', '.join(tc)}) SELECT run_id + {off}, {', '.join(tc)} "
                             f"FROM extra.{t}")
        s.conn.execute("DETACH DATABASE extra")
