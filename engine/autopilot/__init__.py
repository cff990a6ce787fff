"""The autopilot: searches the speed-up options for the shortest wall time to a target
accuracy, confirms the winner against the baseline and explains it.

- search: the search itself (the Autopilot class: trials as queued runs, the runoff, the
  confirmation, the ablation); confirm: the confirmation and the ablation as stored
  comparisons; settings: its check and its seeds; watch: one run followed
  and pruned; peak_lr: one-cycle's peak LR; explain: the ablation in words; job: the
  detached background job the Autopilot page follows;
- space: the search space the hardware verdicts allow, and what each trial changes;
- charts: its Plotly figures (styled by engine.charts.style).

No TensorFlow in this package: trials are runs of the queue (engine.jobs.runner), each
in its own worker process. `python -m engine autopilot` (engine.cli.autopilot) and the
Autopilot page drive it. Layer: a feature (docs/architecture.md); it may use the LR range
test (engine.lr_find) and everything below the CLI.
"""
