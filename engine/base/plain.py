"""Untrusted text as plain text: the one escaping helper of every page and chart.

Strings SpeedLab did not write itself (a bundle's host name, error and stderr, a run's
group, an upload's or a user data set's file and class names, a user model's layer names,
a config's free text) are untrusted (docs/reliability.md). Shown as they are they become
markup: Streamlit renders Markdown (links, images: an image from another server is
fetched by the viewer's browser and logs the visit) in headings, captions, alerts, expander
and metric labels and toasts; Plotly renders a subset of HTML (`<a href>`, `<b>`, `<br>`,
`<span style>`) in titles, axis titles, legends and hover labels.

- `md(text)`: for any Streamlit string that is Markdown. Every ASCII punctuation character
  is backslash-escaped (CommonMark allows it for all of them and shows the character alone),
  so no link, image, emphasis, heading, HTML tag, autolink (`http\\://`), Streamlit
  directive (`:red[...]`, `:material/x:`) or LaTeX (`$`) survives; the text reads the same.
- `html(text)`: for any Plotly string (title, axis title, trace name, hover text):
  `<`, `>`, `&` and quotes as entities, so Plotly shows them as characters.

Places that show text without interpreting it (st.dataframe cells, st.code, st.text,
widget options) need neither. Exports (JSON, bundles) carry the text unchanged: they are
data, and whoever shows them again escapes them there. CSV is the exception: a
spreadsheet runs a cell that starts with `=`, so every CSV is written by
`engine.base.csv_safe.to_csv` (its `cell` is the rule).

Base layer: stdlib only.
"""
from __future__ import annotations

import html as _html
import re
from typing import Any

# Characters that start Markdown or Streamlit markup anywhere in a line: escapes, code,
# emphasis, links and images ([ ]), HTML and autolinks (< >), strikethrough, tables,
# LaTeX, entities, e-mail autolinks. The rest of ASCII punctuation is escaped only where
# it means something (see `md`), so that ordinary text (an error line) reads as typed.
_ALWAYS = set("\\`*[]<>~|$&@")
# Characters that are invisible or reorder text (bidi controls): a name cannot hide in them.
_CONTROL = re.compile("[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
WJ = "\u2060"  # word joiner: zero width, no break; splits a URL that Markdown would link
_LIST_START = re.compile(r"^(\s*)(\d{1,9})([.)])")


def md(text: Any) -> str:
    """`text` (any value; None -> '') escaped for a Streamlit Markdown string: shown as
    the same characters, never as a link, image, tag, emphasis, heading, list, directive
    (`:red[...]`, `:material/x:`), emoji code or LaTeX. Newlines become spaces (one outside
    string cannot start a block of its own).

    Always escaped: \\ ` * [ ] < > ~ | $ & @. Where they mean something: `_` not inside a
    word, `:` before a non-space (directives), and at the start `#`, `-`, `+`, `=`, `>` and
    `1.` / `1)`. Links that GFM finds in plain text (`www.`, `http://`, `a@b.c`) get an
    invisible word joiner (WJ) inside, as well: escapes alone do not stop them."""
    s = _CONTROL.sub("", "" if text is None else str(text))
    s = s.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    lead = len(s) - len(s.lstrip())
    out = []
    for i, ch in enumerate(s):
        prev = s[i - 1] if i else ""
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if ch == "." and s[max(0, i - 3):i].lower() == "www" or ch == "@" or ch == ":" and nxt == "/":
            # Streamlit's Markdown (remark-gfm) finds www., http:// and e-mail links in the
            # text after escapes are resolved: a word joiner (U+2060, invisible) breaks them.
            out.append(("\\" + ch + WJ) if ch != "." else (WJ + "\\."))
        elif (ch in _ALWAYS
                or (ch == "_" and not (prev.isalnum() and nxt.isalnum()))
                or (ch == ":" and nxt and not nxt.isspace())
                or (i == lead and ch in "#-+=")):
            out.append("\\" + ch)
        else:
            out.append(ch)
    escaped = "".join(out)
    m = _LIST_START.match(escaped)
    if m:  # "1. x" / "1) x" would start an ordered list
        escaped = m.group(1) + m.group(2) + "\\" + m.group(3) + escaped[m.end():]
    return escaped


def html(text: Any) -> str:
    """`text` (any value; None -> '') escaped for a Plotly string (HTML subset):
    `<b>`, `<a href=...>`, `<img>` show as characters."""
    return _html.escape(_CONTROL.sub("", "" if text is None else str(text)), quote=True)
