"""The settings matrix the composition tests train through (tests/test_build.py, on TensorFlow
and on JAX): precision x label smoothing x mixup x replicas.

The full product is 24 combinations; these 9 are an all-pairs cover of it (every value of
each setting meets every value of each other setting at least once; Kuhn et al., "Software
fault interactions and implications for software testing", IEEE TSE 2004: most faults need
two settings to meet). The first four are float32 on one device for every smoothing x mixup,
the reference each combination's first loss is compared with; the two rows with float16 or
bfloat16, mixup and 2 replicas keep the triple most likely to break (loss scaling or a
narrow dtype with mixed targets across replicas).
"""
from __future__ import annotations

import itertools

SETTINGS = {"precision": ("float32", "mixed_float16", "mixed_bfloat16"), "eps": (0.0, 0.1),
            "alpha": (0.0, 0.2), "replicas": (1, 2)}

COMBINATIONS = (
    ("float32", 0.0, 0.0, 1), ("float32", 0.0, 0.2, 1), ("float32", 0.1, 0.0, 1), ("float32", 0.1, 0.2, 1),
    ("mixed_float16", 0.0, 0.2, 2), ("mixed_float16", 0.1, 0.0, 1),
    ("mixed_bfloat16", 0.1, 0.2, 2), ("mixed_bfloat16", 0.0, 0.0, 1),
    ("float32", 0.1, 0.0, 2),
)


def uncovered_pairs(combinations=COMBINATIONS) -> list[tuple]:
    """The pairs of setting values that no combination holds ((name, value), (name, value))."""
    names = list(SETTINGS)
    seen = {((names[i], c[i]), (names[j], c[j])) for c in combinations
            for i, j in itertools.combinations(range(len(names)), 2)}
    return [((a, va), (b, vb)) for a, b in itertools.combinations(names, 2)
            for va in SETTINGS[a] for vb in SETTINGS[b] if ((a, va), (b, vb)) not in seen]
