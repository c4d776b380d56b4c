#!/usr/bin/env bash
# tools/record-gpu-fixture.sh in a scratch copy of the tree, with the CPU references standing in
# for gpu-sparse and gpu-mask (DSA_RECORD_IMPLS): it writes fixtures/recorded/X.h5 that pass
# tests/fixtures/test_recorded_fixtures.sh; recorded outputs that fail leave fixtures/ untouched.
# Usage: test_record_gpu_fixture.sh BINARY SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$tmp/tools" "$tmp/fixtures"
cp "$src/tools/record-gpu-fixture.sh" "$tmp/tools/"
cp "$src"/fixtures/*.h5 "$tmp/fixtures/"

# A defect recorded: the check replay fails, exit 1, and nothing lands in fixtures/.
rc=0
OUT=$tmp/out DSA_RECORD_FIXTURES=smoke DSA_RECORD_IMPLS=mutant:page-index-off-by-one,reference-mask "$tmp/tools/record-gpu-fixture.sh" "$bin" \
  >"$tmp/bad.log" 2>&1 || rc=$?
[[ $rc == 1 ]] || { cat "$tmp/bad.log"; fail "a recorded defect: exit $rc, expected 1"; }
grep -q "nothing written to fixtures/" "$tmp/bad.log" || fail "a recorded defect: no message"
[[ ! -e $tmp/fixtures/recorded && ! -e $tmp/out ]] || fail "a recorded defect left fixtures/recorded/ or \$OUT behind"

# Two of the three fixtures keep it short; a ratio-1 and a ratio-2 batch.
OUT=$tmp/out DSA_RECORD_FIXTURES="smoke edge-r2" DSA_RECORD_IMPLS=reference-sparse,reference-mask \
  "$tmp/tools/record-gpu-fixture.sh" "$bin" >"$tmp/ok.log" 2>&1 || { cat "$tmp/ok.log"; fail "stand-in recording exited $?"; }
for x in smoke edge-r2; do
  [[ -f $tmp/fixtures/recorded/$x.h5 ]] || fail "fixtures/recorded/$x.h5 not written"
  cmp -s "$tmp/fixtures/recorded/$x.h5" "$tmp/out/fixtures/recorded/$x.h5" || fail "\$OUT/fixtures/recorded/$x.h5 is not the copy"
done
[[ $(grep -c "^output: *gpu-sparse (reference-sparse, cpu: .*recorded by dsa-harness" "$tmp/ok.log") == 2 ]] ||
  fail "the script did not print what it recorded, once per fixture"
grep -q "passed" "$tmp/ok.log" || fail "the script did not print the check replay's verdict"
bash "$src/tests/fixtures/test_recorded_fixtures.sh" "$bin" "$tmp/fixtures" --stand-ins || fail "the stand-in fixtures do not pass"
echo "ok"
