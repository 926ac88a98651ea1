#!/usr/bin/env bash
# Coverage-guided fuzzing of one of shakedown's readers with libFuzzer, on stable Rust.
#
#   fuzz/run.sh READER [RUNS] [libFuzzer flags…]
#
# READER: edn, jsonl, json, history-txt, jepsen-log, porcupine, auto, or rundir (the run-directory
# reader; a much bigger build). RUNS: inputs to try (default 10000000; -1 = until stopped).
# Builds the target (fuzz/target/), seeds it from tests/data (fuzz/seeds/READER/, remade every
# time), keeps what it finds new in fuzz/corpus/READER/ and a crashing, hanging or oversized
# input in fuzz/artifacts/READER/. Extra flags go to libFuzzer (-jobs=2, -max_total_time=600, …).
# Prints libFuzzer's final stats (stat::number_of_executed_units is the inputs tried).
set -euo pipefail
cd "$(dirname "$0")"
reader=${1:?usage: fuzz/run.sh READER [RUNS] [libFuzzer flags…]}
runs=${2:-10000000}
shift $(( $# >= 2 ? 2 : 1 ))
data=../tests/data
seeds=seeds/$reader
rm -rf "$seeds"
mkdir -p "$seeds" "corpus/$reader" "artifacts/$reader"
features=()
max_len=16384
case $reader in
  edn) find "$data" -name '*.edn' -exec cp --backup=numbered -t "$seeds" {} + ;;
  jsonl) find "$data" -name '*.jsonl' -exec cp --backup=numbered -t "$seeds" {} + ;;
  json) find "$data/histories" -name '*.json' -exec cp --backup=numbered -t "$seeds" {} + ;;
  history-txt) cp "$data/histories/history.txt" "$seeds/" ;;
  jepsen-log) find "$data/histories" -name '*.log' -exec cp -t "$seeds" {} + ;;
  porcupine) cp "$data"/histories/porcupine-kv*.txt "$seeds/" ;;
  auto) find "$data/histories" -type f -exec cp --backup=numbered -t "$seeds" {} + ;;
  rundir)
    features=(--features rundir)
    max_len=65536
    # A run directory's files joined by zero bytes, as shakedown::fuzz::pack_run_dir packs them
    # (RUN_FILES: test.json, completion.json, history.jsonl, results.json, live.json,
    # faults.jsonl; a missing one is an empty part), each cut after a whole line within 4 KiB
    # (16 KiB for results.json).
    for run in "$data"/reports/*/; do
      python3 - "$run" "$seeds/$(basename "$run")" <<'PY'
import os, sys
run, out = sys.argv[1], sys.argv[2]
parts = []
for name in ["test.json", "completion.json", "history.jsonl", "results.json", "live.json", "faults.jsonl"]:
    path = os.path.join(run, name)
    b = open(path, "rb").read() if os.path.isfile(path) else b""
    limit = 16384 if name == "results.json" else 4096
    if len(b) > limit:
        b = b[: b.rfind(b"\n", 0, limit) + 1]
    parts.append(b.replace(b"\0", b""))
open(out, "wb").write(b"\0".join(parts))
PY
    done ;;
  *) echo "unknown reader $reader" >&2; exit 2 ;;
esac
cargo build --release "${features[@]}" --bin "$reader"
exec "target/x86_64-unknown-linux-gnu/release/$reader" \
  -runs="$runs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="artifacts/$reader/" -print_final_stats=1 \
  "$@" "corpus/$reader" "$seeds"
