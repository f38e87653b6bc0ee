#!/usr/bin/env bash
# What a restart of `chatctx serve` costs on a store of N messages (1,000 chats) whose chats have logged since their
# last snapshots, as a store is between routine compactions: the stop (SIGTERM until the process is gone), the
# pause (from the last answer of the stopping server to /readyz answering 200 on the next one, started as soon as
# the first is gone) and the start within it, with the stop's snapshots (store.stop_snapshot_timeout, the default:
# most of them are written while the server still answers) and without them ("0s", which leaves the store as a
# crash would). Each pair of runs starts from the same copy.
# Usage: bench/stop_start.sh [MESSAGES] [PAIRS]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}; pairs=${2:-3}
cargo build --release -q -p chatctx --bin chatctx --example store_bench
out=bench/out; mkdir -p "$out"; base="$out/stop_base.db"; db="$out/stop.db"
rm -f "$base"*
# Written without the stop's snapshots, so that every chat keeps its tail.
STORE_BENCH_CRASH=1 ./target/release/examples/store_bench "$n" "$base" | grep -E "ingested|restart"
now() { date +%s.%N; }
ready() { # until /readyz answers 200
  until curl -sf -o /dev/null http://127.0.0.1:7891/readyz; do sleep 0.01; done
}
serve() { # timeout; starts the server in the background, sets $pid and $start (seconds to ready)
  local t0; t0=$(now)
  CHATCTX_LOG=info CHATCTX_STORE__STOP_SNAPSHOT_TIMEOUT="$1" ./target/release/chatctx serve --listen 127.0.0.1:7891 \
    --store "sqlite://$db" 2>>"$out/stop_start.log" &
  pid=$!
  ready
  start=$(echo "$(now) - $t0" | bc)
}
stop() { # sets $stopped (seconds from SIGTERM until the process is gone) and $down (when it last answered)
  local t0; t0=$(now)
  kill -TERM "$pid"
  down=$t0
  while curl -sf -o /dev/null --max-time 1 http://127.0.0.1:7891/healthz; do down=$(now); sleep 0.01; done
  wait "$pid" || true
  stopped=$(echo "$(now) - $t0" | bc)
}
: >"$out/stop_start.log"
echo "== $(nproc) cores; $n messages; seconds: first start, stop (SIGTERM to exit), start after it, pause (last answer to ready)"
for _ in $(seq "$pairs"); do
  for t in 0s 10s; do
    rm -f "$db"*; cp "$base" "$db"; [ -f "$base-wal" ] && cp "$base-wal" "$db-wal"
    serve "$t"; first=$start; stop; s=$stopped; d=$down
    serve "$t"; second=$start; pause=$(echo "$(now) - $d" | bc); stop
    printf "stop_snapshot_timeout %-4s %6.2f %6.2f %6.2f %6.2f\n" "$t" "$first" "$s" "$second" "$pause"
  done
done
grep -E "snapshotted|rebuilt" "$out/stop_start.log" | tail -4 | sed 's/^/  log: /'
