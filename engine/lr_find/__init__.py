"""The LR range test (Smith 2017, "Cyclical Learning Rates for Training Neural
Networks", arXiv:1506.01186): the learning rate swept up exponentially, the loss
smoothed, and a max LR suggested for one-cycle.

- range_test: the sweep, smoothing, suggestion and its detached background job (no
  TensorFlow);
- worker: the worker process that trains through the sweep
  (``python -m engine.lr_find.worker``); the UI never imports it.

`python -m engine lr-find` (engine.cli.lr_find), the Train page and the autopilot use it.
Layer: a feature (docs/architecture.md).
"""
