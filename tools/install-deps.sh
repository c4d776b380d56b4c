#!/usr/bin/env bash
# Makes sure this machine can build and test dsa-harness. It checks capabilities, not package
# names: a cmake new enough on PATH from any source (apt, pip, conda, Kitware), a C++ compiler and
# make, the libraries CMake finds (tools/deps-probe runs the build's own cmake/dependencies.cmake),
# and the Python modules the tests import (in the python3 on PATH or the system's /usr/bin/python3).
# Only what is really missing is installed, with apt-get. Where that is impossible (no apt-get,
# not root and no sudo, no network) it names exactly what is missing, and stops (exit 4) only
# when the build cannot proceed. Idempotent: on a ready machine it installs nothing.
# Opt-in extras (CI sets both): DSA_WITH_BROWSER=1 adds chromium (the HTML report tests),
# DSA_WITH_SLURM=1 Slurm and munge (test_slurm_array; without them that test is skipped).
set -euo pipefail
cd "$(dirname "$0")/.."

min_cmake=$(sed -n 's/^cmake_minimum_required(VERSION \([0-9.]*\)).*/\1/p' CMakeLists.txt)
python_modules=(h5py numpy pytest pybind11)  # pybind11: the Python bindings' build
blocking=()   # "what|package": the build cannot proceed without it
optional=()   # "what|package": some tests or tools need it

cmake_ok() {
  command -v cmake >/dev/null 2>&1 || return 1
  local v
  v=$(cmake --version 2>/dev/null | sed -n '1s/.* version \([0-9][0-9.]*\).*/\1/p')
  [[ -n "$v" && "$(printf '%s\n%s\n' "$min_cmake" "$v" | sort -V | head -1)" == "$min_cmake" ]]
}

# The tests run with one Python that imports every module and has the C headers the bindings
# build against: the one on PATH, else the system's (cmake/python.cmake picks the same way).
python_headers() {  # the Python.h of that interpreter (a venv's: its base Python's)
  "$1" -c "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" >/dev/null 2>&1
}
test_python() {  # prints the first Python with every module and Python.h
  local py imports
  imports=$(IFS=,; echo "${python_modules[*]}")
  for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 && "$py" -c "import $imports" >/dev/null 2>&1 && python_headers "$py" &&
      { echo "$py"; return 0; }
  done
  return 1
}
python_ready() { test_python >/dev/null; }
yaml_ready() { local py; py=$(test_python) && "$py" -c "import yaml" >/dev/null 2>&1; }

check_tools() {
  blocking=()
  cmake_ok || blocking+=("cmake >= $min_cmake on PATH|cmake")
  command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || blocking+=("a C++ compiler (c++)|build-essential")
  command -v make >/dev/null 2>&1 || blocking+=("make|build-essential")
}

# Libraries, through the build's own find_package calls; needs the tools above.
check_libraries() {
  local dir need what package
  dir=$(mktemp -d)
  if ! cmake -S tools/deps-probe -B "$dir" >"$dir/log" 2>&1; then
    echo "install-deps: the dependency probe failed:" >&2
    tail -20 "$dir/log" >&2
    rm -rf "$dir"
    exit 4
  fi
  while IFS='|' read -r what package need || [[ -n $what ]]; do
    [[ -z "$what" ]] && continue
    if [[ "$need" == optional ]]; then optional+=("$what|$package"); else blocking+=("$what|$package"); fi
  done <"$dir/missing.txt"
  rm -rf "$dir"
}

check_extras() {
  local m
  local py=/usr/bin/python3  # where apt-get installs: name what it lacks
  [[ -x $py ]] || py=$(command -v python3 || true)
  if ! python_ready; then
    [[ -n $py ]] || optional+=("python3|python3")
    for m in "${python_modules[@]}"; do
      [[ -n $py ]] && "$py" -c "import $m" >/dev/null 2>&1 || optional+=("Python module $m|python3-$m")
    done
    [[ -n $py ]] && python_headers "$py" || optional+=("Python.h (the bindings' build)|python3-dev")
  fi
  # examples/ci's test reads the GitHub workflow with yaml, in the Python that runs the tests;
  # without it that one test skips (exit 77) and says why.
  yaml_ready || optional+=("Python module yaml (examples/ci test)|python3-yaml")
  if [[ "${DSA_WITH_BROWSER:-0}" == 1 && ! -x /usr/bin/chromium ]]; then
    optional+=("/usr/bin/chromium (HTML report tests)|chromium")
  fi
  if [[ "${DSA_WITH_SLURM:-0}" == 1 ]]; then  # test_slurm_array's one-node cluster
    local program package
    for program in munged:munge slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client; do
      package=${program#*:} program=${program%:*}
      PATH=$PATH:/usr/sbin command -v "$program" >/dev/null 2>&1 || optional+=("$program (Slurm test)|$package")
    done
  fi
  if [[ "${DSA_WITH_FUZZ:-0}" == 1 ]] && ! fuzzer_ready; then
    optional+=("clang++ with libFuzzer, ASan and UBSan (tools/fuzz.sh)|clang")
  fi
}

# Fuzzing (tools/fuzz.sh; CI sets DSA_WITH_FUZZ=1): clang able to link libFuzzer with ASan and
# UBSan. Only then: elsewhere tools/fuzz.sh exits 77 naming what is missing.
fuzzer_ready() {
  command -v clang++ >/dev/null 2>&1 || return 1
  local dir rc=0
  dir=$(mktemp -d)
  printf '#include <cstdint>\n#include <cstddef>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' >"$dir/f.cpp"
  clang++ -fsanitize=fuzzer,address,undefined "$dir/f.cpp" -o "$dir/f" >/dev/null 2>&1 || rc=1
  rm -rf "$dir"
  return $rc
}

packages_of() {  # "what|package"... -> unique package names
  local e
  for e in "$@"; do echo "${e#*|}"; done | sort -u
}

# apt-get where possible; false (and a line saying why) where not.
install_packages() {
  local sudo=()
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: no apt-get on this machine, cannot install: $*" >&2
    return 1
  fi
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo=(sudo -n); else
      echo "install-deps: not root and no password-less sudo, cannot install: $*" >&2
      return 1
    fi
  fi
  echo "install-deps: installing $*"
  if ((!apt_updated)); then
    "${sudo[@]}" apt-get update -qq >/dev/null 2>&1 || { echo "install-deps: apt-get update failed (offline?)" >&2; return 1; }
    apt_updated=1
  fi
  if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null; then
    echo "install-deps: apt-get could not install $*" >&2
    return 1
  fi
}
apt_updated=0

report_missing() {  # label, "what|package"...
  local label=$1 e
  shift
  for e in "$@"; do echo "install-deps: $label: ${e%|*} (Debian/Ubuntu package ${e#*|})" >&2; done
}

# 1. Tools: the library probe needs cmake and a compiler.
check_tools
if ((${#blocking[@]})); then
  mapfile -t pkgs < <(packages_of "${blocking[@]}")
  install_packages "${pkgs[@]}" || true
  check_tools
  if ((${#blocking[@]})); then
    report_missing "missing, the build cannot proceed" "${blocking[@]}"
    exit 4
  fi
fi

# 2. Libraries, then test modules and tools: each group in its own apt-get call (an optional
#    package this distribution lacks must not stop a library from being installed), then look again.
check_libraries
check_extras
installed=0
for group in blocking optional; do
  declare -n entries=$group
  ((${#entries[@]})) || continue
  mapfile -t pkgs < <(packages_of "${entries[@]}")
  install_packages "${pkgs[@]}" && installed=1
done
if ((installed)); then
  blocking=() optional=()
  check_libraries
  check_extras
fi
((${#optional[@]})) && report_missing "missing, some tests will fail without it" "${optional[@]}"
if ((${#blocking[@]})); then
  report_missing "missing, the build cannot proceed" "${blocking[@]}"
  exit 4
fi
exit 0
