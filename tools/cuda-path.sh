# Sourced by tools/test.sh and tools/run-main.sh: CUDA toolkits install nvcc under
# /usr/local/cuda/bin, which login shells do not always put on PATH; CMake finds the CUDA
# compiler (and builds the kernels) only when nvcc is on PATH or CUDACXX names it.
if ! command -v nvcc >/dev/null 2>&1 && [[ -z "${CUDACXX:-}" && -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
