"""Training: what runs inside a worker process (TensorFlow is imported inside these
modules only): devices and strategies, models, schedules, transfer, multi-worker,
the training loop (train; what it builds in build, what it reports in summary) and the
measuring recorder.

Layer: see docs/architecture.md, the one list of layer rules (tests/test_imports.py enforces it).
"""
