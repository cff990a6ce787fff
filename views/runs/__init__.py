"""The Runs page (its entry is runs.py, which app.py routes to: the file name is the URL, /runs), one module per section."""
