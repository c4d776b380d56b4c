#!/usr/bin/env bash
# tools/stamp-sources.sh in a scratch git repository: the first run records and touches nothing; a
# tracked file whose content changed behind an old time stamp gets a fresh one, and so does one put
# back to its earlier content (the case that kept a variant's object on the device, run 142); a file
# whose content stayed keeps its old time stamp.
# Usage: test_stamp_sources.sh SOURCE_DIR
set -uo pipefail
src=$1
source "$(dirname "$0")/scratch_repo.sh"

repo=$tmp/repo build=$tmp/build
mkdir -p "$repo/tools" "$repo/gpu"
cp "$src/tools/stamp-sources.sh" "$repo/tools/"
echo "tree" >"$repo/gpu/kernel.cu"
echo "same" >"$repo/gpu/other.cu"
scratch_commit "$repo"
old=200001010000
stamp() { (cd "$repo" && tools/stamp-sources.sh "$build") || fail "stamp-sources.sh exited $?"; }
is_old() { [[ $(stat -c %Y "$repo/gpu/$1") == $(date -d 2000-01-01 +%s) ]]; }

touch -t $old "$repo/gpu/kernel.cu" "$repo/gpu/other.cu"
stamp
[[ -f $build/.source-sums ]] || fail "no record in the build folder"
is_old kernel.cu && is_old other.cu || fail "the first run touched a file"

echo "variant" >"$repo/gpu/kernel.cu"
touch -t $old "$repo/gpu/kernel.cu"
stamp
is_old kernel.cu && fail "a changed file behind an old time stamp was not touched"
is_old other.cu || fail "an unchanged file was touched"

echo "tree" >"$repo/gpu/kernel.cu"  # back to the content the record's predecessor built
touch -t $old "$repo/gpu/kernel.cu"
stamp
is_old kernel.cu && fail "a file put back to its earlier content was not touched"

touch -t $old "$repo/gpu/kernel.cu"
stamp
is_old kernel.cu || fail "a file whose content stayed since the last run was touched"
echo "stamp-sources: all checks passed"
