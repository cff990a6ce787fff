"""Wait for a condition in a test, with a deadline (no framework, no browser: any lane)."""
from __future__ import annotations

import time


def wait_for(predicate, timeout_s: float, what: str, poll_s: float = 0.5):
    """`predicate()`'s first truthy value, polled every `poll_s` s. Raises: AssertionError naming
    `what` after `timeout_s` s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
