"""The Hardware page (its entry is hardware.py, which app.py routes to: the file name is the URL,
/hardware), one module per section: probe, noise, benchmark."""
