#!/usr/bin/env python3
"""Durable ingest of Telegram updates over HTTP: a `chatctx serve` (SQLite, fresh store) takes a replay file's
`telegram_update` events in batches on `POST /v1/events`, one connection, and the rate is printed. Each group
message carries its chat's title, so this is where an unchanged title costs a lookup and nothing in the log.

Usage: bench/telegram_ingest.py BINARY FILE [BATCH]   (FILE: e.g. gen_replay's telegram_update lines)
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

binary, path = sys.argv[1], sys.argv[2]
batch = int(sys.argv[3]) if len(sys.argv) > 3 else 100
events = [json.loads(line)["event"] for line in open(path) if line.startswith("{")]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
store = tempfile.mkdtemp(prefix="chatctx-tg-bench-")
proc = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--store", f"sqlite://{store}/db.db"],
                        env=dict(os.environ, CHATCTX_LOG="warn"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    for _ in range(100):
        try:
            conn.request("GET", "/readyz")
            if conn.getresponse().read() is not None:
                break
        except OSError:
            conn = http.client.HTTPConnection("127.0.0.1", port)
            time.sleep(0.1)
    bodies = [json.dumps(events[i:i + batch]) for i in range(0, len(events), batch)]
    started = time.perf_counter()
    for body in bodies:
        conn.request("POST", "/v1/events", body, {"content-type": "application/json"})
        r = conn.getresponse()
        answer = json.loads(r.read())
        assert r.status == 200 and not answer["rejected"], answer
    took = time.perf_counter() - started
    print(f"{len(events):,} updates in batches of {batch}: {took:.2f} s, {len(events) / took:,.0f} updates/s; "
          f"store {sum(os.path.getsize(os.path.join(store, f)) for f in os.listdir(store)) / 2**20:.1f} MiB")
finally:
    proc.terminate()
    proc.wait()
