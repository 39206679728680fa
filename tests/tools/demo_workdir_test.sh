#!/usr/bin/env bash
# tools/demo never deletes what it did not create: pointed (PEREGRINE_DEMO_DIR)
# at a non-empty directory it did not make, or at a file, it refuses before
# doing anything, with a message naming the path, and leaves it untouched.
#   demo_workdir_test.sh SOURCE_DIR
set -euo pipefail
demo=$1/tools/demo
tmp=$(mktemp -d /tmp/peregrine-demo-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

mkdir "$tmp/mine"
echo precious >"$tmp/mine/keep-me"
if PEREGRINE_DEMO_DIR=$tmp/mine "$demo" >"$tmp/out" 2>&1; then fail "the demo accepted $tmp/mine"; fi
grep -q "demo: $tmp/mine is not empty and was not created by the demo; refusing" "$tmp/out" ||
  fail "no clear refusal: $(cat "$tmp/out")"
[ "$(cat "$tmp/mine/keep-me")" = precious ] || fail "$tmp/mine/keep-me was changed or deleted"
[ "$(ls -A "$tmp/mine")" = keep-me ] || fail "the demo added files to $tmp/mine: $(ls -A "$tmp/mine")"
echo "ok: a non-empty directory the demo did not create is refused and kept"

echo precious >"$tmp/file"
if PEREGRINE_DEMO_DIR=$tmp/file "$demo" >"$tmp/out" 2>&1; then fail "the demo accepted the file $tmp/file"; fi
grep -q "demo: $tmp/file exists and is not a directory" "$tmp/out" || fail "no clear refusal: $(cat "$tmp/out")"
[ "$(cat "$tmp/file")" = precious ] || fail "$tmp/file was changed or deleted"
echo "ok: a file is refused and kept"
