#!/usr/bin/env bash
# Times variants of the GPU sources against the tree's own in one device call, interleaved
# (run-to-run spread on the H200 is about 3 % for sparse_logits, 1 ms for dense_logits, so
# variants are only compared within a call: bench/results/h200.md).
# Usage (repo root, after tools/device-check.sh build or with DSA_BUILD_DIR set):
#   tools/device-variants.sh VARIANT...
#     VARIANT  a folder holding full copies of the files it changes at their paths in the tree
#              (e.g. scratch/v/fast/gpu/sparse_logits/sparse_wgmma.cu); its name names it in the
#              output. The tree as it is runs too, as "tree".
#   DSA_VARIANT_ROUNDS (2)    each variant runs this many times, interleaved with the others
#   DSA_VARIANT_KERNEL        a pattern picked from each timing table for the summary (default:
#                             every gpu-sparse row)
#   DSA_BUILD_DIR (build-device), DSA_JOBS (16): the build
# For each run: test_gpu rebuilt, then the chunk-256k timing table (DSA_CHECK_TABLE) in
# $OUT/variants/NAME-ROUND.md, and the build's ptxas performance warnings (C75xx: a serialised
# wgmma cost about 5 % in runs 91-92) in $OUT/variants/NAME.ptxas. The tree's files are restored
# at the end, also on failure. Timing only: check a variant's bits with tools/device-check.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 1 ]]; then
  sed -n '2,19p' "$0" >&2
  exit 2
fi
for v in "$@"; do [[ -d $v ]] || { echo "device-variants: $v: not a folder" >&2; exit 2; }; done
B=${DSA_BUILD_DIR:-build-device}
OUT=${OUT:-out/device-check}
rounds=${DSA_VARIANT_ROUNDS:-2}
pattern=${DSA_VARIANT_KERNEL:-gpu-sparse/}
dir=$OUT/variants
mkdir -p "$dir"

# Every file some variant changes, saved as the tree has it: the "tree" variant.
mapfile -t paths < <(for v in "$@"; do (cd "$v" && find . -type f | sed 's|^\./||'); done | sort -u)
for p in "${paths[@]}"; do [[ -f $p ]] || { echo "device-variants: $p: not in the tree" >&2; exit 2; }; done
saved=$(mktemp -d)
for p in "${paths[@]}"; do mkdir -p "$saved/$(dirname "$p")" && cp "$p" "$saved/$p"; done
restore() { for p in "${paths[@]}"; do cp "$saved/$p" "$p"; done; }
trap 'restore; rm -rf "$saved"' EXIT

names=(tree)
dirs=("$saved")
for v in "$@"; do
  names+=("$(basename "$v")")
  dirs+=("$v")
done

for ((r = 1; r <= rounds; r++)); do
  for i in "${!names[@]}"; do
    name=${names[$i]}
    restore
    (cd "${dirs[$i]}" && find . -type f -exec cp {} "$OLDPWD/{}" \;)
    if ! cmake --build "$B" -j "${DSA_JOBS:-16}" --target test_gpu >"$dir/$name.build.log" 2>&1; then
      echo "$name: build failed ($dir/$name.build.log)"
      continue
    fi
    grep -E "C75[0-9][0-9]" "$dir/$name.build.log" | sort -u >"$dir/$name.ptxas"
    [[ -s $dir/$name.ptxas ]] && echo "$name: ptxas performance warnings ($dir/$name.ptxas)"
    DSA_CHECK_PRESET=chunk-256k DSA_CHECK_TABLE="$dir/$name-$r.md" \
      "$B/tests/test_gpu" "device check: per-kernel timings over all rows" >"$dir/$name-$r.log" 2>&1 ||
      echo "$name round $r: the timing run failed ($dir/$name-$r.log)"
  done
done

# Summary: the picked rows of every table, by variant and round.
for name in "${names[@]}"; do
  for ((r = 1; r <= rounds; r++)); do
    [[ -f $dir/$name-$r.md ]] || continue
    echo "== $name, round $r"
    grep -F -- "$pattern" "$dir/$name-$r.md"
  done
done | tee "$dir/summary.md"
