#!/usr/bin/env bash
# The CUDA paths on a real GPU, each asserted against the profiler's own events (under 8
# minutes): benchmarks/gpu_check.py. Without a GPU: --dry-run checks the same assertions on
# the recorded GPU traces of ../shared/corpus/gpu-profiles.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-.venv/bin/python}"
if [ "${1:-}" != "--dry-run" ] && ! "$PY" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    echo "gpu_check: no CUDA device here (run it where one is lent, or pass --dry-run)" >&2
    exit 2
fi
exec timeout 480 "$PY" benchmarks/gpu_check.py "$@"
