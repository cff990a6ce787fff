"""A user model's check (`python -m engine.training.user_model check`) answered in this test
process, for tests that already hold Keras and whose point is the run, not the check's process
(a fresh process costs a Keras import, ~5 CPU-s): `in_process(monkeypatch)` makes
`engine.config.preflight` get the check's JSON line from the same `_check_main` in here.
`tests/test_user_model.py::test_cli_says_what_it_checks_then_refuses_a_bad_model_before_queueing`
still starts the real process."""
from __future__ import annotations

import contextlib
import io
import json


def _check_here(c, shape: tuple, classes: int, timeout_s: float) -> dict:
    """preflight._run_check's answer for `c.model`, built here under float32 (the check's policy)."""
    import keras

    from engine.training import user_model

    out = io.StringIO()
    policy = keras.mixed_precision.dtype_policy().name
    keras.mixed_precision.set_dtype_policy("float32")
    try:
        with contextlib.redirect_stdout(out):
            user_model._check_main(c.model, ",".join(map(str, shape)), str(classes))
    finally:
        keras.mixed_precision.set_dtype_policy(policy)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def in_process(monkeypatch) -> None:
    """Answer every model check of this test in this process (see the module's docstring)."""
    from engine.config import preflight

    monkeypatch.setattr(preflight, "_run_check", _check_here)
