#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs the whole test suite.
# GPU tests (label gpu) exit 77 without a GPU and show as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
source tools/cuda-path.sh
cmake --preset default >/dev/null
cmake --build --preset default --parallel "$(nproc)"  # all cores (2 on CI, 16 on the GPU box)
ctest --preset default --parallel "$(nproc)" "$@"  # tests on every core; GPU tests one at a time (RESOURCE_LOCK gpu)
