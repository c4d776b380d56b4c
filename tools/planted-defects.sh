#!/usr/bin/env bash
# The detection table of the planted defects (docs/planted-defects.md): every mutant:NAME replayed on
# the bundled fixtures, with its exit code, how many cases failed, and the first failing case's
# metric. Usage: tools/planted-defects.sh [BUILD_DIR]   (default build-cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build-cpu}/dsa-harness"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for name in $("$bin" replay --list-impl | grep -o '^mutant:[a-z0-9-]*'); do
  set +e
  "$bin" replay --impl "$name" -o "$out/${name#mutant:}" > /dev/null 2>&1
  echo "$?" > "$out/${name#mutant:}/exit"
  set -e
done
python3 - "$out" <<'PY'
import json, os, sys
root = sys.argv[1]
print("| mutant | exit | failed cases | first failing case (fixture, layer) | metric that caught it |")
print("|---|---|---|---|---|")
for name in sorted(os.listdir(root), key=lambda n: (n != "control", n)):
    r = json.load(open(os.path.join(root, name, "report.json")))
    code = open(os.path.join(root, name, "exit")).read().strip()
    files = {i["batch_id"]: os.path.basename(i["path"]) for i in r["inputs"]}
    bad = [c for c in r["cases"] if c["verdict"] == "incorrect"]
    first = bad[0] if bad else None
    where = f'{files.get(first["batch_id"], first["batch_id"])}, {first["layer"]}' if first else "-"
    metric = first["failed_metric"] if first else "-"
    print(f'| {name} | {code} | {len(bad)}/{len(r["cases"])} | {where} | {metric} |')
PY
