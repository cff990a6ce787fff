"""The quick benchmark: which speed-up options help on this machine, and by how much.

- quick: the matrix of option combinations, the interleaved repeats, the summary with a
  95% interval and verdict per option, and its detached background job (no TensorFlow);
- worker: the worker process that runs the cells of one device layout
  (``python -m engine.bench.worker``); the UI never imports it.

`python -m engine bench --quick` (engine.cli.bench) and the Hardware page drive it.
Layer: a feature (docs/architecture.md).
"""
