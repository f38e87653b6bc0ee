"""Seeds a busy forum chat into a chatctx server: 2,000 messages in 4 topics, an object on every fourth.

Usage: python3 bench/busy_chat.py PORT (used by bench/serve.sh and bench/instances.sh).
"""
import json
import sys
import urllib.request

port = sys.argv[1]


def post(body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/events", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req).read()


kinds = ["media.image", "media.pdf", "media.voice", "poll"]
batch = []
for m in range(1, 2001):
    e = {"type": "message", "chat_id": "-100777", "topic_id": str(m % 4), "message_id": str(m), "kind": "inbound_user",
         "sent_at": 1770000000 + m * 30, "sender": {"user_id": str(1000 + m % 20), "username": f"user{m % 20}"},
         "text": f"message {m} about the plan", "triggered_agent": True}
    if m % 4 == 0:
        e["attachments"] = [{"kind": kinds[m // 4 % 4], "label": f"file {m}"}]
    batch.append(e)
    if len(batch) == 200:
        post(batch)
        batch = []
