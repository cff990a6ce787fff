"""engine/base/lines.py: a reason is one line of at most 300 characters."""
from engine.base.lines import one_line


def test_a_short_first_line_is_kept_as_it_is():
    assert one_line("\n  ValueError: boom  \nTraceback ...") == "ValueError: boom"
    assert one_line(None) == ""


def test_a_long_line_is_cut_to_the_limit_and_names_its_log():
    cut = one_line("x" * 65_574, log="/s/pairs/cmp-1/run.stderr")
    # 42 = len("... (all of it: ") 16 + the path 25 + ")" 1
    assert len(cut) == 300 and cut == "x" * (300 - 42) + "... (all of it: /s/pairs/cmp-1/run.stderr)"
    assert one_line("y" * 400) == "y" * 297 + "..."


def test_a_cut_reason_quoted_in_a_longer_one_keeps_its_log():
    inner = one_line("x" * 1000, limit=280, log="/l")
    outer = one_line(f"pair 1 failed (baseline command: {inner}); 0 complete pairs kept")
    assert len(outer) == 300 and outer.endswith("... (all of it: /l)") and outer.startswith("pair 1 failed (")
