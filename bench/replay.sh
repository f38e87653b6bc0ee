#!/usr/bin/env bash
# End-to-end `chatctx replay` throughput on a generated replay file (default 100,000 events).
# Usage: bench/replay.sh [EVENTS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-100000}
runs=${2:-5}
out=bench/out
mkdir -p "$out"
cargo build --release -q -p chatctx --bin chatctx --example gen_replay
file="$out/replay-$events.jsonl"
./target/release/examples/gen_replay "$events" > "$file"
lines=$(wc -l < "$file")
bytes=$(wc -c < "$file")
echo "replay file: $file ($lines lines, $((bytes / 1024 / 1024)) MiB); $(nproc) cores; $runs runs"
python3 - "$file" "$lines" "$runs" <<'PY'
import subprocess, sys, time, statistics
path, lines, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
times = []
for _ in range(runs):
    with open(path, "rb") as f:
        t = time.perf_counter()
        p = subprocess.run(["./target/release/chatctx", "replay"], stdin=f, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env={"CHATCTX_LOG": "warn"})
        times.append(time.perf_counter() - t)
    assert p.returncode == 0, p.returncode
med = statistics.median(times)
print(f"median {med*1000:.0f} ms, best {min(times)*1000:.0f} ms: {lines/med:,.0f} lines/s (best {lines/min(times):,.0f})")
PY
