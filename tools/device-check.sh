#!/usr/bin/env bash
# Every GPU check in one call on the device machine (H200):
#   configure (cmake --preset device), build (16 jobs), ctest -L gpu, the device checks of
#   gpu-sparse / gpu-mask against the reference of their own path and against each other on
#   smoke, edge, edge-r2, sglang-test, decode, numerics and chunk-256k (256 sampled rows), the same through the CLI
#   (generate / run / compare) where this build has it, compute-sanitizer memcheck on the edge
#   batch, and the per-kernel timing table of chunk-256k, printed last.
# Usage (repo root):  tools/device-check.sh [STAGE...]
#   stages: build ctest check check-256k cli memcheck timing  (default: all, in that order;
#   given stages run in the order given); also readme (the README's two commands, offline),
#   sanitize (compute-sanitizer racecheck and initcheck on smoke), profile (Nsight Compute,
#   DSA_PROFILE_KERNELS), record (tools/record-gpu-fixture.sh) and bench (`dsa-harness bench`
#   with the torch peer, its reports and tools/bench-table.py's table in $OUT/bench; contexts and
#   rows from DSA_BENCH_CONTEXTS / DSA_BENCH_ROWS), bench-decode (the decode preset's step, in
#   $OUT/bench-decode) and micro (bench/micro's DSA_MICRO, built and run), run only when named
# Logs go to $OUT (the device tool's output folder; ./out/device-check elsewhere): summary.txt,
# timings.md and logs.tgz (every stage's full log).
set -uo pipefail
cd "$(dirname "$0")/.."
# The build takes DSA_GIT_COMMIT only as 12 to 40 hex digits (CMakeLists.txt) and otherwise names
# the copy's own, possibly stale, .git commit in every report: refuse before building.
if [[ -n "${DSA_GIT_COMMIT:-}" && ! "$DSA_GIT_COMMIT" =~ ^[0-9a-f]{12,40}$ ]]; then
  echo "device-check: DSA_GIT_COMMIT='$DSA_GIT_COMMIT' is not 12 to 40 hex digits (git rev-parse --short=12 HEAD)" >&2
  exit 2
fi
OUT=${OUT:-$PWD/out/device-check}
LOGS=$(mktemp -d)
mkdir -p "$OUT"
B=${DSA_BUILD_DIR:-build-device}  # DSA_BUILD_DIR=build reuses the README build (then skip the build stage)
STAGES=${*:-build ctest check check-256k cli memcheck timing}
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }
finish() { tar -czf "$OUT/logs.tgz" -C "$LOGS" --exclude='*.h5' . 2>/dev/null; }
trap finish EXIT
# stage NAME LIMIT_S COMMAND...: runs with a time limit, logs to $LOGS/NAME.log, notes the result.
stage() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  note "$(printf '%-28s rc=%-3s %4ss' "$name" "$rc" $((SECONDS - t0)))"
  finish  # logs come back even if a later stage runs past the call's limit
  return $rc
}

{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,memory.total \
    --format=csv
  nvcc --version | tail -2
  cmake --version | head -1
} >"$LOGS/environment.log" 2>&1
note "== device-check $(date -u +%FT%TZ) on $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>/dev/null)"

do_build() {
  tools/stamp-sources.sh "$B"  # sources put back to older contents rebuild (run 142)
  stage configure 120 cmake --preset device || { tail -30 "$LOGS/configure.log"; exit 1; }
  stage build 420 cmake --build --preset device -j 16 --target test_gpu test_gpu_devices dsa_gpu_sparse_plugin ||
    { grep -E "error|Error" "$LOGS/build.log" | head -40; exit 1; }
  stage build-cli 300 cmake --build --preset device -j 16 --target dsa-harness  # optional: the cli stage
}

do_ctest() {
  stage ctest-gpu 400 ctest --preset device -L gpu --output-on-failure
  grep -E "tests passed|Failed|Skipped|\*\*\*" "$LOGS/ctest-gpu.log" | head -20 | tee -a "$SUMMARY"
}

CHECK="device check: gpu paths against the reference on a preset"
do_check() {
  for p in smoke edge edge-r2 sglang-test decode numerics; do
    DSA_CHECK_PRESET=$p stage "check-$p" 240 "$B/tests/test_gpu" "$CHECK"
    grep -E "^  gpu-|failed:|passed|FAILED" "$LOGS/check-$p.log" | head -12 | tee -a "$SUMMARY"
  done
}
do_check-256k() {
  DSA_CHECK_PRESET=chunk-256k DSA_CHECK_ROWS=256 stage check-chunk-256k 420 "$B/tests/test_gpu" "$CHECK"
  grep -E "^  gpu-|failed:|passed|FAILED" "$LOGS/check-chunk-256k.log" | head -12 | tee -a "$SUMMARY"
}

do_cli() {
  if "$B/dsa-harness" run --help 2>&1 | grep -q -- "--impl"; then
    H="$B/dsa-harness"
    for p in edge sglang-test; do
      stage "cli-generate-$p" 120 "$H" generate --preset "$p" --seed 0 -o "$LOGS/$p.h5"
      stage "cli-run-$p" 300 "$H" run "$LOGS/$p.h5" --impl reference-sparse,reference-mask,gpu-sparse,gpu-mask \
        --scores -o "$LOGS/$p-results.h5"
      stage "cli-compare-$p-sparse" 120 "$H" compare "$LOGS/$p.h5" "$LOGS/$p-results.h5" --impl gpu-sparse --against reference-sparse
      stage "cli-compare-$p-mask" 120 "$H" compare "$LOGS/$p.h5" "$LOGS/$p-results.h5" --impl gpu-mask --against reference-mask
      stage "cli-compare-$p-public" 120 "$H" compare "$LOGS/$p.h5" "$LOGS/$p-results.h5" --impl gpu-sparse --against gpu-mask
      rm -f "$LOGS/$p.h5" "$LOGS/$p-results.h5"
    done
  else
    note "cli: 'dsa-harness run' not in this build yet; in-process checks above cover the comparison"
  fi
}

do_memcheck() {
  if ! command -v compute-sanitizer >/dev/null; then
    note "memcheck: compute-sanitizer not found"
    return
  fi
  local p
  for p in ${DSA_MEMCHECK_PRESETS:-edge}; do
    DSA_CHECK_PRESET=$p stage "memcheck-$p" 400 compute-sanitizer --tool memcheck --error-exitcode 9 \
      "$B/tests/test_gpu" "$CHECK"
    grep -E "ERROR SUMMARY|Invalid|passed|failed" "$LOGS/memcheck-$p.log" | head -8 | tee -a "$SUMMARY"
  done
}

# The README's two commands as a new user runs them on the (offline) GPU box: the main job must
# run the GPU implementations (not "not run"), the test command every test, gpu label included.
do_readme() {
  stage readme-run-main 600 tools/run-main.sh
  grep -E "gpu-|passed|not run|INCORRECT" "$LOGS/readme-run-main.log" | tail -12 | tee -a "$SUMMARY"
  stage readme-test 900 tools/test.sh
  grep -E "tests passed|Skipped|Failed|\*\*\*|Not Run" "$LOGS/readme-test.log" | head -20 | tee -a "$SUMMARY"
}

# compute-sanitizer's race and initialisation checkers on the smoke batch (both implementations).
do_sanitize() {
  for tool in racecheck initcheck; do
    DSA_CHECK_PRESET=smoke stage "$tool-smoke" 150 compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$B/tests/test_gpu" "$CHECK"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$LOGS/$tool-smoke.log" | head -6 | tee -a "$SUMMARY"
  done
}

do_timing() {
  DSA_CHECK_PRESET=chunk-256k DSA_CHECK_TABLE="$OUT/timings.md" stage timing-chunk-256k 500 \
    "$B/tests/test_gpu" "device check: per-kernel timings over all rows"
  {
    echo
    echo "command: DSA_CHECK_PRESET=chunk-256k $B/tests/test_gpu \"device check: per-kernel timings over all rows\""
    cat "$LOGS/environment.log"
  } >>"$OUT/timings.md" 2>/dev/null
  echo
  sed -n '/per-kernel timings/,$p' "$LOGS/timing-chunk-256k.log" | grep -E "^\||timings" | tee -a "$SUMMARY"
}

# Nsight Compute on the kernels matching DSA_PROFILE_KERNELS (a regex over the demangled names,
# template arguments included, e.g. 'select_topk_kernel<\(int\)16'; default the main ones of the
# sparse path): the first DSA_PROFILE_COUNT (8) matching launches of the chunk-256k timing run, in
# launch order, full sections with source counters, as text, .ncu-rep and the SASS page's summary
# by tools/ncu-sass-summary.py (phases, stalls, hottest instructions).
# DSA_PROFILE_COUNT counts every launch the regex matches, in launch order, and the timing run
# repeats each kernel (warm-ups and samples) right after its first launch: a regex naming several
# kernels spends the count on the first one's repeats (run 94). So DSA_PROFILE_KERNELS takes
# several regexes separated by ';', each profiled in its own ncu run (the count applies to each):
# outputs profile-1.txt, profile-sass-1.md, ... (one regex: profile.txt, profile-sass.md as before).
do_profile() {
  local all=${DSA_PROFILE_KERNELS:-"dense_wgmma_kernel|block_amax_kernel|select_topk|sparse_split_kernel"}
  local res i=0 suffix
  IFS=';' read -r -a res <<<"$all"
  for re in "${res[@]}"; do
    i=$((i + 1))
    suffix=$([[ ${#res[@]} -gt 1 ]] && echo "-$i" || echo "")
    profile_one "$re" "$suffix"
  done
}

profile_one() {
  local re=$1 suffix=$2
  DSA_CHECK_PRESET=chunk-256k DSA_CHECK_SAMPLES=1 DSA_CHECK_PATHS=${DSA_PROFILE_PATHS:-sparse} stage "ncu$suffix" 560 \
    ncu --clock-control none --set full --import-source yes --kernel-name-base demangled --kernel-name "regex:$re" \
    --launch-count "${DSA_PROFILE_COUNT:-8}" -f -o "$OUT/profile$suffix" \
    "$B/tests/test_gpu" "device check: per-kernel timings over all rows"
  if [[ ! -f $OUT/profile$suffix.ncu-rep ]]; then
    # Run 115 lost two profiles to 'select_topk_kernel<16': demangled names spell (int)16.
    note "profile$suffix: the regex '$re' matched no launch (names are demangled with their template" \
      "arguments, e.g. 'select_topk_kernel<\\(int\\)16'): nothing profiled"
    return 1
  fi
  ncu --import "$OUT/profile$suffix.ncu-rep" --page details >"$OUT/profile$suffix.txt" 2>&1
  ncu --import "$OUT/profile$suffix.ncu-rep" --page source --csv --print-source sass 2>/dev/null |
    gzip >"$LOGS/sass$suffix.csv.gz"
  python3 tools/ncu-sass-summary.py "$LOGS/sass$suffix.csv.gz" >"$OUT/profile-sass$suffix.md" 2>>"$SUMMARY"
  grep -E "^  [a-z_]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy" \
    "$OUT/profile$suffix.txt" | head -60 | tee -a "$SUMMARY"
}

# gpu-sparse and gpu-mask recorded on the bundled fixtures (tools/record-gpu-fixture.sh): the
# files come back under $OUT/fixtures/recorded/, to be committed. Set DSA_GIT_COMMIT when this
# tree's .git is stale, so the files name the right commit.
do_record() {
  stage record 300 tools/record-gpu-fixture.sh "$B/dsa-harness"
  tail -4 "$LOGS/record.log" | tee -a "$SUMMARY"
}

# Ceilings, both paths across contexts and the PyTorch peer in one run; the generated batches stay
# in $LOGS (not brought back).
do_bench() {
  local contexts=${DSA_BENCH_CONTEXTS:-16384,65536,131072,262144} rows=${DSA_BENCH_ROWS:-2048}
  stage bench 590 "$B/dsa-harness" bench --contexts "$contexts" --rows "$rows" --peer torch -o "$LOGS/bench"
  mkdir -p "$OUT/bench"
  cp "$LOGS/bench/"report.* "$LOGS/bench/"torch-*.json* "$OUT/bench/" 2>/dev/null
  tail -3 "$LOGS/bench.log" | tee -a "$SUMMARY"
  python3 tools/bench-table.py "$OUT/bench/report.json" >"$OUT/bench/table.md" 2>>"$SUMMARY" &&
    tee -a "$SUMMARY" <"$OUT/bench/table.md"
}

# The decode step (issue 12 item 4: within 2x its floor): 64 requests x 2 rows at up to 131072
# positions, no peer; report and table in $OUT/bench-decode.
do_bench-decode() {
  stage bench-decode 300 "$B/dsa-harness" bench --preset decode --contexts 131072 --rows 2 -o "$LOGS/bench-decode"
  mkdir -p "$OUT/bench-decode"
  cp "$LOGS/bench-decode/"report.* "$OUT/bench-decode/" 2>/dev/null
  python3 tools/bench-table.py "$OUT/bench-decode/report.json" >"$OUT/bench-decode/table.md" 2>>"$SUMMARY" &&
    grep -E "^\| whole" "$OUT/bench-decode/table.md" | tee -a "$SUMMARY"
}

# Micro-benchmarks (bench/micro/NAME.cu, DSA_MICRO: names separated by spaces, default the two
# that time the next routes of level one and of the consumer's step), each built with the flags
# every one of them takes and run with a time limit (DSA_MICRO_LIMIT, 120 s); the output in
# $OUT/micro-NAME.txt and the summary. Needs no build stage: nvcc alone.
do_micro() {
  local name
  for name in ${DSA_MICRO:-level_one_rate sparse_stage_rate}; do
    if [[ ! -f bench/micro/$name.cu ]]; then
      note "micro-$name: no bench/micro/$name.cu"
      continue
    fi
    stage "micro-$name-build" 240 nvcc -std=c++17 -O3 -I. -Iinclude --expt-relaxed-constexpr \
      -gencode arch=compute_90a,code=sm_90a "bench/micro/$name.cu" -o "$LOGS/$name" || continue
    stage "micro-$name" "${DSA_MICRO_LIMIT:-120}" "$LOGS/$name"
    cp "$LOGS/micro-$name.log" "$OUT/micro-$name.txt"
    tail -8 "$LOGS/micro-$name.log" | tee -a "$SUMMARY"
  done
}

for st in $STAGES; do "do_$st"; done
