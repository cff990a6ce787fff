"""Report: numbers and charts computed from stored metrics only (no TF): measure
(steady state, speedup arithmetic), compare, table (runs as a DataFrame, the one number format),
the charts (Plotly): chart_style, the one style every chart module uses (colours, fonts,
layout, shared helpers), and one module per page (train_charts, runs_charts,
hardware_charts, presenter_charts for presenter mode, mfu_charts, comparison_charts),
replay (what a stored run showed at replay time t).

Layer: see docs/architecture.md, the one list of layer rules (tests/test_imports.py enforces it).
"""
