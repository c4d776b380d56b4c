# Sourced by the tests that run a tool in a scratch git repository (test_device_variants.sh,
# test_stamp_sources.sh): $tmp, a folder removed on exit; fail MESSAGE; exit 77 (skipped) without
# git; scratch_commit REPO, the repository's files as its first commit.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v git >/dev/null || { echo "git not found: skipped"; exit 77; }
scratch_commit() {
  (cd "$1" && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm tree) ||
    fail "could not set up the scratch repository"
}
