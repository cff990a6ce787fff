#!/usr/bin/env bash
# Installs what the tests need and runs them (the README's test command; .ci/run calls it).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv 2>/dev/null || {
    # Debian ships venv separately.
    [ "$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv .venv
  }
fi
.venv/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
# The browser test drives Debian's Chromium; without it that one test is skipped.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "note: could not install chromium; the browser test will be skipped"
fi
# Lint first (pyproject.toml [tool.ruff]: real defects only); a finding fails the command.
.venv/bin/ruff check .
# Unused code fails too (pyproject.toml [tool.vulture]; what only a framework calls: tests/helpers/vulture_whitelist.py).
.venv/bin/vulture
# --fast: the unit lane (no TensorFlow, no processes; about a minute), for use while working.
# Otherwise the whole suite on three test processes (pytest-xdist), in lane order (tests/conftest.py):
# page tests first, then the long browser and worker tests. Three on two cores: the tests wait on
# workers, servers and browsers, and two left the cores 12% idle (docs/testing.md, "Suite time").
if [ "${1:-}" = "--fast" ]; then
  shift
  exec .venv/bin/python -m pytest -q -p no:xdist -m unit "$@"
fi
exec .venv/bin/python -m pytest -q -n 3 "$@"
