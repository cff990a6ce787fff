"""The optional shared-secret gate: with $SPEEDLAB_SECRET set, every page asks for it
once per browser session before it runs (app.py calls `passed()` before navigation).

Not a user system: one secret for everyone who may drive this machine, for a
dashboard served beyond localhost (docs/reliability.md). Compared in constant
time (hmac.compare_digest). Unset or empty: no gate (the server is local only).

A secret shorter than MIN_LENGTH characters is refused (the gate then opens no page):
one browser session tried all 396 two-character secrets in 2 s. Wrong secrets are
throttled per browser session and per client address (`st.context.ip_address`), as
OWASP advises for repeated failed sign-ins: FREE_TRIES at once, then a wait that doubles
from 2 s up to MAX_WAIT_S, and after LOCK_AFTER failures a LOCKOUT_S lockout. Each
failure is logged (logger 'speedlab.gate': UTC time, client address, count).
"""
from __future__ import annotations

import hmac
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import streamlit as st

ENV = "SPEEDLAB_SECRET"
MIN_LENGTH = 12
FREE_TRIES = 3          # wrong secrets accepted without a wait
MAX_WAIT_S = 60.0       # the longest wait between two tries, before the lockout
LOCK_AFTER = 10         # failures that lock the session and the address out
LOCKOUT_S = 15 * 60.0   # how long a lockout lasts (s); a failure after it locks again at once

log = logging.getLogger("speedlab.gate")


def secret() -> str:
    """The configured secret ('' when the gate is off)."""
    return os.environ.get(ENV, "")


@dataclass
class Throttle:
    """Failed tries per key (a session id, a client address) and when each may try again.

    `wait_s(key)`: seconds before `key` may try (0: now). `fail(key)`: count a failure and
    return the new wait. `ok(key)`: forget the key's failures. Thread-safe (one per server:
    every session's script thread shares it). `clock`: time.monotonic, or a test's."""
    clock: Callable[[], float] = time.monotonic
    _fails: dict = field(default_factory=dict)     # key -> failures
    _until: dict = field(default_factory=dict)     # key -> clock time it may try again
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def delay(failures: int) -> float:
        """The wait after the `failures`-th failure (s): 0 for the first FREE_TRIES, then
        2, 4, 8, ... up to MAX_WAIT_S, and LOCKOUT_S from the LOCK_AFTER-th on."""
        if failures >= LOCK_AFTER:
            return LOCKOUT_S
        if failures <= FREE_TRIES:
            return 0.0
        return min(2.0 ** (failures - FREE_TRIES), MAX_WAIT_S)

    def wait_s(self, *keys: str) -> float:
        now = self.clock()
        with self._lock:
            return max([self._until.get(k, now) - now for k in keys] + [0.0])

    def fail(self, *keys: str) -> tuple[int, float]:
        """Count one failure for each key; returns (the most failures of any key, its wait)."""
        now = self.clock()
        worst = (0, 0.0)
        with self._lock:
            for k in keys:
                n = self._fails.get(k, 0) + 1
                self._fails[k] = n
                self._until[k] = now + self.delay(n)
                worst = max(worst, (n, self.delay(n)))
        return worst

    def ok(self, *keys: str) -> None:
        with self._lock:
            for k in keys:
                self._fails.pop(k, None)
                self._until.pop(k, None)


THROTTLE = Throttle()


def _client() -> str:
    try:
        return st.context.ip_address or "an unknown address"
    except Exception:  # noqa: BLE001 - no context (bare mode): one shared key
        return "an unknown address"


def _session_key() -> str:
    if "_gate_session" not in st.session_state:
        st.session_state["_gate_session"] = os.urandom(8).hex()
    return "session:" + st.session_state["_gate_session"]


def too_short(want: str) -> Optional[str]:
    """The line that refuses a secret shorter than MIN_LENGTH, else None."""
    if len(want) >= MIN_LENGTH:
        return None
    return (f"${ENV} is {len(want)} character{'s' if len(want) != 1 else ''} long: the gate needs at least "
            f"{MIN_LENGTH}, since a short secret is guessed in seconds. Set a longer one (e.g. the output of "
            "`python -c 'import secrets; print(secrets.token_urlsafe(18))'`) and restart; no page opens until then.")


def passed() -> bool:
    """True when no secret is configured or this session has given it; otherwise
    draws the sign-in form and returns False (the caller stops: no page runs)."""
    want = secret()
    if not want or st.session_state.get("_gate_ok"):
        return True
    st.markdown("### SpeedLab")
    short = too_short(want)
    if short:
        log.error("gate: %s", short)
        st.error(short, icon=":material/lock:")
        return False
    client = _client()
    keys = (_session_key(), "address:" + client)
    with st.form("gate"):
        given = st.text_input("Access secret", type="password", key="_gate_secret",
                              help=f"This dashboard is served with ${ENV} set: ask whoever runs it")
        ok = st.form_submit_button("Open", icon=":material/lock_open:")
    if ok:
        wait = THROTTLE.wait_s(*keys)
        if wait > 0:  # not even compared: a guess during the wait counts for nothing
            st.error(f"Too many wrong secrets: try again in {wait:,.0f} s.", icon=":material/timer:")
            return False
        if hmac.compare_digest(given.encode(), want.encode()):
            THROTTLE.ok(*keys)
            st.session_state["_gate_ok"] = True
            st.rerun()
        n, wait = THROTTLE.fail(*keys)
        log.warning("gate: wrong secret at %s UTC from %s (failure %d; next try in %.0f s)",
                    time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()), client, n, wait)
        st.error("That is not the access secret." + (f" Try again in {wait:,.0f} s." if wait else ""),
                 icon=":material/lock:")
    return False
