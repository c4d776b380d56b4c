#!/usr/bin/env bash
# Regenerates the committed golden outputs of the references on the committed fixtures:
# fixtures/golden/X.results.h5 for X in smoke, edge, edge-r2. tests/harness/impls/test_golden.cpp reruns
# the references in-process and requires these files bit for bit, so run this only when a
# reference change is intended, and say why in the commit that updates them.
# Usage: tools/make-golden.sh [path/to/dsa-harness]   (default: build/dsa-harness)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/dsa-harness}
[[ -x "$bin" ]] || { echo "make-golden: $bin not found (build the dsa-harness target first)" >&2; exit 4; }
mkdir -p fixtures/golden
for x in smoke edge edge-r2; do
  "$bin" run "fixtures/$x.h5" --impl reference-sparse,reference-mask,reference-exact --scores \
    -o "fixtures/golden/$x.results.h5"
done
ls -l fixtures/golden
