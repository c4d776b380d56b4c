#!/usr/bin/env bash
# Regenerates the committed fixtures (see fixtures/README.md) with `dsa-harness generate`.
# Usage: tools/make-fixtures.sh [path/to/dsa-harness]    (default: build/dsa-harness)
# The same generator gives byte-identical files, so a clean rerun leaves git status unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build/dsa-harness}"
if [ ! -x "$bin" ]; then
  echo "make-fixtures: $bin not found; build it first: cmake --build --preset default --target dsa-harness" >&2
  exit 4
fi
for preset in smoke edge edge-r2; do
  "$bin" generate --preset "$preset" --seed 1 -o "fixtures/$preset.h5"
done
ls -l fixtures/*.h5
