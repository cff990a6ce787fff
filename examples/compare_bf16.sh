#!/usr/bin/env bash
# A two-command comparison: the float32 and the bf16 version of examples/train_with_callback.py
# (digits, SpeedLabCallback), run as interleaved pairs AB, BA, ... with the same
# SPEEDLAB_SEED on both sides of a pair. Prints the speedup with its interval, the verdict,
# the split into throughput and convergence, and the seeds that reached the target.
#
#   bash examples/compare_bf16.sh            # 3 pairs, 3 epochs each side
#   PAIRS=5 EPOCHS=5 bash examples/compare_bf16.sh --json
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
PAIRS="${PAIRS:-3}"
EPOCHS="${EPOCHS:-3}"
exec "$PY" -m engine pairs \
    --baseline-cmd "$PY examples/train_with_callback.py --epochs $EPOCHS" \
    --cmd "$PY examples/train_with_callback.py --epochs $EPOCHS --bf16" \
    --pairs "$PAIRS" "$@"
