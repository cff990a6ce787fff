"""Command line (``python -m engine ...``): main builds the parser and dispatches; each
subcommand lives in its own module with `add_parser(sub)`; common holds the shared flags and output.

May import anything in engine. Nothing imports the CLI except engine.__main__.
"""
