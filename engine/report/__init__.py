"""Report: the numbers computed from stored metrics only (no TF, no Plotly): measure (steady
state, speedup arithmetic), stats (intervals and verdicts), comparison (a comparison's
result), compare (one pair), table (runs as a DataFrame, the one number format), mfu, replay
(what a stored run showed at replay time t). The worker uses these too; the charts drawn from
them are engine.charts.

Layer: see docs/architecture.md, the one list of layer rules (tests/test_imports.py enforces it).
"""
