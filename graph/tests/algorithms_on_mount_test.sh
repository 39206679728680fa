#!/usr/bin/env bash
# Every graph algorithm, validated against its in-memory reference, on a
# real peregrine mount (4 file-backed members): generate, check the CSR,
# run bfs, sssp, bc, kcore, cc, pagerank and tc with --validate, with the
# lists kept in memory and read on every pass; import the karate club
# and a directed graph from text edge lists on the mount and compare --out
# with networkx's results (graph/tests/data), and two weighted graphs
# (the karate club's weights, a DIMACS .gr) for sssp; unmount cleanly.
#   algorithms_on_mount_test.sh PEREGRINE PEREGRINE_GRAPH
# Exit 77 (skipped) without root or /dev/fuse.
set -euo pipefail
peregrine=$1
graph=$2
if [ "$(id -u)" -ne 0 ] || [ ! -c /dev/fuse ]; then
  echo "skipped: needs root and /dev/fuse"
  exit 77
fi
# Hermetic: the mounts read no /etc/peregrine/peregrine.conf of this machine,
# only the built-in defaults and the options given here (docs/configuration.md).
export PEREGRINE_CONFIG=/dev/null
work=$(mktemp -d /tmp/peregrine-graph-mount-XXXXXX)
mkdir -p "$work/mnt"
cleanup() {
  if grep -q " $work/mnt fuse.peregrine " /proc/mounts; then fusermount3 -u "$work/mnt" || umount -l "$work/mnt"; fi
  # The daemon holds a lock on every member until it has checkpointed and
  # stopped: taking one waits for exactly that.
  [ -f "$work/m0" ] && flock "$work/m0" true
  rm -rf "$work"
}
trap cleanup EXIT
"$peregrine" mkfs --size 128M "$work"/m{0,1,2,3} >/dev/null
"$peregrine" mount --pid-file "$work/pid" "$work"/m{0,1,2,3} "$work/mnt"
"$graph" gen --scale 12 --seed 7 --out "$work/mnt/g" --quiet >/dev/null
"$graph" check --graph "$work/mnt/g" >/dev/null
# Each with the lists kept in memory (the default here) and read from the
# mount on every pass (--memory 0).
for alg in bfs sssp bc kcore cc pagerank tc; do
  for memory in auto 0; do
    "$graph" "$alg" --graph "$work/mnt/g" --validate --memory "$memory" >/dev/null
  done
  echo "$alg validated on the mount"
done
data=$(cd "$(dirname "$0")" && pwd)/data
for g in karate dcycle; do
  directed=""
  [ "$g" = dcycle ] && directed=--directed
  cp "$data/$g.txt" "$work/mnt/$g.txt"
  "$graph" import --input "$work/mnt/$g.txt" --out "$work/mnt/$g" $directed --quiet >/dev/null
  "$graph" check --graph "$work/mnt/$g" >/dev/null
  "$graph" bfs --graph "$work/mnt/$g" --root 1 --validate --out "$work/mnt/$g.bfs" >/dev/null
  cut -d' ' -f1,2 "$work/mnt/$g.bfs" | diff - "$data/$g.bfs"
  "$graph" sssp --graph "$work/mnt/$g" --root 1 --validate --out "$work/mnt/$g.sssp" >/dev/null
  diff "$work/mnt/$g.sssp" "$data/$g.sssp"
  "$graph" cc --graph "$work/mnt/$g" --validate --out "$work/mnt/$g.cc" >/dev/null
  diff "$work/mnt/$g.cc" "$data/$g.cc"
  if [ -z "$directed" ]; then
    "$graph" kcore --graph "$work/mnt/$g" --validate --out "$work/mnt/$g.kcore" >/dev/null
    diff "$work/mnt/$g.kcore" "$data/$g.kcore"
    "$graph" tc --graph "$work/mnt/$g" --validate --out "$work/mnt/$g.tc" >/dev/null
    diff "$work/mnt/$g.tc" "$data/$g.tc"
  fi
  "$graph" bc --graph "$work/mnt/$g" --root 1 --validate --out "$work/mnt/$g.bc" >/dev/null
  paste -d' ' "$work/mnt/$g.bc" "$data/$g.bc" |
    awk '$1 != $3 || ($2 - $4 > 1e-9 || $4 - $2 > 1e-9) { print "bc differs: " $0; bad = 1 } END { exit bad }'
  "$graph" pagerank --graph "$work/mnt/$g" --validate --iterations 1000 --epsilon 1e-15 \
    --out "$work/mnt/$g.pagerank" >/dev/null
  paste -d' ' "$work/mnt/$g.pagerank" "$data/$g.pagerank" |
    awk '$1 != $3 || ($2 - $4 > 1e-12 || $4 - $2 > 1e-12) { print "pagerank differs: " $0; bad = 1 } END { exit bad }'
  echo "$g imported on the mount; --out equals networkx"
done
# Weighted: the karate club's weight column and a DIMACS road graph.
cp "$data/karate.txt" "$work/mnt/wkarate.txt"
cp "$data/roads.gr" "$work/mnt/roads.gr"
"$graph" import --input "$work/mnt/wkarate.txt" --weighted --out "$work/mnt/wkarate" --quiet >/dev/null
"$graph" import --input "$work/mnt/roads.gr" --directed --out "$work/mnt/roads" --quiet >/dev/null
for g in wkarate:karate roads:roads; do
  "$graph" check --graph "$work/mnt/${g%%:*}" >/dev/null
  "$graph" sssp --graph "$work/mnt/${g%%:*}" --root 1 --validate --out "$work/mnt/${g%%:*}.sssp" >/dev/null
  diff "$work/mnt/${g%%:*}.sssp" "$data/${g##*:}.wsssp"
done
echo "weighted graphs imported on the mount; sssp equals networkx's Dijkstra"
fusermount3 -u "$work/mnt"
flock "$work/m0" true  # released once the daemon has checkpointed and stopped
"$peregrine" fsck -n "$work"/m{0,1,2,3} >/dev/null
echo "graph algorithms validated on a peregrine mount; fsck clean after unmount"
