"""discord.py 2 integration: `chatctx.discord.setup(bot, client)`.

Forwards every Gateway dispatch the bot receives to chatctx (`POST /v1/discord/events`), as discord.py reads it
off the socket: the bot must be created with `enable_debug_events=True`, which is what makes discord.py hand raw
dispatches to `on_socket_raw_receive`. The bot's own messages arrive as dispatches too, so its replies are
recorded as its own without any other hook. Threads, edits, deletions, reactions and guild members (the guild's
people directory) all come along.

discord.py runs each event handler as its own task, so a handler that asks chatctx for context at once may be
served before the dispatch that carries its own message has been stored; ask with `current_message_id` and
retry once on `invalid_request`, or answer without it. chatctx failing (down, slow, refusing) is logged and never
breaks the bot; each forward waits at most `timeout`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Optional

from ._client import AsyncClient

__all__ = ["setup"]

log = logging.getLogger("chatctx")


def setup(bot: Any, client: AsyncClient, *, timeout: float = 2.0, bot_user_id: Optional[int] = None) -> None:
    """Forwards `bot`'s Gateway dispatches to chatctx through `client`. The bot's user id comes from `bot.user`
    once it has logged in (`bot_user_id` gives it before)."""
    if not getattr(bot, "_enable_debug_events", False):
        raise ValueError(
            "create the bot with enable_debug_events=True: discord.py only then hands raw Gateway dispatches "
            "to on_socket_raw_receive, which chatctx.discord forwards"
        )

    async def forward(payload: Any) -> None:
        try:
            data = json.loads(payload) if isinstance(payload, (str, bytes)) else payload
        except ValueError:
            return
        if not isinstance(data, dict) or data.get("op") != 0:
            return  # heartbeats, hellos: nothing of the conversation
        me = bot_user_id if bot_user_id is not None else getattr(getattr(bot, "user", None), "id", None)
        try:
            await asyncio.wait_for(client.discord_event(data, bot_user_id=me), timeout)
        except Exception as e:  # noqa: BLE001 - fail open: the bot goes on without context
            log.warning("chatctx: could not forward a Discord dispatch: %s", e)

    if hasattr(bot, "add_listener"):  # commands.Bot: listeners stack
        bot.add_listener(forward, "on_socket_raw_receive")
        return
    previous = getattr(bot, "on_socket_raw_receive", None)

    async def on_socket_raw_receive(payload: Any) -> None:
        await forward(payload)
        if previous is not None:
            await previous(payload)

    bot.on_socket_raw_receive = on_socket_raw_receive
