#!/bin/bash
# nodes.sh: the "100 nodes" bench (docs/guide/benchmarks.md): for each node count N, brings the
# sandbox up and down timed, then a run of a system (NATS JetStream unless -d names another)
# under partitions, kills and pauses on a sandbox of N nodes, and prints one table row per N: up s, down s, the controller's CPU per
# node, the nemesis decision -> fault in effect on every target (each start op's invoke to its
# completion in history.jsonl, mean and max) and the final heal (the run's `heal` phase).
#
# Owns nothing of the binary; reads only what a run writes (history.jsonl, the summary's
# `phases:` line). Needs root, jq and GNU time; holds /tmp/shakedown-sandbox.lock while a
# sandbox is up, so it never shares the machine's sandbox use with another test.
#
#   benches/nodes.sh [-b BIN] [-t SECONDS] [-n NAME] [-s SUBNET] [-d DB] [-w WORKLOAD]
#                    [-x 'MORE RUN FLAGS'] N...
#   e.g. sudo benches/nodes.sh -b target/release/shakedown 5 25 100
#        sudo benches/nodes.sh -d redis -w register -x '--redis-sentinels 5' 5 25 100
set -euo pipefail

bin=target/release/shakedown
limit=60
name=sdbig
subnet=10.133.0.0/24
db=nats
workload=
extra=
while getopts b:t:n:s:d:w:x: opt; do
  case $opt in
    b) bin=$OPTARG ;;
    t) limit=$OPTARG ;;
    n) name=$OPTARG ;;
    s) subnet=$OPTARG ;;
    d) db=$OPTARG ;;
    w) workload=$OPTARG ;;
    x) extra=$OPTARG ;;
    *) exit 3 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-b BIN] [-t SECONDS] [-n NAME] [-s SUBNET] [-d DB] [-w WORKLOAD] [-x FLAGS] N..." >&2; exit 3; }
if [ -z "$workload" ]; then
  if [ "$db" = nats ]; then workload=log; else workload=register; fi
fi
read -r -a more <<< "$extra"
bin=$(readlink -f "$bin")
work=$(mktemp -d /tmp/shakedown-nodes.XXXXXX)
cd "$work"
sandbox=(--sandbox-name "$name" --sandbox-subnet "$subnet")

printf '%5s %7s %7s %14s %22s %22s %8s %s\n' N up_s down_s cpu_ms_per_node \
  "effect_ms(mean/max)" "heal_op_ms(mean/max)" heal_s verdict
for n in "$@"; do
  mkdir "$work/$n"
  cd "$work/$n"
  flock /tmp/shakedown-sandbox.lock bash -c '
    set -e
    bin=$1; n=$2; db=$3; workload=$4; nsb=$5; shift 5
    sb=("${@:1:$nsb}"); more=("${@:$((nsb + 1))}")
    set -- "${sb[@]}"
    "$bin" sandbox down "${@:1:4}" > /dev/null
    /usr/bin/time -f %e -o up1.time "$bin" sandbox up "$@" --sandbox-nodes "$n" > up1.out 2>&1
    /usr/bin/time -f %e -o down1.time "$bin" sandbox down "${@:1:4}" > down1.out 2>&1
    "$bin" sandbox up "$@" --sandbox-nodes "$n" > up2.out 2>&1
    /usr/bin/time -f "cpu %U %S" -o run.time "$bin" run "$@" --sandbox-nodes "$n" --db "$db" \
      --workload "$workload" --nemesis partition,kill,pause --time-limit "$0" "${more[@]}" \
      > run.out 2> run.err || true
    "$bin" sandbox down "${@:1:4}" > down2.out 2>&1
  ' "$limit" "$bin" "$n" "$db" "$workload" "${#sandbox[@]}" "${sandbox[@]}" "${more[@]}"
  dir=$(sed -n 's/^run directory: //p' run.out)
  [ -n "$dir" ] || { echo "$n: no run directory; see $work/$n/run.out and run.err" >&2; continue; }
  # GNU time writes "Command exited with non-zero status N" first when the run is not valid.
  cpu=$(awk -v n="$n" '$1 == "cpu" { printf "%.1f", ($2 + $3) * 1000 / n }' run.time)
  # Nemesis ops run one at a time: the history holds each invoke, then its completion.
  stats() {
    jq -rs --argjson fs "$1" '
      [ .[] | select(.process == "nemesis") ] as $ops
      | [ range(0; $ops | length - 1; 2) as $i
          | select(($fs | index($ops[$i].f)) != null)
          | ($ops[$i + 1].time - $ops[$i].time) / 1e6 ]
      | if length == 0 then "-" else
          "\((add / length) | floor)/\(max | floor) (\(length))" end' "$dir/history.jsonl"
  }
  effect=$(stats '["start-partition","kill","pause"]')
  healop=$(stats '["stop-partition","start","resume"]')
  heal=$(grep -o 'heal [0-9.]* s' run.out | head -1 | awk '{print $2}')
  verdict=$(sed -n 's/^verdict: //p' run.out)
  printf '%5s %7s %7s %14s %22s %22s %8s %s\n' "$n" "$(cat up1.time)" "$(cat down1.time)" \
    "$cpu" "$effect" "$healop" "${heal:--}" "${verdict:-?} ($work/$n/$dir)"
done
