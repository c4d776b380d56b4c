#!/bin/bash
# examples/plugin/gpu_sparse_plugin.cpp on a GPU: `replay --impl plugin:...` on every fixture must
# pass (bit-exact against reference-sparse, the public test, quality) beside gpu-sparse itself,
# and the report must carry the plugin's own CUDA-event kernel timings. Exit 77 (skipped) where
# gpu-sparse cannot run. Usage: test_gpu_sparse_plugin.sh DSA_HARNESS PLUGIN.so FIXTURES_DIR
set -u
binary=$1 plugin=$2 fixtures=$3
why=$("$binary" replay --list-impl | grep '^gpu-sparse ' | grep -o 'cannot run here: [^]]*')
if [ -n "$why" ]; then
  echo "test_gpu_sparse_plugin: skipped: gpu-sparse $why"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$binary" replay "$fixtures" --impl "plugin:$plugin,gpu-sparse" -o "$out/report"
rc=$?
if [ $rc -ne 0 ]; then
  echo "FAIL: replay with plugin:$plugin exited $rc (see the FAIL lines above)"
  exit 1
fi
# Kernel names the plugin reported (gpu-sparse/...) appear under the plugin's run in report.md.
if ! grep -q "plugin:$plugin" "$out/report/report.md"; then
  echo "FAIL: report.md does not name plugin:$plugin"
  exit 1
fi
echo "PASS: plugin:$plugin replayed every fixture; kernel timings:"
grep -A3 -i "kernel" "$out/report/report.md" | head -20
