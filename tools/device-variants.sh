#!/usr/bin/env bash
# Times variants of the GPU sources against the tree's own in one device call, interleaved
# (run-to-run spread on the H200 is about 3 % for sparse_logits, 1 ms for dense_logits, so
# variants are only compared within a call: bench/results/h200.md).
# Usage (repo root, after tools/device-check.sh build or with DSA_BUILD_DIR set):
#   tools/device-variants.sh VARIANT...
#     VARIANT  a folder holding full copies of the files it changes at their paths in the tree
#              (e.g. scratch/v/fast/gpu/sparse_logits/sparse_wgmma.cu), or a patch for `git apply`
#              (a .diff, e.g. bench/results/attempts/X-unverified.diff: its header text is
#              skipped); its name (without .diff) names it in the output; or env:NAME=VALUE[,...]
#              (the tree's build timed with those environment variables, e.g.
#              env:DSA_SOURCE_CHUNK_ROWS=2048; named env-NAME=VALUE...). The tree as it is runs
#              too, as "tree".
#   DSA_VARIANT_ROUNDS (2)    each variant runs this many times, interleaved with the others
#   DSA_VARIANT_KERNEL        an extended regex (grep -E) picked from each timing table for the
#                             summary, e.g. 'dense_logits|sparse_logits' (default: every gpu-sparse
#                             row; run 144's summaries were empty: a fixed-string grep took the | literally)
#   DSA_BUILD_DIR (build-device), DSA_JOBS (16): the build
# For each run: test_gpu rebuilt, then the chunk-256k timing table (DSA_CHECK_TABLE) in
# $OUT/variants/NAME-ROUND.md, and the build's ptxas performance warnings (C75xx: a serialised
# wgmma cost about 5 % in runs 91-92) in $OUT/variants/NAME.ptxas. The tree's files are restored
# at the end, also on failure, and test_gpu is built from them again, so a later stage of the same
# call times the tree, not the last variant (run 102 timed a variant's binary that way). Timing
# only: check a variant's bits with tools/device-check.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 1 ]]; then
  sed -n '2,23p' "$0" >&2
  exit 2
fi
env_re='^env:[A-Za-z_][A-Za-z0-9_]*=[^,]*(,[A-Za-z_][A-Za-z0-9_]*=[^,]*)*$'
for v in "$@"; do
  if [[ $v == env:* ]]; then
    [[ $v =~ $env_re ]] || { echo "device-variants: $v: not env:NAME=VALUE[,NAME=VALUE...]" >&2; exit 2; }
    continue
  fi
  [[ -d $v || ($v == *.diff && -f $v) ]] || { echo "device-variants: $v: not a folder, a .diff or env:..." >&2; exit 2; }
  [[ -d $v ]] || git apply --check "$v" || { echo "device-variants: $v does not apply to the tree" >&2; exit 2; }
done
B=${DSA_BUILD_DIR:-build-device}
OUT=${OUT:-out/device-check}
rounds=${DSA_VARIANT_ROUNDS:-2}
pattern=${DSA_VARIANT_KERNEL:-gpu-sparse/}
dir=$OUT/variants
mkdir -p "$dir"

# Every file some variant changes or adds, saved as the tree has it (a file a patch adds is
# removed again): the "tree" variant.
touched() {
  if [[ $1 == env:* ]]; then
    return
  elif [[ -d $1 ]]; then (cd "$1" && find . -type f | sed 's|^\./||'); else git apply --numstat "$1" | cut -f3; fi
}
mapfile -t paths < <(for v in "$@"; do touched "$v"; done | sort -u)
saved=$(mktemp -d)
for p in "${paths[@]}"; do [[ -f $p ]] && mkdir -p "$saved/$(dirname "$p")" && cp "$p" "$saved/$p"; done
restore() { for p in "${paths[@]}"; do if [[ -f $saved/$p ]]; then cp "$saved/$p" "$p"; else rm -f "$p"; fi; done; }
build() { tools/stamp-sources.sh "$B" && cmake --build "$B" -j "${DSA_JOBS:-16}" --target test_gpu; }
# The tree's files back, and its build: whatever runs next in the call times the tree.
finish() {
  restore
  rm -rf "$saved"
  build >"$dir/tree-final.build.log" 2>&1 || echo "device-variants: the tree's rebuild failed ($dir/tree-final.build.log)" >&2
}
trap finish EXIT
# Puts variant $1 over the restored tree (an env: variant changes no file).
apply() {
  if [[ $1 == env:* ]]; then
    return
  elif [[ -d $1 ]]; then (cd "$1" && find . -type f -exec cp --parents {} "$OLDPWD/" \;); else git apply "$1"; fi
}

names=(tree)
variants=("")
for v in "$@"; do
  if [[ $v == env:* ]]; then
    n="env-${v#env:}"
    n=${n//[^A-Za-z0-9_=.-]/-}
  else
    n=$(basename "$v")
    n=${n%.diff}
  fi
  names+=("$n")
  variants+=("$v")
done
# The environment variables of variant $1, one NAME=VALUE a line.
variant_env() { [[ $1 == env:* ]] && tr ',' '\n' <<<"${1#env:}"; }

for ((r = 1; r <= rounds; r++)); do
  for i in "${!names[@]}"; do
    name=${names[$i]}
    restore
    if [[ -n ${variants[$i]} ]] && ! apply "${variants[$i]}"; then
      echo "$name: could not be applied"
      continue
    fi
    if ! build >"$dir/$name.build.log" 2>&1; then
      echo "$name: build failed ($dir/$name.build.log)"
      continue
    fi
    grep -E "C75[0-9][0-9]" "$dir/$name.build.log" | sort -u >"$dir/$name.ptxas"
    [[ -s $dir/$name.ptxas ]] && echo "$name: ptxas performance warnings ($dir/$name.ptxas)"
    mapfile -t extra < <(variant_env "${variants[$i]}")
    env "${extra[@]}" DSA_CHECK_PRESET=chunk-256k DSA_CHECK_TABLE="$dir/$name-$r.md" \
      "$B/tests/test_gpu" "device check: per-kernel timings over all rows" >"$dir/$name-$r.log" 2>&1 ||
      echo "$name round $r: the timing run failed ($dir/$name-$r.log)"
  done
done

# Summary: the picked rows of every table, by variant and round.
for name in "${names[@]}"; do
  for ((r = 1; r <= rounds; r++)); do
    [[ -f $dir/$name-$r.md ]] || continue
    echo "== $name, round $r"
    grep -E -- "$pattern" "$dir/$name-$r.md"
  done
done | tee "$dir/summary.md"
