"""Report: numbers and charts computed from stored metrics only (no TF): measure
(steady state, speedup arithmetic), compare, table (runs as a DataFrame), charts (Plotly).

May import: config, errors, store. Never training, jobs or cli.
"""
