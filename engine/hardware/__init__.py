"""Hardware: what this machine has. machine reads /proc, nvidia-smi and the environment
(no TF); probe runs in a subprocess with TF; verdicts turns the facts into one verdict per speed option.

May import: errors, store, process. Never data, training, jobs, report or cli.
"""
