#!/usr/bin/env bash
# tools/device-variants.sh in a scratch git repository, with a stand-in cmake (it records the
# tree each build sees) and a stand-in test_gpu (it writes a timing table naming the tree's
# marker and the variable DSA_TEST_KNOB): a folder variant and a patch variant each build with
# their own files and only those, an env: variant times the tree's files with its variable set,
# a file a variant adds is gone afterwards, the tree is restored and built again last (a later
# stage must not time a variant's binary), the summary holds every variant's rows, and a patch
# that does not apply, or a malformed env: variant, is refused before anything runs.
# Usage: test_device_variants.sh SOURCE_DIR
set -uo pipefail
src=$1
source "$(dirname "$0")/scratch_repo.sh"

repo=$tmp/repo
mkdir -p "$repo/tools" "$repo/gpu" "$tmp/build/tests" "$tmp/bin"
cp "$src/tools/device-variants.sh" "$src/tools/stamp-sources.sh" "$repo/tools/"
echo "marker tree" >"$repo/gpu/kernel.cu"
echo "helper tree" >"$repo/gpu/helper.cuh"
scratch_commit "$repo"

# Variant "folder": kernel.cu replaced, a new file added.
mkdir -p "$tmp/folder/gpu/extra"
echo "marker folder" >"$tmp/folder/gpu/kernel.cu"
echo "new" >"$tmp/folder/gpu/extra/new.cuh"
# Variant "patch": helper.cuh changed, as a diff with a header line.
(cd "$repo" && echo "helper patch" >gpu/helper.cuh && { echo "An attempt's header."; echo; git diff; } >"$tmp/patch.diff" &&
  git checkout -q gpu/helper.cuh) || fail "could not write the patch"

cat >"$tmp/bin/cmake" <<'STUB'
#!/usr/bin/env bash
{ cat gpu/kernel.cu gpu/helper.cuh; ls gpu/extra 2>/dev/null; echo ---; } >>"$STATES"
STUB
cat >"$tmp/build/tests/test_gpu" <<'STUB'
#!/usr/bin/env bash
echo "| gpu-sparse/k | 24 | 1 | $(cut -d' ' -f2 gpu/kernel.cu)-$(cut -d' ' -f2 gpu/helper.cuh)-${DSA_TEST_KNOB:-unset} |" >"$DSA_CHECK_TABLE"
echo "| gpu-sparse/j | 28 | 1 | other |" >>"$DSA_CHECK_TABLE"
echo "| gpu-mask/k | 24 | 1 | mask |" >>"$DSA_CHECK_TABLE"
STUB
chmod +x "$tmp/bin/cmake" "$tmp/build/tests/test_gpu"

export STATES=$tmp/states.txt PATH=$tmp/bin:$PATH
(cd "$repo" && OUT=$tmp/out DSA_BUILD_DIR=$tmp/build DSA_VARIANT_ROUNDS=1 DSA_VARIANT_KERNEL='sparse/k|sparse/j' \
  tools/device-variants.sh "$tmp/folder" "$tmp/patch.diff" \
  env:DSA_TEST_KNOB=7) \
  >"$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; fail "device-variants exited $?"; }

expected='marker tree
helper tree
---
marker folder
helper tree
new.cuh
---
marker tree
helper patch
---
marker tree
helper tree
---
marker tree
helper tree
---'
[[ $(cat "$STATES") == "$expected" ]] || { cat "$STATES"; fail "a build saw the wrong files"; }
summary=$(grep -F "gpu-sparse/k" "$tmp/out/variants/summary.md")
for row in tree-tree-unset folder-tree-unset tree-patch-unset tree-tree-7; do
  grep -q -- "| $row |" <<<"$summary" || fail "the summary lacks the row $row"
done
# The pattern is an extended regex: both alternatives picked (run 144's fixed-string grep picked none), nothing else.
[[ $(grep -c -F "| gpu-sparse/j |" "$tmp/out/variants/summary.md") == 4 ]] || fail "the summary lacks the pattern's second alternative"
! grep -q -F "gpu-mask/k" "$tmp/out/variants/summary.md" || fail "the summary holds a row the pattern does not match"
grep -q "== patch, round 1" "$tmp/out/variants/summary.md" || fail "the patch variant is not named after its file"
grep -q "== env-DSA_TEST_KNOB=7, round 1" "$tmp/out/variants/summary.md" || fail "the env variant is not named after its variable"
[[ $(cd "$repo" && git status --porcelain) == "" ]] || { (cd "$repo" && git status --short); fail "the tree was not restored"; }

# A patch that does not apply: refused, exit 2, no build.
: >"$STATES"
echo "not a patch for this tree" >"$tmp/bad.diff"
printf 'diff --git a/gpu/none.cu b/gpu/none.cu\n--- a/gpu/none.cu\n+++ b/gpu/none.cu\n@@ -1 +1 @@\n-a\n+b\n' >>"$tmp/bad.diff"
rc=0
(cd "$repo" && OUT=$tmp/out2 DSA_BUILD_DIR=$tmp/build tools/device-variants.sh "$tmp/bad.diff") >"$tmp/bad.log" 2>&1 || rc=$?
[[ $rc == 2 ]] || { cat "$tmp/bad.log"; fail "a patch that does not apply: exit $rc, expected 2"; }
[[ ! -s $STATES ]] || fail "a patch that does not apply still built"

# A malformed env: variant: refused the same way.
rc=0
(cd "$repo" && OUT=$tmp/out3 DSA_BUILD_DIR=$tmp/build tools/device-variants.sh "env:no value") >"$tmp/env.log" 2>&1 || rc=$?
[[ $rc == 2 ]] || { cat "$tmp/env.log"; fail "a malformed env: variant: exit $rc, expected 2"; }
[[ ! -s $STATES ]] || fail "a malformed env: variant still built"
echo "ok"
