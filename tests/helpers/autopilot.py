"""Autopilot test inputs: the digits baseline it searches from, and the machine facts of a
CPU box and a GPU box (engine.hardware.machine.quick_facts' shape)."""
from engine.config import RunConfig

DIGITS = RunConfig(dataset="digits", model="cnn", batch_size=128, epochs=20, target_accuracy=0.95,
                   stop_at_target=True)


def cpu_facts(bf16=True) -> dict:
    return {"host": {"cpu_flags": ["avx512_bf16"] if bf16 else []}, "gpus": [], "tpu": {"cores": 0}}


def gpu_facts(n=4, cc=(8, 0)) -> dict:
    return {"host": {"cpu_flags": []}, "gpus": [{"name": f"GPU {i}", "compute_capability": list(cc)}
                                               for i in range(n)], "tpu": {"cores": 0}}
