#!/bin/bash
# same_seed.sh: one binary against another with the same seed (issue 40's "old binary against
# new"): for each system, a run of each binary on the same sandbox with the same flags and seed,
# then a comparison of what the seed decides — the nemesis's ops in the history (f and value of
# every invoke, the nodes each completion names), test.json (times, versions, paths and the
# binary's own build facts left out) — and both verdicts side by side. A fault sequence or a
# test.json that differs is printed; verdicts may differ where the system behaves differently
# from run to run (timing), and are shown, not judged.
#
# Owns nothing of the binary; reads only what a run writes (history.jsonl, test.json, the
# `--json` summary). Needs root and jq; holds /tmp/shakedown-sandbox.lock while a sandbox is up.
#
#   benches/same_seed.sh [-t SECONDS] [-s SEED] [-n NAME] [-u SUBNET] [-x 'MORE FLAGS'] \
#       OLD_BIN NEW_BIN SYSTEM...
#   e.g. sudo benches/same_seed.sh -x '--nemesis nemeses/rotation.toml' \
#       /work/wt-old/target/release/shakedown target/release/shakedown etcd redis postgres nats:log
# The sandbox goes down at the end. SYSTEM is a --db name, or NAME:WORKLOAD for one that does not serve the register workload.
set -euo pipefail

limit=30
seed=42
name=sdseed
subnet=10.141.0.0/24
extra="--nemesis partition,kill,pause"
while getopts t:s:n:u:x: opt; do
  case $opt in
    t) limit=$OPTARG ;;
    s) seed=$OPTARG ;;
    n) name=$OPTARG ;;
    u) subnet=$OPTARG ;;
    x) extra=$OPTARG ;;
    *) exit 3 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 3 ] || { echo "usage: $0 [-t S] [-s SEED] [-n NAME] [-u SUBNET] [-x FLAGS] OLD NEW SYSTEM..." >&2; exit 3; }
old=$(readlink -f "$1"); new=$(readlink -f "$2"); shift 2
read -r -a more <<< "$extra"
work=$(mktemp -d /tmp/shakedown-same-seed.XXXXXX)
sandbox=(--sandbox-name "$name" --sandbox-subnet "$subnet")
# The runs leave their sandbox up for the next; it goes when the script ends, however it ends.
trap '"$new" sandbox down "${sandbox[@]}" > /dev/null 2>&1 || true' EXIT

# What the seed decides in a run directory: the nemesis ops, and test.json without what differs
# by the clock or the build.
faults() {
  jq -c 'select(.process == "nemesis")
    | if .type == "invoke" then [.f, .value] else [.f, (.value.nodes? // null)] end' \
    "$1/history.jsonl"
}
testjson() {
  jq -S 'del(.start_time, .started_at, .end_time, .run_dir, .version, .build, .binary,
             .command, .argv, .host, .reports, .db.version, .tool)
         | walk(if type == "object" then del(.time, .timestamp, .path) else . end)' "$1/test.json"
}

printf '%-10s %-14s %-14s %-8s %-9s %s\n' system old new faults test.json "old ops / new ops"
for spec in "$@"; do
  sys=${spec%%:*}
  wl=register; [ "$spec" = "$sys" ] || wl=${spec#*:}
  for which in old new; do
    bin=${!which}
    mkdir -p "$work/$sys/$which"
    flock /tmp/shakedown-sandbox.lock "$bin" run --json --reports "$work/$sys/$which" \
      "${sandbox[@]}" --db "$sys" --workload "$wl" --time-limit "$limit" --seed "$seed" "${more[@]}" \
      > "$work/$sys/$which.json" 2> "$work/$sys/$which.err" || true
  done
  verdict() { jq -r '.valid // "?"' "$work/$sys/$1.json" 2>/dev/null || echo "?"; }
  dir() { jq -r '.run_dir // empty' "$work/$sys/$1.json" 2>/dev/null; }
  o=$(dir old); n=$(dir new)
  if [ -z "$o" ] || [ -z "$n" ]; then
    printf '%-10s %-14s %-14s no run directory: see %s\n' "$sys" "$(verdict old)" "$(verdict new)" "$work/$sys"
    continue
  fi
  faults "$o" > "$work/$sys/old.faults"; faults "$n" > "$work/$sys/new.faults"
  testjson "$o" > "$work/$sys/old.test"; testjson "$n" > "$work/$sys/new.test"
  # The last fault may fall on either side of the time limit: compare the common prefix.
  k=$(( $(wc -l < "$work/$sys/old.faults") < $(wc -l < "$work/$sys/new.faults") ?
        $(wc -l < "$work/$sys/old.faults") : $(wc -l < "$work/$sys/new.faults") ))
  if cmp -s <(head -n "$k" "$work/$sys/old.faults") <(head -n "$k" "$work/$sys/new.faults"); then
    f="same($k)"
  else
    f=DIFFER
  fi
  if cmp -s "$work/$sys/old.test" "$work/$sys/new.test"; then t=same; else t=DIFFER; fi
  ops() { jq -s '[.[] | select(.process != "nemesis" and .type != "invoke")] | length' "$1/history.jsonl"; }
  printf '%-10s %-14s %-14s %-8s %-9s %s / %s\n' "$sys" "$(verdict old)" "$(verdict new)" "$f" "$t" \
    "$(ops "$o")" "$(ops "$n")"
  [ "$f" = DIFFER ] && diff <(head -n "$k" "$work/$sys/old.faults") <(head -n "$k" "$work/$sys/new.faults") | head -10 || true
  [ "$t" = DIFFER ] && diff "$work/$sys/old.test" "$work/$sys/new.test" | head -30 || true
done
echo "runs: $work"
