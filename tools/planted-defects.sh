#!/usr/bin/env bash
# The detection table of the planted defects (docs/planted-defects.md): every mutant:NAME replayed on
# the bundled fixtures, with its exit code, how many cases failed, and the first failing case's
# metric. Prints the table; with --check DOC it instead fails (exit 1) unless the control passed,
# every other mutant was flagged (exit 1), and DOC holds exactly this table (ctest
# test_planted_defects runs that, so the committed table is always the one the code gives).
# Usage: tools/planted-defects.sh [BUILD_DIR] [--check DOC]   (default build-cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-cpu doc=""
while (($#)); do
  case $1 in
    --check) doc=$2; shift 2 ;;
    *) build=$1; shift ;;
  esac
done
bin="$build/dsa-harness"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
mkdir "$out/runs"
for name in $("$bin" replay --list-impl | grep -o '^mutant:[a-z0-9-]*'); do
  set +e
  "$bin" replay --impl "$name" -o "$out/runs/${name#mutant:}" > /dev/null 2>&1
  echo "$?" > "$out/runs/${name#mutant:}/exit"
  set -e
done
/usr/bin/env python3 - "$out/runs" "$doc" <<'PY'
import json, os, sys
root, doc = sys.argv[1], sys.argv[2]
lines = ["| mutant | exit | failed cases | first failing case (fixture, layer) | metric that caught it |",
         "|---|---|---|---|---|"]
wrong = []
for name in sorted(os.listdir(root), key=lambda n: (n != "control", n)):
    r = json.load(open(os.path.join(root, name, "report.json")))
    code = open(os.path.join(root, name, "exit")).read().strip()
    files = {i["batch_id"]: os.path.basename(i["path"]) for i in r["inputs"]}
    bad = [c for c in r["cases"] if c["verdict"] == "incorrect"]
    first = bad[0] if bad else None
    where = f'{files.get(first["batch_id"], first["batch_id"])}, {first["layer"]}' if first else "-"
    metric = first["failed_metric"] if first else "-"
    lines.append(f'| {name} | {code} | {len(bad)}/{len(r["cases"])} | {where} | {metric} |')
    if code != ("0" if name == "control" else "1") or (name == "control") != (not bad):
        wrong.append(f"mutant:{name}: exit {code}, {len(bad)} failed cases")
if not doc:
    print("\n".join(lines))
    sys.exit(0)
text = open(doc).read().splitlines()
missing = [l for l in lines if l not in text]
for w in wrong:
    print(f"planted-defects: {w} (the control must pass, every mutant must be flagged with exit 1)")
for l in missing:
    print(f"planted-defects: {doc} lacks this line of the detection table: {l}")
if missing:
    print(f"planted-defects: regenerate it: tools/planted-defects.sh > table, then paste it into {doc}")
sys.exit(1 if wrong or missing else 0)
PY
