"""chatctx.discord with a real discord.py client: the Gateway dispatches discord.py hands to
`on_socket_raw_receive` (a member's mention of the bot, then the bot's own reply) reach chatctx, the reply as
the bot's own; with chatctx stopped nothing breaks; a bot without debug events is refused clearly."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import discord
import pytest
from conftest import free_port

import chatctx
import chatctx.discord

_channels = itertools.count(1)


def dispatch(channel: str, message_id: str, author: dict[str, Any], content: str, mentions: list[Any]) -> dict[str, Any]:
    return {"op": 0, "s": 1, "t": "MESSAGE_CREATE", "d": {"id": message_id, "channel_id": channel, "guild_id": "880000000000000001",
            "type": 0, "timestamp": "2026-02-13T08:20:00.000000+00:00", "content": content, "author": author,
            "member": {"nick": None, "roles": []}, "mentions": mentions}}


HELPER = {"id": "999", "username": "helper", "global_name": "Helper", "bot": True}
BOB = {"id": "43", "username": "bobb", "global_name": "Bob Brown"}


async def until(predicate: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (value := await predicate()) is not None:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


async def test_dispatches_reach_chatctx_and_the_bots_reply_is_its_own(server: Any) -> None:
    bot = discord.Client(intents=discord.Intents.none(), enable_debug_events=True)
    await bot._async_setup_hook()  # what login does first: the client's loop, so dispatch schedules handlers
    channel = f"8800000000001{next(_channels):05d}"
    async with chatctx.AsyncClient(server.url) as client:
        chatctx.discord.setup(bot, client, bot_user_id=999)
        bot.dispatch("socket_raw_receive", dispatch(channel, "1", BOB, "<@999> is prod back?", [HELPER]))
        bot.dispatch("socket_raw_receive", '{"op": 11}')  # a heartbeat ack: ignored
        await until(lambda: _count(client, channel, 1))
        bot.dispatch("socket_raw_receive", dispatch(channel, "2", HELPER, "Yes, since 08:15.", []))
        items = await until(lambda: _count(client, channel, 2))
    assert [(i.kind, i.sender.user_id) for i in items] == [("inbound_user", "43"), ("outbound_agent", "999")]
    assert items[0].text == "[Helper](discord:@helper) is prod back?"


async def _count(client: chatctx.AsyncClient, channel: str, n: int) -> Any:
    try:
        items = (await client.history(channel, channel="discord")).items
    except chatctx.ChatctxError:
        return None
    return items if len(items) >= n else None


async def test_with_chatctx_stopped_nothing_breaks() -> None:
    bot = discord.Client(intents=discord.Intents.none(), enable_debug_events=True)
    async with chatctx.AsyncClient(f"http://127.0.0.1:{free_port()}", timeout=1) as client:
        chatctx.discord.setup(bot, client, bot_user_id=999, timeout=1)
        started = time.monotonic()
        await bot.on_socket_raw_receive(dispatch("8800000000009", "1", BOB, "hi", []))  # type: ignore[attr-defined]
        assert time.monotonic() - started < 5


def test_a_bot_without_debug_events_is_refused() -> None:
    with pytest.raises(ValueError, match="enable_debug_events=True"):
        chatctx.discord.setup(discord.Client(intents=discord.Intents.none()), chatctx.AsyncClient("http://127.0.0.1:1"))
