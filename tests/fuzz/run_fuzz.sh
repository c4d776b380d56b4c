#!/usr/bin/env bash
# One libFuzzer target for SECONDS from its committed seed corpus, with the budgets that make an
# oversized allocation a finding: any single allocation above 512 MiB (-malloc_limit_mb), or the
# process above 2 GiB (-rss_limit_mb), while the harness's own memory budget is 256 MiB
# (DSA_MEMORY_BUDGET), so a hostile shape must be refused by the reader long before libFuzzer's
# limits. New inputs go to a scratch corpus, never into the repository; a finding is kept in
# $DSA_FUZZ_ARTIFACTS (default: the build folder's fuzz-artifacts/) and fails the test.
# Usage: run_fuzz.sh TARGET SEED_CORPUS SECONDS
set -euo pipefail
target=$1 seeds=$2 seconds=$3
[[ -x $target ]] || { echo "run_fuzz: $target not built (cmake --preset fuzz)"; exit 77; }
[[ -d $seeds ]] && compgen -G "$seeds/*" >/dev/null || { echo "run_fuzz: no seed corpus in $seeds" >&2; exit 1; }
name=$(basename "$target")
artifacts=${DSA_FUZZ_ARTIFACTS:-$(dirname "$target")/fuzz-artifacts}/$name
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DSA_MEMORY_BUDGET=256M TMPDIR=$work
# allocator_may_return_null=1: as without ASan, an impossible request returns NULL (HDF5 reports
# that as an error); a request that could succeed and exceeds -malloc_limit_mb is a finding.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir "$work/corpus"
set +e
"$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$work/corpus" "$seeds" >"$work/log" 2>&1
rc=$?
set -e
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
echo "run_fuzz: $name: ${runs:-?} executions in $SECONDS s (of ${seconds} s asked), exit $rc, corpus $(ls "$work/corpus" | wc -l) inputs"
if ((rc != 0)); then
  tail -60 "$work/log"
  echo "run_fuzz: $name: FINDING, input kept in $artifacts (rerun: $target $artifacts/<file>)"
  exit 1
fi
