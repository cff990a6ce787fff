"""The autopilot: searches the speed-up options for the shortest wall time to a target
accuracy, confirms the winner against the baseline and explains it.

- search: the search itself (trials as queued runs, the confirmation, the ablation) and
  its detached background job;
- space: the search space the hardware verdicts allow, and what each trial changes;
- charts: its Plotly figures (styled by engine.charts.style).

No TensorFlow in this package: trials are runs of the queue (engine.jobs.runner), each
in its own worker process. `python -m engine autopilot` (engine.cli.autopilot) and the
Autopilot page drive it. Layer: a feature (docs/architecture.md); it may use the LR range
test (engine.lr_find) and everything below the CLI.
"""
