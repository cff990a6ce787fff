"""The Train page (its entry is train.py, which app.py routes to: the file name is the URL, /train), one module per concern."""
