"""Charts: Plotly figures drawn from stored metrics and engine.report's numbers (no TF).

`style` is the one style every chart module uses (colours, fonts, layout, shared helpers);
then one module per page: `train`, `runs`, `hardware`, `presenter` (presenter mode), `mfu`,
`comparison` (the autopilot's are in engine.autopilot.charts). Only the pages and the
autopilot's charts import this package; the worker never does.

Layer: see docs/architecture.md, the one list of layer rules (tests/test_imports.py enforces it).
"""
