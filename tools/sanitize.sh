#!/usr/bin/env bash
# The CPU tests (ctest label cpu, except those labelled no-asan: tests/CMakeLists.txt says why)
# built with AddressSanitizer + UndefinedBehaviorSanitizer: the
# asan preset (gcc, -O1, unity build, LeakSanitizer at exit, any UBSan report fatal) in
# build-asan/, HDF5's own bugs on corrupted files suppressed by tools/asan.supp and
# tools/lsan.supp (docs/fuzzing.md). CI runs it after tools/test.sh.
# Exit 0: every test passed; otherwise ctest's failure (the sanitizer's report is in the output).
# Usage: tools/sanitize.sh [ctest arguments, e.g. -R test_batch]
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
cmake --preset asan >/dev/null
cmake --build --preset asan --parallel "$(nproc)"
built=$SECONDS
rc=0
ctest --preset asan --parallel "$(nproc)" "$@" || rc=$?
echo "sanitize: build $((built - start)) s, tests $((SECONDS - built)) s: $([[ $rc == 0 ]] && echo "no sanitizer report, every sanitized cpu test passed" || echo "FAILED (exit $rc)")"
exit "$rc"
