"""Command line (``python -m engine ...``): main builds the parser and dispatches; each
subcommand lives in its own module with `add_parser(sub)`; common holds the shared flags and output.

Layer: see docs/architecture.md, the one list of layer rules (tests/test_imports.py enforces it).
"""
