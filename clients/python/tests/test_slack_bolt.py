"""chatctx.slack_bolt with Bolt's defaults (the bot's own message events dropped before any middleware): a real
AsyncApp, and a real synchronous App, dispatches an app_mention, its listener answers with `say`, a fake Slack Web
API takes the call; the mention and the bot's reply are both in chatctx's history, and with chatctx stopped or
never answering the app still answers, within the timeout."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any

import pytest

from aiohttp import web
from conftest import free_port
from fakes import never_answering, serve
from slack_bolt import App, BoltRequest
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.web import WebClient
from slack_sdk.web.async_client import AsyncWebClient

import chatctx
import chatctx.slack_bolt

_channels = itertools.count(1)
BOT_USER = "U0HELPER"


class FakeSlackApi:
    """`auth.test` and `chat.postMessage`, answered as Slack answers them."""

    def __init__(self) -> None:
        self.posted: list[dict[str, Any]] = []
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/api/{method}", self._handle)
        self._runner, port = await serve(app)
        self.url = f"http://127.0.0.1:{port}/api/"

    async def stop(self) -> None:
        await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = dict(await request.post()) if request.content_type != "application/json" else await request.json()
        if method == "auth.test":
            return web.json_response({"ok": True, "user_id": BOT_USER, "bot_id": "B0HELPER", "team_id": "T0ACME", "user": "helper"})
        if method == "chat.postMessage":
            self.posted.append(params)
            ts = f"1770970900.{len(self.posted):06d}"
            message = {"type": "message", "user": BOT_USER, "bot_id": "B0HELPER", "text": params["text"], "ts": ts,
                       "team": "T0ACME", "bot_profile": {"id": "B0HELPER", "name": "Helper", "team_id": "T0ACME"}}
            if params.get("thread_ts"):
                message["thread_ts"] = params["thread_ts"]
            return web.json_response({"ok": True, "channel": params["channel"], "ts": ts, "message": message})
        return web.json_response({"ok": False, "error": "unknown_method"})


def app_with(api: FakeSlackApi, client: chatctx.AsyncClient) -> AsyncApp:
    app = AsyncApp(
        client=AsyncWebClient(token="xoxb-test", base_url=api.url),
        signing_secret="not-checked",
        request_verification_enabled=False,
        process_before_response=True,  # the listener has run when dispatch returns
    )
    chatctx.slack_bolt.setup(app, client)

    @app.event("app_mention")
    async def answer(event: dict[str, Any], say: Any) -> None:
        await say(text="all green", thread_ts=event.get("thread_ts") or event["ts"])

    return app


def sync_app_with(api: FakeSlackApi, client: chatctx.Client) -> App:
    """The same app on Bolt's synchronous `App`."""
    app = App(
        client=WebClient(token="xoxb-test", base_url=api.url),
        signing_secret="not-checked",
        request_verification_enabled=False,
        process_before_response=True,
    )
    chatctx.slack_bolt.setup(app, client)

    @app.event("app_mention")
    def answer(event: dict[str, Any], say: Any) -> None:
        say(text="all green", thread_ts=event.get("thread_ts") or event["ts"])

    return app


def mention(channel: str) -> dict[str, Any]:
    return {
        "type": "event_callback",
        "team_id": "T0ACME",
        "api_app_id": "A0HELPER",
        "event_id": "Ev0001",
        "event_time": 1770970800,
        "authorizations": [{"team_id": "T0ACME", "user_id": BOT_USER, "is_bot": True}],
        "event": {"type": "app_mention", "user": "U0BOB", "text": f"<@{BOT_USER}> is prod back?", "ts": "1770970800.000100",
                  "channel": channel, "event_ts": "1770970800.000100"},
    }


async def dispatch(app: AsyncApp, body: dict[str, Any]) -> int:
    response = await app.async_dispatch(AsyncBoltRequest(body=json.dumps(body), headers={"content-type": ["application/json"]}))
    return response.status


async def sync_dispatch(app: App, body: dict[str, Any]) -> int:
    """Dispatches on a thread: the sync app's HTTP calls go to fakes served by this test's event loop."""
    request = BoltRequest(body=json.dumps(body), headers={"content-type": ["application/json"]})
    return (await asyncio.to_thread(app.dispatch, request)).status


async def test_bolt_with_its_defaults_records_the_mention_and_the_bots_reply(server: Any) -> None:
    api = FakeSlackApi()
    await api.start()
    channel = f"C0BOLT{next(_channels)}"
    try:
        async with chatctx.AsyncClient(server.url) as client:
            assert await dispatch(app_with(api, client), mention(channel)) == 200
            assert [p["text"] for p in api.posted] == ["all green"]
            items = (await client.history(channel, channel="slack", topic_id="1770970800.000100")).items
            by_kind = [(i.kind, i.sender.user_id, i.text) for i in items]
            assert by_kind == [("outbound_agent", BOT_USER, "all green")], by_kind
            general = (await client.history(channel, channel="slack")).items
            assert [(i.kind, i.text) for i in general][0] == ("inbound_user", "[Helper](slack:@U0HELPER) is prod back?")
    finally:
        await api.stop()


async def test_bolt_answers_with_chatctx_stopped() -> None:
    api = FakeSlackApi()
    await api.start()
    try:
        async with chatctx.AsyncClient(f"http://127.0.0.1:{free_port()}", timeout=2) as client:
            assert await dispatch(app_with(api, client), mention("C0DOWN")) == 200
        assert [p["text"] for p in api.posted] == ["all green"]
    finally:
        await api.stop()


async def test_sync_app_with_its_defaults_records_the_mention_and_the_bots_reply(server: Any) -> None:
    api = FakeSlackApi()
    await api.start()
    channel = f"C0SYNC{next(_channels)}"
    try:
        with chatctx.Client(server.url) as client:
            app = await asyncio.to_thread(sync_app_with, api, client)  # App calls auth.test as it starts
            assert await sync_dispatch(app, mention(channel)) == 200
            assert [p["text"] for p in api.posted] == ["all green"]
            thread = await asyncio.to_thread(client.history, channel, channel="slack", topic_id="1770970800.000100")
            assert [(i.kind, i.sender.user_id, i.text) for i in thread.items] == [("outbound_agent", BOT_USER, "all green")]
            general = await asyncio.to_thread(client.history, channel, channel="slack")
            assert [(i.kind, i.text) for i in general.items][0] == ("inbound_user", "[Helper](slack:@U0HELPER) is prod back?")
    finally:
        await api.stop()


async def test_sync_app_answers_with_chatctx_stopped_or_never_answering() -> None:
    api = FakeSlackApi()
    await api.start()
    hanging, hanging_url = await never_answering()
    try:
        for url in (f"http://127.0.0.1:{free_port()}", hanging_url):
            posted = len(api.posted)
            with chatctx.Client(url, timeout=30) as client:
                app = await asyncio.to_thread(sync_app_with, api, client)
                started = time.monotonic()
                assert await sync_dispatch(app, mention("C0DOWN")) == 200
                # The event and the reply each wait at most setup's timeout (2 s), whatever the client's own is.
                assert time.monotonic() - started < 6, url
            assert [p["text"] for p in api.posted[posted:]] == ["all green"]
    finally:
        await hanging.cleanup()
        await api.stop()


def test_setup_refuses_a_client_of_the_other_kind() -> None:
    with chatctx.Client("http://127.0.0.1:1") as sync_client:
        with pytest.raises(TypeError, match="AsyncClient"):
            chatctx.slack_bolt.setup(AsyncApp(token="xoxb-test", signing_secret="x"), sync_client)
    async_client = chatctx.AsyncClient("http://127.0.0.1:1")
    with pytest.raises(TypeError, match="chatctx.Client"):
        chatctx.slack_bolt.setup(App(token="xoxb-test", signing_secret="x", token_verification_enabled=False), async_client)
