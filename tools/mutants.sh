#!/usr/bin/env bash
# Mutation run over the verdict's rules: each mutant below is a one-line weakening of the rule
# code (a threshold loosened, a check skipped, a missing output let through). It is applied to
# a copy of the tracked tree, built CPU-only (only the test program that should catch it), and
# the named tests must then FAIL. A mutant that survives means a rule can be weakened without
# any test noticing: the run exits 1 and names it. A mutant whose line is no longer in the code
# also exits 1, so the list follows the code when it moves.
#   tools/mutants.sh            # all mutants; work folder ./build-mutants (DSA_MUTANTS_DIR)
#   tools/mutants.sh 3 5        # only mutants 3 and 5
set -euo pipefail
shopt -u patsub_replacement 2>/dev/null || true  # bash 5.2: '&' in a replacement stays '&'
cd "$(dirname "$0")/.."
root=$PWD
work=${DSA_MUTANTS_DIR:-$root/build-mutants}
src=$work/src
build=$work/build
jobs=${DSA_MUTANTS_JOBS:-$(nproc)}  # all cores, like tools/test.sh

names=() files=() olds=() news=() programs=() filters=()
# mutant DESCRIPTION FILE OLD NEW PROGRAM TESTS: OLD must occur exactly once in FILE.
mutant() {
  names+=("$1") files+=("$2") olds+=("$3") news+=("$4") programs+=("$5") filters+=("$6")
}
mutant "floor tolerance 2^-5 -> 2^-4" core/rules.cpp \
  'const double kFloorTolerance = 1.0 / 32;' 'const double kFloorTolerance = 1.0 / 16;' \
  test_compare "selection floor: a pick below the floor and a missed high candidate"
mutant "public agreement 0.95 -> 0.90" core/rules.cpp \
  'const double kPublicAgreement = 0.95;' 'const double kPublicAgreement = 0.90;' \
  test_compare "public agreement inside compare: 487 of 512 picks pass"
mutant "tail overlap 0.98 -> 0.90" core/rules.cpp \
  'const double kPublicTailOverlap = 0.98;' 'const double kPublicTailOverlap = 0.90;' \
  test_compare "tail overlap: a tail at exactly 98 % passes"
mutant "own-path exactness 100 % -> 99 %" core/rules.cpp \
  'const double kOwnPathExact = 1.0;' 'const double kOwnPathExact = 0.99;' \
  test_compare "own path: one changed pick in 10000 is already a failure"
mutant "validity minimum 100 % -> 50 %" core/rules.cpp \
  'const double kValidityMinimum = 1.0;' 'const double kValidityMinimum = 0.5;' \
  test_compare "picks and blocks far outside the row fail validity and never reach the page table"
mutant "floor metric: slack doubled" harness/compare/metrics.cpp \
  'if (sp < floor - slack) {' 'if (sp < floor - 2 * slack) {' \
  test_compare "selection floor: a pick below the floor and a missed high candidate"
mutant "agreement metric: 1 % grace" harness/compare/metrics.cpp \
  'if (agreement >= threshold) continue;' 'if (agreement + 0.01 >= threshold) continue;' \
  test_compare "public agreement inside compare: 487 of 512 picks pass"
mutant "bitwise scores: missing or truncated rows skipped" harness/compare/metrics.cpp \
  'if (got != want) {' 'if (false) {' \
  test_compare "bitwise scores: a missing or truncated row fails"
mutant "public test: floor not judged" harness/compare/compare.cpp \
  'add(lc, floor, "floor", true);' 'add(lc, floor, "floor", false);' \
  test_compare "public test: reference sparse path against the mask path"
mutant "compare skips the last layer" harness/compare/compare.cpp \
  'for (const Layer& layer : batch.layers) {' 'for (const Layer& layer : batch.layers) { if (&layer == &batch.layers.back()) continue;' \
  test_compare "a reference passes against itself on every layer"
mutant "a layer missing on the implementation's side is 'not run'" harness/compare/compare.cpp \
  'out.layers.push_back(uncompared(id, role_name(layer.role), Disposition::incorrect, "layer "' \
  'out.layers.push_back(uncompared(id, role_name(layer.role), Disposition::not_run, "layer "' \
  test_compare "an output the reference recorded and the implementation did not is incorrect"
mutant "missing blocks are 'not run'" harness/compare/compare.cpp \
  'out.layers.push_back(uncompared("blocks", "blocks", Disposition::incorrect,' \
  'out.layers.push_back(uncompared("blocks", "blocks", Disposition::not_run,' \
  test_compare "an output the reference recorded and the implementation did not is incorrect"
mutant "a missing tail table passes" harness/compare/compare.cpp \
  'else out.layers.push_back(uncompared(id + "/tail",' 'else if (false) out.layers.push_back(uncompared(id + "/tail",' \
  test_compare "a consumer without its tail table is incorrect"
mutant "rows the implementation left out pass" harness/compare/compare.cpp \
  '  if (missed.empty()) return {};' '  if (true) return {};' \
  test_compare "a row asked for that the reference did and the implementation left out is incorrect"
mutant "--repeat never compares the repeats" harness/replay/batch_run.cpp \
  'for (int i = 1; i < opt_.repeat; ++i) {' 'for (int i = 1; i < 1; ++i) {' \
  test_replay "replay --repeat: a planted nondeterministic implementation is caught"
# The hand-worked batch's pages of 8 positions lie in reverse order, so the lookup of the page
# before reads another page's keys at every page start (0.01 s; the model sweep took 43 s, twice).
mutant "reference: page lookup off by one position" reference/scores.hpp \
  'return pool + int64_t(table[p / page_size]) * page_size * kSlotBytes;' \
  'return pool + int64_t(table[(p - 1) / page_size]) * page_size * kSlotBytes;' \
  test_impls "hand-worked batch: blocks"

selected=("$@")
if ((${#selected[@]} == 0)); then selected=($(seq 1 ${#names[@]})); fi

# ---- a copy of the tree (tracked and not ignored files): only files whose content differs
# are copied (with a new mtime), so a second run rebuilds only what changed and never keeps a
# mutated object ----
mkdir -p "$src"
while IFS= read -r -d '' f; do
  cmp -s "$f" "$src/$f" || { mkdir -p "$src/$(dirname "$f")"; cp "$f" "$src/$f"; }
done < <(git ls-files -z --cached --others --exclude-standard)
# -O0 (no -g): the named tests are small, and the clean copy builds in about 90 s instead of 145 s
# at -O3 on CI's two cores.
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_C_FLAGS_DEBUG=-O0 \
  -DDSA_CUDA=OFF -DDSA_BENCH=OFF >/dev/null

# Replaces the one occurrence of $2 in file $1 by $3 (plain text, no patterns).
replace_once() {
  local file=$1 old=$2 new=$3 text
  text=$(<"$file")
  local rest=${text#*"$old"}
  if [[ "$rest" == "$text" ]]; then echo "mutants: '$old' not found in $file" >&2; return 1; fi
  if [[ "${rest#*"$old"}" != "$rest" ]]; then echo "mutants: '$old' occurs more than once in $file" >&2; return 1; fi
  printf '%s\n' "${text/"$old"/"$new"}" >"$file"
}

build_target() { cmake --build "$build" -j "$jobs" --target "$1" >"$work/build.log" 2>&1; }
# TESTS is a test-name prefix (Catch reads commas as "or": names here have none). A filter that
# matches no test fails (--warn NoTests), so the clean run below catches a stale name instead of
# a mutant "surviving" an empty run.
run_tests() { (cd "$build/tests" && "./$1" --order lex --warn NoTests "$2*" >"$work/test.log" 2>&1); }

start=$SECONDS
echo "mutants: building the clean copy (CPU only)"
for program in $(printf '%s\n' "${programs[@]}" | sort -u); do
  build_target "$program" || { tail -30 "$work/build.log"; exit 1; }
done
# The clean code must pass every test named below, or a "killed" mutant proves nothing.
for i in "${selected[@]}"; do
  k=$((i - 1))
  run_tests "${programs[$k]}" "${filters[$k]}" || { echo "mutants: clean code fails '${filters[$k]}'" >&2; tail -30 "$work/test.log"; exit 1; }
done

survived=0
printf '| # | mutant | file | test that must fail | result |\n|---|---|---|---|---|\n'
for i in "${selected[@]}"; do
  k=$((i - 1))
  file=$src/${files[$k]}
  replace_once "$file" "${olds[$k]}" "${news[$k]}" || exit 1
  if ! build_target "${programs[$k]}"; then
    tail -20 "$work/build.log"
    echo "mutants: mutant $i does not build" >&2
    exit 1
  fi
  if run_tests "${programs[$k]}" "${filters[$k]}"; then result="SURVIVED"; survived=$((survived + 1)); else result="killed"; fi
  printf '| %d | %s | %s | %s: "%s" | %s |\n' "$i" "${names[$k]}" "${files[$k]}" "${programs[$k]}" "${filters[$k]}" "$result"
  cp "$root/${files[$k]}" "$file"  # a new mtime: the next build recompiles the clean file
done
echo "mutants: ${#selected[@]} run, $survived survived, $((SECONDS - start)) s"
((survived == 0))
