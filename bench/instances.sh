#!/usr/bin/env bash
# One versus two chatctx instances on one PostgreSQL, against one instance on SQLite, on loopback under wrk:
# durable ingest (1 and 100 events per request, spread over 1,000 chats) and resolve_reference_target (the
# same request repeated on a busy chat: a read, which on PostgreSQL first checks the chat for news).
# Two instances are loaded by two wrk processes at once (half the connections each); figures are summed.
# PostgreSQL: $CHATCTX_BENCH_POSTGRES (an admin URL) or, when unset, a throwaway cluster started here
# (Debian's postgresql package, run as the postgres user).
# Usage: bench/instances.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install -y wrk"; exit 1; }
cargo build --release -q -p chatctx --bin chatctx
out=bench/out; mkdir -p "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; [ -n "${stop_pg:-}" ] && eval "$stop_pg"; }
trap cleanup EXIT

admin=${CHATCTX_BENCH_POSTGRES:-}
if [ -z "$admin" ]; then
  pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  pgdir=$(mktemp -d); chown postgres "$pgdir"
  su postgres -s /bin/sh -c "$pgbin/initdb -D $pgdir/data -U postgres --auth=trust >/dev/null"
  su postgres -s /bin/sh -c "$pgbin/pg_ctl -D $pgdir/data -l $pgdir/log -w -o '-k $pgdir -p 55432 -c listen_addresses=127.0.0.1 -c max_connections=200' start >/dev/null"
  stop_pg="su postgres -s /bin/sh -c '$pgbin/pg_ctl -D $pgdir/data -m fast stop >/dev/null'"
  admin="postgres://postgres@127.0.0.1:55432/postgres"
fi
fresh_db() { psql "$admin" -q -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1"; echo "${admin%/*}/$1"; }

serve() { # port, store url
  CHATCTX_LOG=warn CHATCTX_HISTORY__MODE=talkative ./target/release/chatctx serve --listen "127.0.0.1:$1" --store "$2" 2>>"$out/instances.log" &
  pids+=($!)
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$1/healthz" >/dev/null && return; sleep 0.1; done
  echo "the server on port $1 did not start"; exit 1
}


cat > "$out/resolve.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.path = "/v1/tools/resolve_reference_target"
wrk.body = '{"chat_id":"-100777","topic_id":"0","current_message_id":"1996","sender_user_id":"1017","normalized_reference_hints":{"target_kind_hint":"image","positional_hint":"latest"},"now":1770060060}'
LUA
ingest_lua() { # events per request
  cat > "$out/ingest$1.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local n = $1
local counter = 0
local base = 0
init = function(args) math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 100000); base = math.random(1, 1000000000) end
request = function()
  counter = counter + 1
  local chat = math.random(1, 1000)
  local parts = {}
  for i = 1, n do
    parts[i] = string.format('{"type":"message","chat_id":"-3%04d","message_id":"%d","kind":"inbound_user","sent_at":%d,"sender":{"user_id":"%d","username":"u"},"text":"hello there, a message of ordinary length","triggered_agent":true}', chat, base + counter * n + i, 1770000000 + counter, i % 7)
  end
  return wrk.format(nil, "/v1/events", nil, "[" .. table.concat(parts, ",") .. "]")
end
LUA
}
ingest_lua 1; ingest_lua 100

# wrk against each port at once; prints summed requests/s and the worst p99.
load() { # script, connections per instance, ports...
  local script=$1 conns=$2; shift 2
  local files=() loaders=()
  for port in "$@"; do
    f=$(mktemp); files+=("$f")
    wrk -t1 -c"$conns" -d"${secs}s" --latency -s "$script" "http://127.0.0.1:$port" >"$f" &
    loaders+=($!)
  done
  wait "${loaders[@]}"
  python3 - "${files[@]}" <<'PY'
import re, sys
rps, p99, p50, errors = 0.0, 0.0, 0.0, 0
def ms(v, unit): return float(v) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
for f in sys.argv[1:]:
    t = open(f).read()
    rps += float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
    m = re.search(r"99%\s+([\d.]+)(us|ms|s)", t); p99 = max(p99, ms(*m.groups()))
    m = re.search(r"50%\s+([\d.]+)(us|ms|s)", t); p50 = max(p50, ms(*m.groups()))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", t); errors += int(m.group(1)) if m else 0
print(f"{rps:10.0f} req/s   p50 {p50:7.2f} ms   p99 {p99:7.2f} ms" + (f"   NON-2XX {errors}" if errors else ""))
PY
  rm -f "${files[@]}"
}

run() { # label, ports...
  local label=$1; shift
  echo "== $label ($(nproc) cores, ${secs}s each)"
  printf '  resolve, 64 connections:            '; load "$out/resolve.lua" $((64 / $#)) "$@"
  printf '  resolve, 1 connection (latency):    '; load "$out/resolve.lua" 1 "$1"
  printf '  ingest 1 event/request, 16 conns:   '; load "$out/ingest1.lua" $((16 / $#)) "$@"
  printf '  ingest 100 events/request, 16 conns:'; load "$out/ingest100.lua" $((16 / $#)) "$@"
}

rm -f "$out"/instances.db* "$out/instances.log"
serve 7901 "sqlite://$out/instances.db"; python3 bench/busy_chat.py 7901
run "one instance, SQLite" 7901
kill "${pids[-1]}"

url=$(fresh_db chatctx_bench_one)
serve 7902 "$url"; python3 bench/busy_chat.py 7902
run "one instance, PostgreSQL" 7902
kill "${pids[-1]}"

url=$(fresh_db chatctx_bench_two)
serve 7903 "$url"; serve 7904 "$url"; python3 bench/busy_chat.py 7903
run "two instances, one PostgreSQL" 7903 7904
echo "(ingest: events/s = req/s x events per request)"
