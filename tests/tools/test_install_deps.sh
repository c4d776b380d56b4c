#!/usr/bin/env bash
# tools/install-deps.sh in a sandbox (ctest test_install_deps): stub dpkg-query, apt-get and sudo
# first on PATH, the package manager failing as it does offline.
#  1. Everything present, but dpkg lists nothing and cmake comes from elsewhere on PATH (as from
#     pip, conda or Kitware): exit 0, the package manager never called, the probe ran that cmake.
#  2. A header genuinely missing (CMake's search root hides nlohmann/json.hpp and its package
#     config): exit 4, naming the header and its package, and nothing else as missing.
#  3. The cmake on PATH older than cmake_minimum_required: exit 4, naming it, install attempted.
#  4. DSA_WITH_FUZZ=1 and a clang++ that cannot link libFuzzer: named as optional (package clang),
#     install attempted, exit 0 (only tools/fuzz.sh needs it); without DSA_WITH_FUZZ: not asked.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
# KEEP=1 keeps the sandbox (stubs, logs, output) for a look after a failure.
trap '[[ -n ${KEEP:-} ]] || rm -rf "$tmp"' EXIT
fail() { echo "test_install_deps: FAILED: $*" >&2; exit 1; }

stubs=$tmp/stubs elsewhere=$tmp/elsewhere/bin
mkdir -p "$stubs" "$elsewhere"
printf '#!/bin/sh\nexit 1\n' >"$stubs/dpkg-query"  # "not installed", whatever is asked
for tool in apt-get apt sudo; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/package-manager.log"\nexit 100\n' "$tool" "$tmp" >"$stubs/$tool"
done
real_cmake=$(command -v cmake) || fail "no cmake on PATH to stand in for one from elsewhere"
printf '#!/bin/sh\necho "$*" >>"%s/cmake.log"\nexec "%s" "$@"\n' "$tmp" "$real_cmake" >"$elsewhere/cmake"
chmod +x "$stubs"/* "$elsewhere/cmake"

sandbox() {  # runs install-deps.sh with the stubs (and $front before all); output in $tmp/out, exit code echoed
  local rc=0
  env -u DSA_WITH_BROWSER -u DSA_WITH_SLURM -u DSA_WITH_FUZZ PATH="${front:+$front:}$stubs:$elsewhere:$PATH" "$@" "$repo/tools/install-deps.sh" >"$tmp/out" 2>&1 || rc=$?
  echo "$rc"
}

# ---- 1. nothing missing
rc=$(sandbox)
[[ $rc == 0 ]] || { cat "$tmp/out" >&2; fail "case 1: exit $rc, expected 0"; }
[[ ! -e $tmp/package-manager.log ]] || fail "case 1: the package manager was called: $(cat "$tmp/package-manager.log")"
grep -q "deps-probe" "$tmp/cmake.log" 2>/dev/null || fail "case 1: the probe did not run the cmake found on PATH"
echo "case 1 passed: exit 0, package manager not called, probe ran $elsewhere/cmake"

# ---- 2. nlohmann/json.hpp missing: a search root mirroring / without it
root=$tmp/root
mirror_dir() {  # turns $root$1 into a real directory of symlinks to $1's entries
  local d=$1 m=$root$1 e
  [[ -L $m ]] && rm "$m"
  [[ -d $m ]] && return 0
  mkdir -p "$m"
  for e in "$d"/* "$d"/.[!.]*; do [[ -e $e || -L $e ]] && ln -s "$e" "$m/"; done
  return 0
}
hide() {  # hides one path of the real system from $root
  local path=$1 d="" part
  IFS=/ read -ra parts <<<"${path#/}"
  for part in "${parts[@]:0:${#parts[@]}-1}"; do d="$d/$part"; mirror_dir "$d"; done
  rm -f "$root$path"
}
hidden=0
for p in /usr/include/nlohmann /usr/local/include/nlohmann \
         /usr/share/cmake/nlohmann_json* /usr/lib/cmake/nlohmann_json* /usr/lib/*/cmake/nlohmann_json* \
         /usr/local/share/cmake/nlohmann_json* /usr/local/lib/cmake/nlohmann_json*; do
  [[ -e $p ]] && { hide "$p"; hidden=$((hidden + 1)); }
done
((hidden > 0)) || fail "case 2: nlohmann/json.hpp is not installed here, nothing to hide"
cat >"$tmp/hide.cmake" <<CMAKE
set(CMAKE_FIND_ROOT_PATH "$root")
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
CMAKE
rm -f "$tmp/package-manager.log"
rc=$(sandbox CMAKE_TOOLCHAIN_FILE="$tmp/hide.cmake")
[[ $rc == 4 ]] || { cat "$tmp/out" >&2; fail "case 2: exit $rc, expected 4"; }
grep -q "cannot proceed: nlohmann/json.hpp .*nlohmann-json3-dev" "$tmp/out" || { cat "$tmp/out" >&2; fail "case 2: the header is not named"; }
others=$(grep "cannot proceed" "$tmp/out" | grep -v nlohmann || true)
[[ -z $others ]] || fail "case 2: more than the hidden header reported missing: $others"
[[ -e $tmp/package-manager.log ]] || fail "case 2: no install was attempted"
echo "case 2 passed: exit 4: $(grep nlohmann "$tmp/out")"

# ---- 3. a cmake too old for the project first on PATH
old=$tmp/old/bin
mkdir -p "$old"
printf '#!/bin/sh\necho "cmake version 3.10.2"\n' >"$old/cmake"
chmod +x "$old/cmake"
rm -f "$tmp/package-manager.log"
rc=$(front=$old sandbox)
[[ $rc == 4 ]] || { cat "$tmp/out" >&2; fail "case 3: exit $rc, expected 4"; }
grep -q "cannot proceed: cmake >= [0-9.]* on PATH (Debian/Ubuntu package cmake)" "$tmp/out" || { cat "$tmp/out" >&2; fail "case 3: the old cmake is not named"; }
[[ -e $tmp/package-manager.log ]] || fail "case 3: no install was attempted"
echo "case 3 passed: exit 4: $(grep 'cmake >=' "$tmp/out")"

# ---- 4. fuzzing asked for, and a clang++ that cannot build a fuzzer
noclang=$tmp/noclang/bin
mkdir -p "$noclang"
printf '#!/bin/sh\necho "clang++: error: unsupported option -fsanitize=fuzzer" >&2\nexit 1\n' >"$noclang/clang++"
chmod +x "$noclang/clang++"
rm -f "$tmp/package-manager.log"
rc=$(front=$noclang sandbox DSA_WITH_FUZZ=1)
[[ $rc == 0 ]] || { cat "$tmp/out" >&2; fail "case 4: exit $rc, expected 0"; }
grep -q "some tests will fail without it: clang++ with libFuzzer.*(Debian/Ubuntu package clang)" "$tmp/out" || { cat "$tmp/out" >&2; fail "case 4: clang is not named"; }
[[ -e $tmp/package-manager.log ]] || fail "case 4: no install was attempted"
rm -f "$tmp/package-manager.log"
rc=$(front=$noclang sandbox)
[[ $rc == 0 ]] || { cat "$tmp/out" >&2; fail "case 4: exit $rc without DSA_WITH_FUZZ, expected 0"; }
! grep -q "libFuzzer" "$tmp/out" || fail "case 4: clang asked for without DSA_WITH_FUZZ"
echo "case 4 passed: $(grep libFuzzer "$tmp/out" || echo 'not asked without DSA_WITH_FUZZ')"
