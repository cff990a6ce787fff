"""A secret that holds (issue 42, item 8): a short secret is refused; wrong secrets wait
longer and longer, then lock the session and the client address out; each is logged."""
from __future__ import annotations

import logging

import pytest

from tests.helpers.apptest import app_test
from views import gate


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_the_wait_doubles_then_locks_out():
    assert [gate.Throttle.delay(n) for n in range(1, 11)] == [0, 0, 0, 2, 4, 8, 16, 32, 60, 900]


def test_400_guesses_at_the_fastest_allowed_pace_take_hours_not_seconds():
    clock = Clock()
    th = gate.Throttle(clock=clock)
    start, tries = clock.t, 0
    while tries < 400:
        clock.t += th.wait_s("session:a", "address:10.0.0.9") + 0.01  # an attacker waits exactly as told
        th.fail("session:a", "address:10.0.0.9")
        tries += 1
    assert clock.t - start > 390 * gate.LOCKOUT_S  # every try from the 10th on waits out a lockout
    # A fresh session from the same address gains nothing: the address is locked too.
    assert th.wait_s("session:b", "address:10.0.0.9") > 800
    th.ok("session:a", "address:10.0.0.9")
    assert th.wait_s("session:a", "address:10.0.0.9") == 0


@pytest.mark.page
def test_a_short_secret_opens_no_page_and_says_why(store_home, monkeypatch, caplog):
    monkeypatch.setenv("SPEEDLAB_SECRET", "k9")
    with caplog.at_level(logging.ERROR, "speedlab.gate"):
        at = app_test().run()
    assert not at.exception and not at.text_input  # no form, no page
    (err,) = [e.value for e in at.error]
    assert err.startswith("$SPEEDLAB_SECRET is 2 characters long: the gate needs at least 12")
    assert any("needs at least 12" in r.getMessage() for r in caplog.records)


@pytest.mark.page
def test_wrong_secrets_wait_and_are_logged_and_the_right_one_waits_too(store_home, monkeypatch, caplog):
    clock = Clock()
    monkeypatch.setattr(gate, "THROTTLE", gate.Throttle(clock=clock))
    monkeypatch.setenv("SPEEDLAB_SECRET", "a-long-enough-secret")
    at = app_test().run()
    with caplog.at_level(logging.WARNING, "speedlab.gate"):
        for i in range(4):
            at.text_input(key="_gate_secret").input(f"guess-{i}")
            at.button[0].click().run()
    assert [e.value for e in at.error] == ["That is not the access secret. Try again in 2 s."]
    fails = [r.getMessage() for r in caplog.records if "wrong secret" in r.getMessage()]
    assert len(fails) == 4 and "(failure 4; next try in 2 s)" in fails[-1] and " UTC from " in fails[-1]
    # Within the wait even the right secret is not compared.
    at.text_input(key="_gate_secret").input("a-long-enough-secret")
    at.button[0].click().run()
    assert [e.value for e in at.error] == ["Too many wrong secrets: try again in 2 s."]
    clock.t += 2.5
    at.button[0].click().run()
    assert not at.exception and "Access secret" not in [t.label for t in at.text_input]
