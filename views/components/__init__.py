"""What more than one page draws: presenter mode (`?mode=talk`), a comparison's headline and
pair chart (comparison), the live charts and speedup panel (live_charts, headline), the
limits (limits), links' settings (url_params) and shared helpers (common). No module
here imports a page; pages import from here, never from each other."""
