"""Jobs: processes and orchestration (no TF in the caller): the run queue (runner,
queue_runner), the run worker's entry point (worker), comparisons, the transfer demo and
detached background jobs (background). The features built on them are packages of their
own: engine.autopilot, engine.bench, engine.lr_find.

Layer: see docs/architecture.md, the one list of layer rules (tests/test_imports.py enforces it).
"""
