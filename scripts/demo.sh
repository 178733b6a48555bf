#!/usr/bin/env bash
# Install everything, then run the demo experiment on the built-in corpus; results in runs/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1} HF_HUB_OFFLINE=1
source scripts/portable-kernels.sh  # same kernels on every x86-64 CPU with AVX2 (README: Same seed, same numbers)
.venv/bin/vpeval --experiment experiments/demo.yaml "$@"
