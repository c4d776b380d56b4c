#!/usr/bin/env bash
# Records gpu-sparse and gpu-mask on the bundled fixtures, so a machine without a GPU still replays
# GPU outputs: fixtures/recorded/X.h5 is fixtures/X.h5 (the same batch, the same batch ID) plus
# /outputs/gpu-sparse and /outputs/gpu-mask, each naming the GPU, the harness commit and the date.
# `dsa-harness replay` with no inputs (tools/run-main.sh) then replays fixtures/recorded/X.h5 in
# place of fixtures/X.h5 and reports recorded:gpu-sparse and recorded:gpu-mask against the references.
#
# Run on the GPU box from the repo root, after a build (cmake --preset device or the README build):
#   tools/record-gpu-fixture.sh [path/to/dsa-harness]     (default: build-device/, else build/)
# DSA_RECORD_FIXTURES names the fixtures (default: smoke edge edge-r2, the main command's three).
# DSA_RECORD_IMPLS (tests only) records other implementations under the GPU names: CI runs this
# script in a scratch tree with the CPU references standing in; their device attribute says cpu.
# The copies are written to a scratch folder, replayed there (every case must pass) and only then
# moved into fixtures/recorded/; then commit them. With $OUT set (the device tool's output folder,
# as in tools/device-check.sh) they are also copied to $OUT/fixtures/recorded/, since the device
# machine's tree does not come back. Exit 4 when there is no binary or no usable GPU, 1 when the
# recorded outputs do not pass (nothing is written into fixtures/ or $OUT then).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-}
if [[ -z $bin ]]; then
  for b in build-device/dsa-harness build/dsa-harness; do
    if [[ -x $b ]]; then bin=$b; break; fi
  done
fi
[[ -n $bin && -x $bin ]] || { echo "record-gpu-fixture: no dsa-harness binary (build first, or pass its path)" >&2; exit 4; }
fixtures=${DSA_RECORD_FIXTURES:-smoke edge edge-r2}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
impls=recorded:gpu-sparse,recorded:gpu-mask
for x in $fixtures; do
  # record refuses up front (exit 4) when gpu-sparse or gpu-mask cannot run here.
  "$bin" record "fixtures/$x.h5" --impl "${DSA_RECORD_IMPLS:-gpu-sparse,gpu-mask}" --as gpu-sparse,gpu-mask \
    -o "$scratch/$x.h5"
done
if ! "$bin" replay "$scratch" --impl "$impls" -o "$scratch/report" >"$scratch/replay.log" 2>&1; then
  cat "$scratch/replay.log" >&2
  echo "record-gpu-fixture: the recorded GPU outputs do not pass against the references; nothing written to fixtures/" >&2
  exit 1
fi
mkdir -p fixtures/recorded
for x in $fixtures; do
  mv "$scratch/$x.h5" "fixtures/recorded/$x.h5"
done
if [[ -n ${OUT:-} ]]; then
  mkdir -p "$OUT/fixtures/recorded"
  for x in $fixtures; do cp "fixtures/recorded/$x.h5" "$OUT/fixtures/recorded/"; done
  echo "copied to $OUT/fixtures/recorded/"
fi
echo
tail -n 1 "$scratch/replay.log"
for x in $fixtures; do
  ls -l "fixtures/recorded/$x.h5"
  "$bin" inspect "fixtures/recorded/$x.h5" | grep '^output:' | sed 's/: rows_done.*; recorded by/: ... recorded by/'
done
echo "next: git add fixtures/recorded && git commit (then 'dsa-harness replay' shows recorded:gpu-sparse and recorded:gpu-mask)"
