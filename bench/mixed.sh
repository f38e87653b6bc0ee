#!/usr/bin/env bash
# Mixed load on the server (SQLite store, loopback), as a busy bot fleet makes it: 256 connections over
# 1,000 chats, each request one of durable ingest (40 %), resolve_reference_target (25 %),
# get_chat_history_context (20 %), update_scenario (10 %) and list_active_context_objects (5 %).
# Reports throughput, latency p50/p99/p99.9, the server's peak RSS under the load, and the RSS of a fresh
# process on the same store afterwards.
# Usage: bench/mixed.sh [SECONDS] [BINARY]   (defaults: 120 s, the release build of this tree)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-120}
bin=${2:-}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install -y wrk"; exit 1; }
if [ -z "$bin" ]; then
  cargo build --release -q -p chatctx --bin chatctx
  bin=./target/release/chatctx
fi
out=bench/out; mkdir -p "$out"; rm -f "$out"/mixed.db*
port=7893
serve() {
  CHATCTX_LOG=warn "$bin" serve --listen 127.0.0.1:$port --store "sqlite://$out/mixed.db" 2>>"$out/mixed.log" &
  pid=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:$port/healthz >/dev/null && break; sleep 0.1; done
}
serve; trap 'kill $pid 2>/dev/null || true' EXIT
# Every chat has a message before the load, so a tool call is never refused for a chat not yet seen (a 404
# would count as an error below, and is the bench's doing, not the server's).
python3 - "$port" <<'PY'
import json, sys, urllib.request
port = sys.argv[1]
for start in range(0, 1000, 100):
    batch = [{"type": "message", "chat_id": str(-1000000 - c), "message_id": "seed", "kind": "inbound_user",
              "sent_at": 1769999999, "sender": {"user_id": "0", "username": "u0"}, "text": "hello"}
             for c in range(start, start + 100)]
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/events", json.dumps(batch).encode(),
                                 {"Content-Type": "application/json"})
    urllib.request.urlopen(req).read()
PY
cat > "$out/mixed.lua" <<'LUA'
local counter = 0
local thread_id = 0
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end
function init(args)
  math.randomseed(1000 + tid)
end
local topics = {"1", "2", "3"}
request = function()
  counter = counter + 1
  local chat = -1000000 - math.random(0, 999)
  local r = math.random(100)
  local now = 1770000000 + counter
  if r <= 40 then
    local id = tid * 100000000 + counter
    local body = string.format('{"type":"message","chat_id":"%d","message_id":"%d","kind":"inbound_user","sent_at":%d,"sender":{"user_id":"%d","username":"u%d"},"text":"look at this photo of the trip plan %d","attachments":[{"kind":"media.image","label":"p%d.jpg"}],"triggered_agent":true}', chat, id, now, counter % 50, counter % 50, counter, counter)
    return wrk.format("POST", "/v1/events", {["Content-Type"] = "application/json"}, body)
  elseif r <= 65 then
    local body = string.format('{"chat_id":"%d","current_message_id":"%d","sender_user_id":"%d","reference_text":"this photo","normalized_reference_hints":{"target_kind_hint":"image","positional_hint":"latest"},"now":%d}', chat, counter, counter % 50, now)
    return wrk.format("POST", "/v1/tools/resolve_reference_target", {["Content-Type"] = "application/json"}, body)
  elseif r <= 85 then
    local body = string.format('{"chat_id":"%d","query":"the trip plan","now":%d}', chat, now)
    return wrk.format("POST", "/v1/tools/get_chat_history_context", {["Content-Type"] = "application/json"}, body)
  elseif r <= 95 then
    local body = string.format('{"chat_id":"%d","patch":{"plan":{"step":%d,"who":"u%d"}},"now":%d}', chat, counter, counter % 50, now)
    return wrk.format("POST", "/v1/tools/update_scenario", {["Content-Type"] = "application/json"}, body)
  else
    local body = string.format('{"chat_id":"%d","now":%d}', chat, now)
    return wrk.format("POST", "/v1/tools/list_active_context_objects", {["Content-Type"] = "application/json"}, body)
  end
end
done = function(summary, latency, requests)
  io.write(string.format("requests %d in %.1f s: %.0f req/s; errors: connect %d read %d write %d timeout %d status %d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6), summary.errors.connect,
    summary.errors.read, summary.errors.write, summary.errors.timeout, summary.errors.status))
  io.write(string.format("latency p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms\n", latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, latency:percentile(99.9) / 1000, latency.max / 1000))
end
LUA
rss() { awk -v k="$2" '$1 == k":" {printf "%.0f MiB", $2 / 1024}' "/proc/$1/status"; }
echo "== $(nproc) cores; $bin; mixed load, 256 connections, 1,000 chats, ${secs}s"
echo "RSS of the server before the load: $(rss $pid VmRSS)"
wrk -t2 -c256 -d"${secs}s" --timeout 10s -s "$out/mixed.lua" http://127.0.0.1:$port | grep -E "^requests|^latency"
echo "peak RSS under the load: $(rss $pid VmHWM); threads: $(awk '$1 == "Threads:" {print $2}' /proc/$pid/status)"
kill $pid; wait $pid 2>/dev/null || true
serve
echo "RSS of a fresh process on the same store: $(rss $pid VmRSS) (store: $(du -sh "$out"/mixed.db* | awk '{print $1}' | paste -sd+))"
