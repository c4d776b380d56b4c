#!/usr/bin/env bash
# Gives a fresh time stamp to every tracked file whose content differs from what the build folder
# last built, then records the contents about to be built. make and ninja decide by time stamps,
# and a device call's tree copy keeps each file's own: a source put back to its older content (a
# variant copied over it by an earlier call on the same machine) looked older than the variant's
# object, was not rebuilt, and the call tested the variant (run 142: a 1 s build). Run it before
# every build of a folder that outlives a call (tools/device-check.sh and tools/device-variants.sh
# do); a build that skips it records nothing, so the next one cannot see what it built.
# Usage (repo root): tools/stamp-sources.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 1 ]] || { sed -n '2,9p' "$0" >&2; exit 2; }
sums=$1/.source-sums
now=$(mktemp)
git ls-files -z | xargs -0 sha1sum -- 2>/dev/null | LC_ALL=C sort >"$now" || true
if [[ -f $sums ]]; then
  # Lines of now that the record lacks: files new or changed since the last build.
  LC_ALL=C comm -13 "$sums" "$now" | cut -c43- | while IFS= read -r f; do if [[ -f $f ]]; then touch -- "$f"; fi; done
fi
mkdir -p "$1"
mv "$now" "$sums"
