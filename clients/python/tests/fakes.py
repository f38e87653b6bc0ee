"""Real HTTP servers standing in for Telegram's Bot API and for a chat-completions model, on loopback."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Optional

from aiohttp import web

async def serve(app: web.Application) -> tuple[web.AppRunner, int]:
    """Starts `app` on a free loopback port."""
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


BOT = {"id": 999, "is_bot": True, "first_name": "Helper", "username": "helper_bot"}


class FakeBotApi:
    """Enough of the Bot API for a polling bot: getMe, deleteWebhook, getUpdates (long polling over a queue the
    test fills), and the send methods, which answer a real-looking Message and remember it."""

    def __init__(self, token: str = "123456:TEST-token") -> None:
        self.token = token
        self.updates: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.sent_event = asyncio.Event()
        self._next_update = 1
        self._next_message = 9000
        self._runner: Optional[web.AppRunner] = None
        self.url = ""

    def push(self, update: dict[str, Any]) -> None:
        update = {"update_id": self._next_update, **update}
        self._next_update += 1
        self.updates.put_nowait(update)

    async def start(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        self._runner, port = await serve(app)
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        if self._runner:
            await self._runner.cleanup()

    async def _params(self, request: web.Request) -> dict[str, Any]:
        if request.content_type == "application/json":
            return await request.json()
        form = await request.post()
        out: dict[str, Any] = {}
        for k, v in form.items():
            try:
                out[k] = json.loads(v) if isinstance(v, str) and v[:1] in "{[" else v
            except ValueError:
                out[k] = v
        return {**dict(request.query), **out}

    async def _handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.json_response({"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401)
        method = request.match_info["method"]
        params = await self._params(request)
        if method == "getMe":
            return self._ok(BOT)
        if method in ("deleteWebhook", "setMyCommands", "close", "logOut"):
            return self._ok(True)
        if method == "getUpdates":
            return self._ok(await self._poll(float(params.get("timeout", 0) or 0)))
        if method == "sendMessage":
            return self._ok(self._message(params))
        return web.json_response({"ok": False, "error_code": 404, "description": f"Not Found: {method}"}, status=404)

    async def _poll(self, timeout: float) -> list[dict[str, Any]]:
        try:
            first = await asyncio.wait_for(self.updates.get(), timeout=min(timeout, 1.0) or 0.05)
        except asyncio.TimeoutError:
            return []
        batch = [first]
        while not self.updates.empty():
            batch.append(self.updates.get_nowait())
        return batch

    def _message(self, params: dict[str, Any]) -> dict[str, Any]:
        self._next_message += 1
        chat_id = int(params["chat_id"])
        message: dict[str, Any] = {
            "message_id": self._next_message,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "supergroup" if chat_id < 0 else "private", "title": "Design team"},
            "from": BOT,
            "text": params["text"],
        }
        reply = params.get("reply_parameters") or {}
        if isinstance(reply, str):
            reply = json.loads(reply)
        if reply.get("message_id") or params.get("reply_to_message_id"):
            parent = reply.get("message_id") or params.get("reply_to_message_id")
            message["reply_to_message"] = {"message_id": int(parent), "date": message["date"], "chat": message["chat"]}
        if params.get("message_thread_id"):
            message["message_thread_id"] = int(params["message_thread_id"])
            message["is_topic_message"] = True
        self.sent.append(("sendMessage", message))
        self.sent_event.set()
        return message

    @staticmethod
    def _ok(result: Any) -> web.Response:
        return web.json_response({"ok": True, "result": result})


class FakeModel:
    """An OpenAI-compatible `/v1/chat/completions` that remembers every request and answers `reply`."""

    def __init__(self, reply: str = "Clean shapes; the teal works.") -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self._runner: Optional[web.AppRunner] = None
        self.url = ""

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        self._runner, port = await serve(app)
        self.url = f"http://127.0.0.1:{port}/v1"
        return self.url

    async def stop(self) -> None:
        if self._runner:
            await self._runner.cleanup()

    async def _complete(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        return web.json_response(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "stub"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": self.reply}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )


async def never_answering() -> tuple[web.AppRunner, str]:
    """A server that takes the request and never answers: a chatctx that hangs."""

    async def hang(_: web.Request) -> web.Response:
        await asyncio.sleep(3600)
        return web.Response()

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", hang)
    # Cleanup drops the hanging requests at once instead of waiting for them.
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"
