"""python-telegram-bot (v21+) integration: `chatctx.ptb.setup(application, client)`.

Two hooks, set up in one line:

- a `TypeHandler(Update)` in an early handler group (`group`, default -1000), so every update reaches chatctx
  before the bot's own handlers run; the ingest report is kept in `context.chat_data["chatctx_report"]` when
  the update has a chat (None when chatctx could not be reached);
- a wrapper around the bot's Bot API requests, so what the bot sends (`sendMessage`, `sendPhoto`, `sendPoll`, …
  and edits) is recorded as its outbound messages: Telegram never sends a bot its own messages.

chatctx failing (down, slow, refusing) is logged and never breaks the bot; each call waits at most `timeout`.
"""

from __future__ import annotations

import functools
from typing import Any

from telegram import Update
from telegram.ext import Application, ContextTypes, TypeHandler

from ._client import AsyncClient
from ._forward import Forwarder

__all__ = ["setup"]


def setup(
    application: Application[Any, Any, Any, Any, Any, Any],
    client: AsyncClient,
    *,
    group: int = -1000,
    timeout: float = 2.0,
) -> None:
    """Forwards `application`'s updates and its bot's sent messages to chatctx through `client`."""
    forward = Forwarder(client, timeout)
    bot = application.bot

    def know_bot() -> None:
        if forward.bot_user_id is None:
            try:
                forward.know_bot(bot.id, bot.username)  # known once the application is initialized (getMe)
            except RuntimeError:
                pass

    async def inbound(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        know_bot()
        report = await forward.update(update)
        if update.effective_chat is not None and context.chat_data is not None:
            context.chat_data["chatctx_report"] = report

    request = bot.request  # the request object of every call but getUpdates
    post = request.post

    @functools.wraps(post)
    async def recording_post(url: str, *args: Any, **kwargs: Any) -> Any:
        result = await post(url, *args, **kwargs)
        method = url.rsplit("/", 1)[-1]
        if forward.records(method):
            know_bot()
            await forward.sent(method, result)
        return result

    request.post = recording_post
    application.add_handler(TypeHandler(Update, inbound), group=group)
