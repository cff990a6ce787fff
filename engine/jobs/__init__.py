"""Jobs: processes and orchestration (no TF in the caller): the run queue (runner,
queue_runner), the worker entry points (worker, bench_worker, lr_find_worker), the
quick benchmark, the LR range test, the transfer demo, the autopilot and detached background jobs.

May import every stage below it (config, data, training, report, hardware, store). Never cli.
"""
