"""Hardware: what this machine has. machine reads /proc, nvidia-smi and the environment
(no TF); probe runs in a subprocess with TF; verdicts turns the facts into one verdict per speed option.

Layer: see docs/architecture.md, the one list of layer rules (tests/test_imports.py enforces it).
"""
