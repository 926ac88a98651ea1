#!/bin/bash
# soak.sh: the "controller's memory through a long run" bench (issue 44, docs/guide/benchmarks.md
# "A soak"). Runs the in-memory register of benches/soak/ (a Python server on the first sandbox
# node, one Python client process per thread: ~10,000-20,000 ops/s here) as fast as it goes for
# the given time under the given faults, samples the controller's resident memory (VmRSS of the
# `shakedown run` process) every second with the run's progress lines, and prints the peak in
# the workload and after it (check, plots, run page), the ops recorded and the phases' times.
#
# Owns nothing of the binary; reads what the run writes and /proc. Needs root; holds
# /tmp/shakedown-sandbox.lock while its sandbox (own name and subnet) is up.
#
#   benches/soak.sh [-b BIN] [-t SECONDS] [-r RATE] [-n NEMESIS] [-o DIR] [-- extra `run` flags]
#   (RATE: client ops/s over all threads, default 0 = as fast as it goes)
#   e.g. sudo benches/soak.sh -b target/release/shakedown -t 900 -n partition,kill,pause
set -euo pipefail

bin=target/release/shakedown
limit=600
rate=0
nemesis=none
out=
while getopts b:t:r:n:o: opt; do
  case $opt in
    b) bin=$OPTARG ;;
    t) limit=$OPTARG ;;
    r) rate=$OPTARG ;;
    n) nemesis=$OPTARG ;;
    o) out=$OPTARG ;;
    *) exit 3 ;;
  esac
done
shift $((OPTIND - 1))
bin=$(readlink -f "$bin")
spec=$(readlink -f "$(dirname "$0")/soak/soak.toml")
out=${out:-$(mktemp -d /tmp/shakedown-soak.XXXXXX)}
mkdir -p "$out"
out=$(readlink -f "$out")
sandbox=(--sandbox-name sdsoak --sandbox-subnet 10.139.0.0/24 --sandbox-nodes 3)

flock /tmp/shakedown-sandbox.lock bash -c '
  set -u
  bin=$1 spec=$2 out=$3 limit=$4 nemesis=$5 rate=$6; shift 6
  sandbox=("${@:1:6}"); shift 6
  cd "$out"
  "$bin" sandbox down "${sandbox[@]:0:4}" > /dev/null 2>&1
  "$bin" sandbox up "${sandbox[@]}" > up.out 2>&1 || { cat up.out >&2; exit 1; }
  start=$(date +%s.%N)
  /usr/bin/time -f "%e s wall, %U s user, %S s system, %M KiB peak" -o run.time \
    "$bin" run "${sandbox[@]}" --db "$spec" --rate "$rate" --time-limit "$limit" \
    --nemesis "$nemesis" --reports "$out/reports" --name soak "$@" > run.out 2> run.err &
  timer=$!
  # The run process is the child of GNU time (unless it is gone already).
  while ! run=$(pgrep -P "$timer"); do
    kill -0 "$timer" 2>/dev/null || break
    sleep 0.1
  done
  while [ -n "$run" ] && kill -0 "$run" 2>/dev/null; do
    # VmRSS, and of it RssAnon (memory of its own) and RssFile (pages of files it
    # maps, such as the history it writes through a mapping, which the kernel can drop).
    rss=$(awk "/^(VmRSS|RssAnon|RssFile):/ {v[++n] = \$2} END {if (n) print v[1] \"\t\" v[2] \"\t\" v[3]}" \
      "/proc/$run/status" 2>/dev/null) || break
    [ -n "$rss" ] || break
    now=$(date +%s.%N)
    awk -v t="$now" -v s="$start" -v r="$rss" "BEGIN { printf \"%.1f\t%s\n\", t - s, r }" >> rss.tsv
    sleep 1
  done
  wait "$timer" || true
  "$bin" sandbox down "${sandbox[@]:0:4}" > down.out 2>&1
' soak "$bin" "$spec" "$out" "$limit" "$nemesis" "$rate" "${sandbox[@]}" "$@"

dir=$(sed -n 's/^run directory: //p' "$out/run.out")
echo "run: $(cat "$out/run.time")"
[ -n "$dir" ] || { echo "no run directory: see $out/run.out and run.err" >&2; exit 1; }
ops=$(grep -c '"type":"invoke"' "$dir/history.jsonl" || true)
echo "history: $ops invokes, $(du -h "$dir/history.jsonl" | cut -f1) ($dir)"
echo "verdict: $(sed -n 's/^verdict: //p' "$out/run.out")"
# The workload is the first `limit` seconds after the ready wait: the run's own phase line says
# when each phase ended; the samples say how memory went.
grep -h 'phases:' "$out/run.out" "$out/run.err" 2>/dev/null | tail -1 || true
# Columns: seconds since the run started, VmRSS, RssAnon, RssFile (KiB).
awk -F'\t' '
  { t[NR] = $1; r[NR] = $2; a[NR] = $3; f[NR] = $4
    if ($2 > peak) { peak = $2; at = $1 }; if ($3 > apeak) { apeak = $3; aat = $1 } }
  END {
    printf "rss samples: %d over %.0f s; peak %.0f MiB at %.0f s; anonymous peak %.0f MiB at %.0f s\n",
      NR, t[NR], peak / 1024, at, apeak / 1024, aat
    for (q = 1; q <= 10; q++) { i = int(NR * q / 10); if (i < 1) i = 1
      printf "  %3d%%: %6.0f s  rss %6.0f MiB  anon %6.0f MiB  file %6.0f MiB\n", q * 10, t[i],
        r[i] / 1024, a[i] / 1024, f[i] / 1024 }
  }' "$out/rss.tsv"
echo "samples: $out/rss.tsv"
