#!/usr/bin/env bash
# The server on loopback under wrk (Debian package): resolve_reference_target at 64 connections, durable
# ingest one event per request and 100 per request; then restart time from the store.
# Usage: bench/serve.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install -y wrk"; exit 1; }
cargo build --release -q -p chatctx --bin chatctx --example store_bench
out=bench/out; mkdir -p "$out"; rm -f "$out"/serve.db*
log="$out/serve.log"
CHATCTX_LOG=warn ./target/release/chatctx serve --listen 127.0.0.1:7890 --store "sqlite://$out/serve.db" 2>"$log" &
pid=$!; trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf http://127.0.0.1:7890/healthz >/dev/null && break; sleep 0.1; done
# A busy chat to resolve in: 2,000 messages in 4 topics, an object on every fourth.
python3 bench/busy_chat.py 7890
mk() { # name, path, body
  printf 'wrk.method = "POST"\nwrk.path = "%s"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = [=[%s]=]\n' "$2" "$3" > "$out/$1.lua"
}
mk resolve /v1/tools/resolve_reference_target '{"chat_id":"-100777","topic_id":"0","current_message_id":"1996","sender_user_id":"1017","normalized_reference_hints":{"target_kind_hint":"image","positional_hint":"latest"},"now":1770060060}'
one='{"type":"message","chat_id":"-100888","message_id":"1","kind":"inbound_user","sent_at":1770000000,"sender":{"user_id":"1","username":"ann"},"text":"hello there","triggered_agent":true}'
mk ingest1 /v1/events "$one"
hundred=$(python3 -c "
import json
print(json.dumps([{'type':'message','chat_id':'-100889','message_id':str(i),'kind':'inbound_user','sent_at':1770000000+i,'sender':{'user_id':'1','username':'ann'},'text':'hello there','triggered_agent':True} for i in range(100)]))")
mk ingest100 /v1/events "$hundred"
echo "== $(nproc) cores; resolve_reference_target, the same request repeated (recorded once), 64 connections, ${secs}s"
wrk -t2 -c64 -d"${secs}s" --latency -s "$out/resolve.lua" http://127.0.0.1:7890 | grep -E "Requests/sec|99%|50%|Non-2xx"
cat > "$out/resolve_writes.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
counter = 0
request = function()
  counter = counter + 1
  local body = string.format('{"chat_id":"-100777","topic_id":"0","current_message_id":"%d","sender_user_id":"1017","normalized_reference_hints":{"target_kind_hint":"image","positional_hint":"latest"},"now":%d}', 1900 + counter % 100, 1770060060 + counter)
  return wrk.format(nil, "/v1/tools/resolve_reference_target", nil, body)
end
LUA
echo "== resolve_reference_target, a new time on every request (every answer recorded durably), 64 connections"
wrk -t2 -c64 -d"${secs}s" --latency -s "$out/resolve_writes.lua" http://127.0.0.1:7890 | grep -E "Requests/sec|99%|50%|Non-2xx"
echo "== durable ingest, one event per request, 16 connections"
wrk -t2 -c16 -d"${secs}s" --latency -s "$out/ingest1.lua" http://127.0.0.1:7890 | grep -E "Requests/sec|99%|Non-2xx"
echo "== durable ingest, the same 100 events per request (redeliveries: each an edit), 16 connections (events/s = requests/s x 100)"
wrk -t2 -c16 -d"${secs}s" --latency -s "$out/ingest100.lua" http://127.0.0.1:7890 | grep -E "Requests/sec|99%|Non-2xx"
cat > "$out/fresh100.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
counter = 0
-- Each thread numbers its messages apart (`tid` is set per thread: a local of that name would hide it, and
-- both threads would send the same ids, half of them redeliveries).
local threads = 0
function setup(thread) threads = threads + 1; thread:set("tid", threads) end
request = function()
  counter = counter + 1
  local parts = {}
  for i = 1, 100 do
    local id = (tid or 0) * 1000000000 + counter * 100 + i
    parts[i] = string.format('{"type":"message","chat_id":"-1008%d","message_id":"%d","kind":"inbound_user","sent_at":%d,"sender":{"user_id":"%d","username":"ann"},"text":"hello there %d","triggered_agent":true}', i % 10, id, 1770000000 + counter, i % 7, id)
  end
  return wrk.format(nil, "/v1/events", nil, "[" .. table.concat(parts, ",") .. "]")
end
LUA
echo "== durable ingest, 100 new messages per request over 10 chats, 16 connections (events/s = requests/s x 100)"
wrk -t2 -c16 -d"${secs}s" --latency -s "$out/fresh100.lua" http://127.0.0.1:7890 | grep -E "Requests/sec|99%|Non-2xx"
kill $pid; wait $pid 2>/dev/null || true
echo "== restart with 1,000,000 messages ingested"
./target/release/examples/store_bench 1000000 "$out/restart.db"
