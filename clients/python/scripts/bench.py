"""What the Python client adds to a call: latency of the same requests through `chatctx.Client`,
`chatctx.AsyncClient` and bare httpx, against a running server.

    chatctx serve --store memory --preset group-bot &
    python clients/python/scripts/bench.py [BASE_URL] [CALLS]

Feeds one chat 200 messages, then times CALLS `get_chat_history_context` and `resolve_reference_target` calls
one after another (one connection, no concurrency: the client's own cost, not the server's throughput).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Callable

import httpx

import chatctx

CHAT = -1009999000001


def seed(c: chatctx.Client) -> None:
    group = {"id": CHAT, "type": "supergroup", "title": "Bench"}
    for i in range(1, 201):
        who = {"id": 40 + i % 5, "is_bot": False, "first_name": f"User{i % 5}"}
        message = {"message_id": i, "date": 1770970800 + i * 30, "chat": group, "from": who, "text": f"message {i} about the release plan"}
        if i % 20 == 0:
            message["photo"] = [{"file_id": f"p{i}", "file_unique_id": f"u{i}", "width": 10, "height": 10}]
        c.telegram_update({"update_id": i, "message": message}, bot_username="bench_bot")


def report(name: str, samples: list[float]) -> None:
    samples.sort()
    p = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))] * 1e6  # noqa: E731
    print(f"{name:<44} p50 {p(0.5):7.0f} µs   p99 {p(0.99):7.0f} µs   mean {statistics.fmean(samples) * 1e6:7.0f} µs")


def timed(calls: int, fn: Callable[[], object]) -> list[float]:
    out = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


async def timed_async(calls: int, fn: Callable[[], object]) -> list[float]:
    out = []
    for _ in range(calls):
        t = time.perf_counter()
        await fn()  # type: ignore[misc]
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    base = sys.argv[1] if len(sys.argv) > 1 else chatctx.DEFAULT_BASE_URL
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    history = {"chat_id": str(CHAT), "current_message_id": "200", "now": 1770976800}
    resolve = {**history, "sender_user_id": "40", "raw_user_text": "this photo"}
    with chatctx.Client(base) as c, httpx.Client() as raw:
        seed(c)
        for _ in range(50):  # warm up connections and the server
            c.get_chat_history_context(**history)
        report("httpx, history context (JSON, no models)", timed(calls, lambda: raw.post(f"{base}/v1/tools/get_chat_history_context", json=history).json()))
        report("Client.get_chat_history_context", timed(calls, lambda: c.get_chat_history_context(**history)))
        report("httpx, resolve (JSON, no models)", timed(calls, lambda: raw.post(f"{base}/v1/tools/resolve_reference_target", json=resolve).json()))
        report("Client.resolve_reference_target", timed(calls, lambda: c.resolve_reference_target(**resolve)))

    async def run_async() -> None:
        async with chatctx.AsyncClient(base) as a, httpx.AsyncClient() as raw_async:
            await a.get_chat_history_context(**history)

            async def bare() -> object:
                r = await raw_async.post(f"{base}/v1/tools/get_chat_history_context", json=history)
                return r.json()

            report("httpx async, history context (no models)", await timed_async(calls, bare))
            report("AsyncClient.get_chat_history_context", await timed_async(calls, lambda: a.get_chat_history_context(**history)))
            report("AsyncClient.resolve_reference_target", await timed_async(calls, lambda: a.resolve_reference_target(**resolve)))

    asyncio.run(run_async())


if __name__ == "__main__":
    main()
