#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and replays the bundled fixtures
# through every implementation this machine can run, plus the GPU outputs recorded on the H200 in
# fixtures/recorded/ when that is committed (recorded:gpu-sparse, recorded:gpu-mask; replay's
# default inputs). Extra arguments go to `replay`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
source tools/cuda-path.sh
cmake --preset default >/dev/null
cmake --build --preset default --parallel "$(nproc)" --target dsa-harness
exec build/dsa-harness replay "$@"
