#!/usr/bin/env bash
# The libFuzzer targets (tests/fuzz: the batch reader + validator, the report.json reader of gate
# and merge): builds the fuzz preset (clang, ASan + UBSan) and runs each target SECONDS (default
# 50) from its committed seed corpus. Exit 0: no finding; 1: a finding (crash, sanitizer report,
# escaping exception, allocation beyond the budget; the input is kept under
# build-fuzz/tests/fuzz/fuzz-artifacts/); 77: this machine has no clang with libFuzzer (the
# reason is printed; tools/install-deps.sh installs it when DSA_WITH_FUZZ=1).
# Usage: tools/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-50}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: SECONDS must be a positive integer, not '$seconds'" >&2; exit 4; }

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <cstdint>\n#include <cstddef>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' >"$probe/f.cpp"
if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: skipped: no clang++ on PATH (Debian package clang; DSA_WITH_FUZZ=1 tools/install-deps.sh)"
  exit 77
fi
if ! clang++ -fsanitize=fuzzer,address,undefined "$probe/f.cpp" -o "$probe/f" >"$probe/log" 2>&1; then
  echo "fuzz: skipped: clang++ cannot link libFuzzer with ASan + UBSan (Debian package libclang-rt-dev):"
  tail -3 "$probe/log"
  exit 77
fi
cmake --preset fuzz -DDSA_FUZZ_SECONDS="$seconds" >/dev/null
cmake --build --preset fuzz
ctest --preset fuzz --parallel 2  # both targets at once: each runs SECONDS of wall time on one core
