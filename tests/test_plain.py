"""Untrusted text is text (issue 42, item 3): a bundle whose host name, group, data set name,
error, stderr and warnings hold Markdown and HTML is imported, and every page shows them
as plain characters: no image, link, tag or directive reaches the page, and no chart's
title or hover label carries live HTML. engine.base.plain is the one escaping helper."""
from __future__ import annotations

import json
import re

import pytest
from markdown_it import MarkdownIt

from engine.base import plain
from tests.helpers.hostile import HOSTILE, hostile_store
from tests.helpers.pages import app, no_errors

PAGES = ("views/train/train.py", "views/runs/runs.py", "views/replay.py", "views/hardware/hardware.py",
         "views/autopilot.py")
# Proto fields that Streamlit renders as Markdown (bodies of markdown/caption/alerts/toasts,
# labels of expanders, metrics, tabs and widgets, help tooltips).
MARKDOWN_FIELDS = ("body", "label", "help", "caption", "text")
PLAIN_ELEMENTS = ("text", "code")  # st.text, st.code: shown as typed


def _walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def markdown_strings(at) -> list[str]:
    out = []
    for root in (at.main, at.sidebar):
        for node in _walk(root):
            proto = getattr(node, "proto", None)
            if proto is None or getattr(node, "type", None) in PLAIN_ELEMENTS:
                continue
            for f in MARKDOWN_FIELDS:
                if f in {d.name for d in proto.DESCRIPTOR.fields}:
                    v = getattr(proto, f)
                    if isinstance(v, str) and v:
                        out.append(v)
    return out


def chart_strings(at) -> list[str]:
    out = []

    def strings(x):
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, dict):
            for v in x.values():
                strings(v)
        elif isinstance(x, list):
            for v in x:
                strings(v)

    for el in at.get("plotly_chart"):
        strings(json.loads(el.proto.spec))
    return out


_MD = MarkdownIt("commonmark")


def live_markup(md_text: str) -> list[str]:
    """What of `md_text` a Markdown renderer would turn into an image, a link or a tag."""
    rendered = _MD.render(md_text)
    found = re.findall(r"<(img|a|b|script|iframe)\b[^>]*>", rendered, re.I)
    # GFM (remark-gfm) links a bare URL or e-mail found in the text after escapes are resolved.
    if re.search(r"https?\\?:\\?/\\?/HOST|www\\?\.HOST|\w\\?@HOST", md_text):
        found.append("autolink")
    if re.search(r"(?<!\\):red\[", md_text):
        found.append("directive")
    return found


def test_md_escapes_every_markup_and_reads_the_same():
    rendered = _MD.render(plain.md(HOSTILE)).replace(plain.WJ, "")  # the word joiners are invisible
    assert not re.findall(r"<(img|a|b|em|strong|code)\b", rendered)
    # The text reads the same: only the escapes' backslashes are gone.
    assert "![](http://HOST/pixel.png)" in rendered and "&lt;img src=x onerror=alert(1)&gt;" in rendered
    assert live_markup(plain.md(HOSTILE)) == []
    assert plain.md("a\nb\u202e") == "a b"  # one line, no bidi override
    assert plain.md(None) == ""


def test_html_escapes_plotly_markup():
    assert plain.html('<a href="x">b</a> & <br>') == "&lt;a href=&quot;x&quot;&gt;b&lt;/a&gt; &amp; &lt;br&gt;"


@pytest.mark.page
@pytest.mark.parametrize("page", PAGES)
def test_every_page_shows_a_hostile_bundle_as_plain_text(store, tmp_path, page):
    ids = hostile_store(store, tmp_path)
    if page == "views/hardware/hardware.py":  # this machine's probe, as if its host name were hostile too
        from tests.test_hardware_page import cache, facts

        f = facts(gpus=[(HOSTILE, (8, 0), 16_000)], flags=("avx512f", HOSTILE))  # the OS's and driver's words too
        f["host"].update(cpu_model=HOSTILE, os=HOSTILE, arch=HOSTILE)
        cache(tmp_path, {**f, "hostname": HOSTILE, "errors": [HOSTILE]})
    assert ids and store.get_run(ids[0])["environment"]["hostname"] == HOSTILE
    at = app(page)
    no_errors(at)
    if page in ("views/runs/runs.py", "views/replay.py"):  # the runs are there, not left out
        assert HOSTILE in str(at.dataframe[0].value.to_dict()) if page.endswith("runs.py") else any(
            "HOST" in s for s in markdown_strings(at))
    bad = {s: live_markup(s) for s in markdown_strings(at) if live_markup(s)}
    assert not bad, bad
    charts = [s for s in chart_strings(at) if re.search(r"<(img|a|b)\b|HOST/", s, re.I) and "HOST" in s]
    assert not [s for s in charts if re.search(r"<(img|a|b)\b", s, re.I)], charts
    if page == "views/hardware/hardware.py":  # no GPU, but the driver names one: its words, plain
        cache(tmp_path, {**facts(driver=[HOSTILE]), "hostname": HOSTILE})
        at = app(page)
        no_errors(at)
        bad = {s: live_markup(s) for s in markdown_strings(at) if live_markup(s)}
        assert not bad, bad
