"""A group bot with chatctx: aiogram 3, any OpenAI-compatible model, and a running `chatctx serve`.

When someone mentions the bot or replies to it, it asks chatctx for the conversation's context (who said what,
the reply parent, the room's chatter) and for what the user's "this" refers to, sends both to the model, and
answers. Everything the bot sends is recorded by chatctx as its own messages.

    pip install "./clients/python[aiogram]"  # from the repository root: the chatctx command and this package
    chatctx serve --preset group-bot &        # talkative history, deterministic selection
    BOT_TOKEN=123:ABC LLM_BASE_URL=http://127.0.0.1:11434/v1 LLM_MODEL=qwen2.5:7b python examples/aiogram_bot.py

Settings (environment): BOT_TOKEN; CHATCTX_URL (default http://127.0.0.1:7878); CHATCTX_TOKEN (when the
server has `server.tokens`); LLM_BASE_URL, LLM_MODEL, LLM_API_KEY (optional); TELEGRAM_API_URL (a local Bot API
server; the tests use a fake one).
"""

from __future__ import annotations

import asyncio
import logging
import os

import httpx
from aiogram import Bot, Dispatcher, F
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.types import Message

import chatctx
import chatctx.aiogram

SYSTEM = (
    "You are Helper, a friendly assistant in a Telegram group. Answer the last message briefly, in the "
    "language it was written in, using the conversation for context."
)

log = logging.getLogger("aiogram_bot")


def addressed(message: Message, report: chatctx.models.IngestReport | None, me_id: int) -> bool:
    """chatctx's own decision when it has one (a mention of the bot, a reply to it, a private chat), else the
    plain checks."""
    if report is not None and report.decisions:
        return report.decisions[0].triggered_agent
    replied = message.reply_to_message
    return (replied is not None and replied.from_user is not None and replied.from_user.id == me_id) or (
        message.chat.type == "private"
    )


async def ask_model(http: httpx.AsyncClient, messages: list[dict[str, str]]) -> str:
    base = os.environ.get("LLM_BASE_URL", "http://127.0.0.1:11434/v1").rstrip("/")
    headers = {"authorization": f"Bearer {os.environ['LLM_API_KEY']}"} if os.environ.get("LLM_API_KEY") else {}
    body = {"model": os.environ.get("LLM_MODEL", "qwen2.5:7b"), "messages": messages}
    r = await http.post(f"{base}/chat/completions", json=body, headers=headers, timeout=60)
    r.raise_for_status()
    return r.json()["choices"][0]["message"]["content"]


def build(context: chatctx.AsyncClient, http: httpx.AsyncClient) -> tuple[Bot, Dispatcher]:
    api = os.environ.get("TELEGRAM_API_URL")
    session = AiohttpSession(api=TelegramAPIServer.from_base(api)) if api else None
    bot = Bot(os.environ["BOT_TOKEN"], session=session)
    dp = Dispatcher()
    chatctx.aiogram.setup(dp, bot, context)  # every update in, every sent message recorded

    @dp.message(F.text | F.caption)
    async def answer(message: Message, chatctx_report: chatctx.models.IngestReport | None) -> None:
        if not addressed(message, chatctx_report, bot.id):
            return
        topic = message.message_thread_id if message.is_topic_message else None
        notes = []
        try:
            ctx = await context.get_chat_history_context(
                chat_id=message.chat.id, current_message_id=message.message_id, topic_id=topic
            )
            ref = await context.resolve_reference_target(
                chat_id=message.chat.id,
                current_message_id=message.message_id,
                sender_user_id=message.from_user.id if message.from_user else 0,
                raw_user_text=message.text or message.caption,
                topic_id=topic,
            )
            # A note only when something was resolved: a message that refers to nothing comes back not_found
            # (why: no_reference), and an ambiguous one is left to the model and the history.
            if (line := chatctx.describe_resolution(ref)) is not None:
                notes.append(line)
            messages = chatctx.openai_messages(ctx, system=SYSTEM, notes=notes)
        except chatctx.ChatctxError as e:  # no context: answer the message alone rather than not at all
            log.warning("chatctx: %s", e)
            messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": message.text or ""}]
        await message.reply(await ask_model(http, messages))

    return bot, dp


async def main() -> None:
    logging.basicConfig(level=logging.INFO)
    url = os.environ.get("CHATCTX_URL", chatctx.DEFAULT_BASE_URL)
    async with chatctx.AsyncClient(url, os.environ.get("CHATCTX_TOKEN")) as context, httpx.AsyncClient() as http:
        bot, dp = build(context, http)
        await dp.start_polling(bot, polling_timeout=1, handle_signals=True)


if __name__ == "__main__":
    asyncio.run(main())
