#!/usr/bin/env python3
"""Adds resolve calls to a replay file, for checking that a change keeps every answer and record byte-identical.

After each `get_chat_history_context` call and after every 40th message event, sixteen
`resolve_reference_target` calls follow for that chat and message (explain on, one hint set each, each from its
own sender, in the message's topic when it has one); a `list_active_context_objects` call with explain ends the
file. Run the result through two builds and compare:

    cargo build --release -p chatctx --example gen_replay
    target/release/examples/gen_replay 100000 | bench/resolve_calls.py > /tmp/resolve.jsonl
    target/release/chatctx replay /tmp/resolve.jsonl --explain 2>/dev/null | md5sum

(the same md5 from the tree before and after a change; docs/benchmarks-issue-32.md gives the one of its time).
"""
import json
import sys

HINTS = [
    None,
    {"target_kind_hint": "image"},
    {"target_kind_hint": "poll", "ordinal_hint": "first"},
    {"target_kind_hint": "file", "positional_hint": "latest"},
    {"ownership_hint": "mine", "recency_hint": "recent"},
    {"positional_hint": "previous"},
    {"positional_hint": "above"},
    {"ordinal_hint": "second"},
    {"recency_hint": "currently_active"},
    {"ownership_hint": "bot_created"},
    {"target_kind_hint": "link"},
    {"positional_hint": "replied_message"},
    {"ordinal_hint": "last", "target_kind_hint": "message"},
    {"positional_hint": "current_topic_recent"},
    {"recency_hint": "latest"},
    {"target_kind_hint": "quote"},
]


def where(event):
    """(chat_id, message_id, topic_id) of a message event, core or Telegram; None for anything else."""
    if event.get("type") == "message":
        return event["chat_id"], event["message_id"], event.get("topic_id")
    m = event.get("update", {}).get("message") if event.get("type") == "telegram_update" else None
    if m:
        topic = m.get("message_thread_id") if m.get("is_topic_message") else None
        return str(m["chat"]["id"]), str(m["message_id"]), None if topic is None else str(topic)
    return None


def resolves(chat, message, topic):
    for i, hints in enumerate(HINTS):
        args = {"chat_id": chat, "current_message_id": message, "sender_user_id": str(1000 + i), "explain": True}
        if topic is not None:
            args["topic_id"] = topic
        if hints:
            args["normalized_reference_hints"] = hints
        yield {"call": "resolve_reference_target", "args": args}


def main():
    out = sys.stdout
    messages = 0
    last_chat = None
    for line in sys.stdin:
        out.write(line)
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if not isinstance(v, dict):
            continue
        if v.get("call") == "get_chat_history_context":
            a = v.get("args", {})
            for c in resolves(a.get("chat_id"), a.get("current_message_id"), a.get("topic_id")):
                out.write(json.dumps(c) + "\n")
        elif isinstance(v.get("event"), dict) and (w := where(v["event"])):
            messages += 1
            last_chat = w[0]
            if messages % 40 == 0:
                for c in resolves(*w):
                    out.write(json.dumps(c) + "\n")
    if last_chat is not None:
        out.write(json.dumps({"call": "list_active_context_objects", "args": {"chat_id": last_chat, "explain": True}}) + "\n")


if __name__ == "__main__":
    main()
