"""aiogram 3 integration: `chatctx.aiogram.setup(dispatcher, bot, client)`.

Two hooks, set up in one line:

- an outer middleware on `dispatcher.update`, so every incoming update reaches chatctx before any filter or
  handler runs (the handler's `get_chat_history_context` then sees the message it is answering); the ingest
  report is handed to handlers as `chatctx_report` (its `decisions[0].triggered_agent` says whether the message
  addresses the bot), None when chatctx could not be reached;
- a middleware on the bot's session, so what the bot sends (`sendMessage`, `sendPhoto`, `sendPoll`, … and edits)
  is recorded as its outbound messages: Telegram never sends a bot its own messages.

chatctx failing (down, slow, refusing) is logged and never breaks the bot; each call waits at most `timeout`.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from aiogram import Bot, Dispatcher
from aiogram.client.session.middlewares.base import BaseRequestMiddleware

from ._client import AsyncClient
from ._forward import Forwarder

__all__ = ["addressed", "setup"]


def setup(dispatcher: Dispatcher, bot: Bot, client: AsyncClient, *, timeout: float = 2.0) -> None:
    """Forwards `dispatcher`'s updates and `bot`'s sent messages to chatctx through `client`.

    The bot's id and username are read from the bot itself (`getMe`, once, cached by aiogram)."""
    forward = Forwarder(client, timeout)

    async def know_bot() -> None:
        if forward.bot_user_id is None:
            try:
                me = await bot.me()
                forward.know_bot(me.id, me.username)
            except Exception:  # noqa: BLE001 - without getMe the id from the token still marks outbound messages
                forward.know_bot(bot.id, None)

    async def inbound(handler: Callable[[Any, dict[str, Any]], Awaitable[Any]], update: Any, data: dict[str, Any]) -> Any:
        await know_bot()
        data["chatctx_report"] = await forward.update(update)
        return await handler(update, data)

    class Outbound(BaseRequestMiddleware):
        async def __call__(self, make_request: Any, bot: Bot, method: Any) -> Any:
            result = await make_request(bot, method)  # the call's result (a Message, a list, True, …)
            name = getattr(method, "__api_method__", "")
            # Only message-returning calls: know_bot's own getMe passes through here too.
            if result is not None and forward.records(name):
                await know_bot()
                await forward.sent(name, result)
            return result

    dispatcher.update.outer_middleware(inbound)
    bot.session.middleware(Outbound())


async def addressed(message: Any, report: Any, bot: Bot) -> bool:
    """Whether `message` addresses the bot: chatctx's own decision when it has one (`report`, the handler's
    `chatctx_report`), else the bot's own check, so that with chatctx down or slow a direct mention is still
    answered: a private chat, a reply to one of the bot's messages, or a mention of the bot (`@username` or a
    text mention of its id)."""
    decisions = getattr(report, "decisions", None)
    if decisions:
        return bool(decisions[0].triggered_agent)
    if message.chat.type == "private":
        return True
    replied = message.reply_to_message
    if replied is not None and replied.from_user is not None and replied.from_user.id == bot.id:
        return True
    try:
        username = (await bot.me()).username or ""
    except Exception:  # noqa: BLE001 - no getMe: the id alone still finds replies and text mentions
        username = ""
    text = message.text or message.caption or ""
    for e in (message.entities or []) + (message.caption_entities or []):
        if e.type == "text_mention" and e.user is not None and e.user.id == bot.id:
            return True
        if e.type == "mention" and username:
            shown = e.extract_from(text) if hasattr(e, "extract_from") else text[e.offset : e.offset + e.length]
            if shown.lstrip("@").lower() == username.lower():
                return True
    return False
