#!/bin/sh
# Runs Criterion test binaries N at a time (-j N, 2 by default), each with
# --jobs 2, its output kept and printed whole when it ends; then the
# binaries after --alone one at a time (their tests time themselves or
# count the machine's threads). Most binaries spend most of their time in
# one long test, which leaves a core idle while it runs alone: two binaries
# side by side fill it. Exits 1 after the last binary if any failed, naming
# them.
#   sh mk/run-tests.sh [-j N] [-w WRAPPER] [-c COMMAND] BIN... [--alone BIN...]
# WRAPPER, split at spaces (no quoting), is put before each binary: valgrind
# and its options. COMMAND, a shell command line (the Python suite), runs
# beside the first binaries and is reported like them: it too leaves part
# of a core idle, and the suites timed alone wait for it.
set -uf
jobs=2 wrapper="" command=""
while [ $# -gt 0 ]; do
  case $1 in
    -j) jobs=$2; shift 2 ;;
    -w) wrapper=$2; shift 2 ;;
    -c) command=$2; shift 2 ;;
    *) break ;;
  esac
done
together="" alone="" phase=together
for t in "$@"; do
  if [ "$t" = --alone ]; then phase=alone
  elif [ $phase = together ]; then together="$together $t"
  else alone="$alone $t"; fi
done
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
# one job (sh -c "$run_one" sh OUT NAME COMMAND...): its output to a file,
# printed under a lock when it ends
run_one='out=$1 name=$2; shift 2; log=$(mktemp "$out/log.XXXXXX"); t0=$(date +%s)
"$@" > "$log" 2>&1; rc=$?
{ flock 9; echo "== $name ($(( $(date +%s) - t0 )) s)"; cat "$log"; [ $rc = 0 ] || echo "$name" >> "$out/failed"; } 9> "$out/lock"'
[ -z "$command" ] || sh -c "$run_one" sh "$out" "$command" sh -c "$command" &
printf '%s\n' $together | xargs -r -P "$jobs" -I{} sh -c "$run_one" sh "$out" {} $wrapper {} --jobs 2 --short-filename
wait
for t in $alone; do sh -c "$run_one" sh "$out" "$t" $wrapper "$t" --jobs 2 --short-filename; done
if [ -s "$out/failed" ]; then echo "failed:"; cat "$out/failed"; exit 1; fi
exit 0
