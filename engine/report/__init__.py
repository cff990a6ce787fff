"""Report: numbers and charts computed from stored metrics only (no TF): measure
(steady state, speedup arithmetic), compare, table (runs as a DataFrame, the one number format),
charts (Plotly, presenter styling), replay (what a stored run showed at replay time t).

May import: config, errors, store. Never training, jobs or cli.
"""
