"""Training: what runs inside a worker process (TensorFlow is imported inside these
modules only): devices and strategies, models, schedules, transfer, multi-worker,
the training loop (train; what it builds in build, what it reports in summary) and the
measuring recorder.

May import: config, errors, store, lr_math, cluster, transfer_source, data, report.measure, hardware.machine.
Never jobs or cli.
"""
