"""What the framework integrations share: sending updates and the bot's own messages to chatctx, fail-open."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Optional

from . import models
from ._client import AsyncClient, _plain

log = logging.getLogger("chatctx")

# Bot API methods whose result is the message the bot sent or edited (a list for sendMediaGroup). Results of
# any other method (getMe, answerCallbackQuery, setMessageReaction, …) are not messages of the chat; nor are
# those of copyMessage(s) and forwardMessages, which answer bare message ids without the message.
SENDS = frozenset(
    {
        "sendMessage",
        "sendPhoto",
        "sendAudio",
        "sendDocument",
        "sendVideo",
        "sendAnimation",
        "sendVoice",
        "sendVideoNote",
        "sendPaidMedia",
        "sendMediaGroup",
        "sendLocation",
        "sendVenue",
        "sendContact",
        "sendPoll",
        "sendChecklist",
        "sendDice",
        "sendSticker",
        "sendInvoice",
        "sendGame",
        "forwardMessage",
    }
)
EDITS = frozenset(
    {
        "editMessageText",
        "editMessageCaption",
        "editMessageMedia",
        "editMessageLiveLocation",
        "stopMessageLiveLocation",
        "editMessageReplyMarkup",
        "editMessageChecklist",
    }
)


class Forwarder:
    """Sends Telegram updates and the bot's sent messages to chatctx. Every failure (chatctx down, slow,
    refusing) is logged and swallowed: the bot goes on without context rather than not at all."""

    def __init__(self, client: AsyncClient, timeout: float) -> None:
        self.client = client
        self.timeout = timeout
        self.bot_user_id: Optional[str] = None
        self.bot_username: Optional[str] = None

    def know_bot(self, user_id: Any, username: Optional[str]) -> None:
        self.bot_user_id = None if user_id is None else str(user_id)
        self.bot_username = username

    async def update(self, update: Any) -> Optional[models.IngestReport]:
        """Forwards one incoming update; its ingest report, or None when chatctx failed."""
        return await self._send(update, "update")

    @staticmethod
    def records(method: str) -> bool:
        """Whether a Bot API method's result is a message the bot sent or edited."""
        return method in SENDS or method in EDITS

    async def sent(self, method: str, result: Any) -> None:
        """Records what a Bot API call returned when it is a message the bot sent (or edited)."""
        field = "message" if method in SENDS else "edited_message" if method in EDITS else None
        if field is None:
            return
        for message in result if isinstance(result, list) else [result]:
            try:
                data = _plain(message)
            except TypeError:  # an inline message's edit answers `true`
                continue
            if "message_id" in data and "chat" in data:
                # The bot's messages never arrive as updates, so they have no update_id of their own; chatctx
                # identifies messages by chat and message id, not by update_id.
                await self._send({"update_id": 0, field: data}, method)

    async def _send(self, update: Any, what: str) -> Optional[models.IngestReport]:
        try:
            return await asyncio.wait_for(
                self.client.telegram_update(update, bot_username=self.bot_username, bot_user_id=self.bot_user_id),
                self.timeout,
            )
        except Exception as e:  # noqa: BLE001 - fail-open by design: the bot must never break on chatctx
            log.warning("chatctx: could not record %s (%s); the bot continues without it", what, e)
            return None
