"""The hardware verdict the pages show for one option: a test oracle over
engine.hardware.verdicts (the pages draw each verdict's reason; the tests look one up)."""
from __future__ import annotations

from engine.hardware import verdicts


def option_hint(facts: dict, option: str, device: str = "auto") -> str:
    """One line for the Train page, e.g. "this CPU has native bf16 (avx512_bf16):
    expect faster". `option` is one of OPTIONS, 'float32' or 'jit_compile'."""
    if option == "float32":
        return "float32: the baseline precision, runs everywhere"
    option = {"jit_compile": "xla", "devices": "multi_device"}.get(option, option)
    for v in verdicts.verdicts(facts, device):
        if v["option"] == option:
            return v["reason"]
    raise ValueError(f"option {option!r}: use one of {', '.join(verdicts.OPTIONS)}, float32")
