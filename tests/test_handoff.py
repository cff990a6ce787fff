"""One handoff to the Train page (views/components/handoff.py): the Autopilot, Hardware and
Presets all go through it; what it hands over is exactly what differs from the defaults."""
from __future__ import annotations

from pathlib import Path

from engine.config import RunConfig
from views.components import handoff

ROOT = Path(__file__).resolve().parents[1]


def test_differing_names_every_field_a_winner_changed_and_nothing_else():
    cfg = RunConfig(backend="jax", ema_momentum=0.9, tta="translate", batch_size=128, epochs=12).to_dict()
    # batch_size 128 is the default: not handed over; epochs 12 is not; a JAX run always compiles with XLA.
    assert handoff.differing(cfg) == {"backend": "jax", "jit_compile": True, "ema_momentum": 0.9, "tta": "translate",
                                      "epochs": 12}


def test_query_params_spell_values_as_the_url_does():
    assert handoff.query_params({"jit_compile": True, "scale_lr": False, "learning_rate": 0.004,
                                 "synthetic_shape": (8, 8, 1)}) == {
        "jit_compile": "true", "scale_lr": "false", "learning_rate": "0.004", "synthetic_shape": "8,8,1"}


def test_no_page_opens_the_train_page_but_through_the_handoff():
    callers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "views").rglob("*.py")
                     if "switch_page(" in p.read_text() and p.name != "handoff.py")
    assert callers == []
    users = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "views").rglob("*.py") if "handoff." in p.read_text())
    assert users == ["views/autopilot.py", "views/hardware/benchmark.py", "views/train/presets.py"]
