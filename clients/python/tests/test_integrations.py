"""chatctx.aiogram and chatctx.ptb, in process, against the fake Bot API and the real server: every update
reaches chatctx before the handlers, the bot's sent messages are recorded as outbound, and a chatctx that is down
never breaks the bot."""

from __future__ import annotations

import itertools
import time
from typing import Any, Optional

import pytest
from conftest import free_port
from fakes import BOT, FakeBotApi

import chatctx
import chatctx.aiogram
import chatctx.ptb

_chats = itertools.count(1)


def group_message(chat: int, message_id: int, text: str, **fields: Any) -> dict[str, Any]:
    return {
        "update_id": message_id,
        "message": {
            "message_id": message_id,
            "date": int(time.time()) - 5,
            "chat": {"id": chat, "type": "supergroup", "title": "Team"},
            "from": {"id": 42, "is_bot": False, "first_name": "Alice", "username": "alice"},
            "text": text,
            **fields,
        },
    }


def mention(chat: int, message_id: int) -> dict[str, Any]:
    text = "@helper_bot status?"
    return group_message(chat, message_id, text, entities=[{"type": "mention", "offset": 0, "length": 11}])


@pytest.fixture
async def api() -> Any:
    fake = FakeBotApi()
    await fake.start()
    yield fake
    await fake.stop()


async def recorded(server: Any, chat: int) -> list[tuple[str, str, str]]:
    async with chatctx.AsyncClient(server.url) as c:
        return [(i.kind, i.sender.user_id, i.text) for i in (await c.history(chat)).items]


def aiogram_bot(api: FakeBotApi) -> Any:
    from aiogram import Bot, Dispatcher
    from aiogram.client.session.aiohttp import AiohttpSession
    from aiogram.client.telegram import TelegramAPIServer
    from aiogram.types import Message

    bot = Bot(api.token, session=AiohttpSession(api=TelegramAPIServer.from_base(api.url)))
    dp = Dispatcher()
    seen: list[Optional[chatctx.models.IngestReport]] = []

    @dp.message()
    async def reply(message: Message, chatctx_report: Optional[chatctx.models.IngestReport]) -> None:
        seen.append(chatctx_report)
        if chatctx_report is None or chatctx_report.decisions[0].triggered_agent:
            await message.answer("all green")

    return bot, dp, seen


async def feed_aiogram(bot: Any, dp: Any, update: dict[str, Any]) -> None:
    from aiogram.types import Update

    await dp.feed_update(bot, Update.model_validate(update, context={"bot": bot}))


async def test_aiogram_setup_forwards_updates_first_and_records_what_the_bot_sends(server: Any, api: Any) -> None:
    chat = -1009100000000 - next(_chats)
    bot, dp, seen = aiogram_bot(api)
    async with chatctx.AsyncClient(server.url) as client:
        chatctx.aiogram.setup(dp, bot, client)
        await feed_aiogram(bot, dp, group_message(chat, 1, "morning all"))
        await feed_aiogram(bot, dp, mention(chat, 2))
    await bot.session.close()
    # The handler saw chatctx's decision: the chatter does not address the bot, the mention does.
    assert [r.decisions[0].triggered_agent for r in seen if r] == [False, True]
    assert [p["text"] for _, p in api.sent] == ["all green"]
    assert await recorded(server, chat) == [
        ("inbound_user", "42", "morning all"),
        # The bot's first reply named it: the mention before it shows the same name (one name per person).
        ("inbound_user", "42", "[Helper](tg:@helper_bot) status?"),
        ("outbound_agent", str(BOT["id"]), "all green"),
    ]


async def test_aiogram_bot_keeps_working_when_chatctx_is_down(api: Any) -> None:
    chat = -1009100000000 - next(_chats)
    bot, dp, seen = aiogram_bot(api)
    async with chatctx.AsyncClient(f"http://127.0.0.1:{free_port()}", retries=0) as client:
        chatctx.aiogram.setup(dp, bot, client, timeout=0.5)
        started = time.monotonic()
        await feed_aiogram(bot, dp, mention(chat, 1))
        assert time.monotonic() - started < 3
    await bot.session.close()
    assert seen == [None]
    assert [p["text"] for _, p in api.sent] == ["all green"]


def ptb_application(api: FakeBotApi) -> Any:
    from telegram import Update
    from telegram.ext import Application, ContextTypes, MessageHandler, filters

    app = Application.builder().token(api.token).base_url(f"{api.url}/bot").updater(None).build()
    seen: list[Any] = []

    async def reply(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        report = context.chat_data.get("chatctx_report") if context.chat_data is not None else None
        seen.append(report)
        if report is None or report.decisions[0].triggered_agent:
            assert update.effective_message is not None
            await update.effective_message.reply_text("all green")

    app.add_handler(MessageHandler(filters.ALL, reply))
    return app, seen


async def test_ptb_setup_forwards_updates_first_and_records_what_the_bot_sends(server: Any, api: Any) -> None:
    from telegram import Update

    chat = -1009100000000 - next(_chats)
    app, seen = ptb_application(api)
    async with chatctx.AsyncClient(server.url) as client:
        chatctx.ptb.setup(app, client)
        await app.initialize()
        for data in (group_message(chat, 1, "morning all"), mention(chat, 2)):
            await app.process_update(Update.de_json(data, app.bot))
        await app.shutdown()
    assert [r.decisions[0].triggered_agent for r in seen] == [False, True]
    assert [p["text"] for _, p in api.sent] == ["all green"]
    history = await recorded(server, chat)
    assert history[-1] == ("outbound_agent", str(BOT["id"]), "all green"), history
    assert [kind for kind, _, _ in history] == ["inbound_user", "inbound_user", "outbound_agent"]


async def test_ptb_bot_keeps_working_when_chatctx_is_down(api: Any) -> None:
    from telegram import Update

    chat = -1009100000000 - next(_chats)
    app, seen = ptb_application(api)
    async with chatctx.AsyncClient(f"http://127.0.0.1:{free_port()}", retries=0) as client:
        chatctx.ptb.setup(app, client, timeout=0.5)
        await app.initialize()
        await app.process_update(Update.de_json(mention(chat, 1), app.bot))
        await app.shutdown()
    assert seen == [None]
    assert [p["text"] for _, p in api.sent] == ["all green"]
