# Shared by make-images and check-images (sourced, not run): mounting and
# unmounting a volume of member files with the binary under test, and the
# real waits that go with it. Expects $bin (the peregrine binary) and $tmp
# (a scratch directory that the EXIT trap cleans).

# Hermetic: no /etc/peregrine/peregrine.conf of this machine is read.
export PEREGRINE_CONFIG=/dev/null

die() {
  echo "$(basename "$0"): $*" >&2
  exit 1
}

# Waits until no process holds a member's lock: the daemon keeps it until it
# has checkpointed and exited (a real wait on the kernel, not a sleep).
wait_released() {
  local f
  for f in "$@"; do
    flock -w 120 "$f" true || die "member $f still held after 120 s"
  done
}

# The EXIT trap: detaches every peregrine mount below $tmp, waits until no
# daemon holds a member file below it, and removes it. Keeps the exit status.
cleanup() {
  local rc=$? m f
  for m in $(awk -v t="$tmp/" 'index($2, t) == 1 && $3 == "fuse.peregrine" {print $2}' /proc/mounts); do
    fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || true
  done
  while IFS= read -r f; do
    flock -w 120 "$f" true || echo "$(basename "$0"): $f still held; leaving $tmp" >&2
  done < <(find "$tmp" -name 'm[0-9]' -type f)
  rm -rf "$tmp"
  exit "$rc"
}
