"""Slack Bolt for Python integration (`AsyncApp`): `chatctx.slack_bolt.setup(app, client)`.

Two hooks, set up in one line:

- a global middleware that forwards every event's `body` (an Events API envelope) to chatctx before the
  listeners run, with the bot's user id from Bolt's context; the ingest report is in `context["chatctx_report"]`
  (None when chatctx could not be reached);
- a wrapper of the client the listeners use (`say`, `client.chat_postMessage`, `client.chat_update`), so the
  bot's own messages are recorded from what Slack answers. Bolt drops the bot's own `message` events before any
  middleware runs (`ignoring_self_events_enabled`, on by default), so without this chatctx would never see the
  bot's replies.

chatctx failing (down, slow, refusing) is logged and never breaks the app; each call waits at most `timeout`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Optional

from ._client import AsyncClient

__all__ = ["setup"]

log = logging.getLogger("chatctx")

# Web API methods whose answer is a message the bot posted (or changed).
POSTS = frozenset({"chat.postMessage", "chat.meMessage", "chat.scheduleMessage"})
UPDATES = frozenset({"chat.update"})


def _envelope(method: str, answer: Any, team_id: Optional[str]) -> Optional[dict[str, Any]]:
    """The Events API envelope of the message a Web API call posted or changed, when it did."""
    data = getattr(answer, "data", answer)
    if not isinstance(data, dict) or not data.get("ok") or not isinstance(data.get("message"), dict):
        return None
    channel = data.get("channel")
    if method in POSTS and channel:
        event = {"type": "message", "channel": channel, **data["message"]}
    elif method in UPDATES and channel:
        changed = {**data["message"], "ts": data.get("ts") or data["message"].get("ts")}
        event = {"type": "message", "subtype": "message_changed", "channel": channel, "message": changed}
    else:
        return None
    envelope: dict[str, Any] = {"type": "event_callback", "event": event}
    if team_id:
        envelope["team_id"] = team_id
    return envelope


def setup(app: Any, client: AsyncClient, *, timeout: float = 2.0) -> None:
    """Forwards `app`'s events and the bot's own messages to chatctx through `client` (an `AsyncApp`)."""

    async def send(envelope: Any, bot_user_id: Optional[str]) -> Any:
        try:
            return await asyncio.wait_for(client.slack_event(envelope, bot_user_id=bot_user_id), timeout)
        except Exception as e:  # noqa: BLE001 - fail open: the app goes on without context
            log.warning("chatctx: could not forward a Slack event: %s", e)
            return None

    def record(web: Any, team_id: Optional[str], bot_user_id: Optional[str]) -> None:
        """Wraps one Web API client (once): what it posts or changes is recorded as the bot's message."""
        if web is None or getattr(web, "_chatctx_recording", False):
            return
        call: Callable[..., Awaitable[Any]] = web.api_call

        async def api_call(api_method: str, *args: Any, **kwargs: Any) -> Any:
            answer = await call(api_method, *args, **kwargs)
            envelope = _envelope(api_method, answer, team_id)
            if envelope is not None:
                await send(envelope, bot_user_id)
            return answer

        web.api_call = api_call
        web._chatctx_recording = True

    async def forward(body: dict[str, Any], context: Any, next: Callable[[], Awaitable[None]]) -> None:  # noqa: A002
        bot_user_id = context.get("bot_user_id")
        record(context.get("client"), context.get("team_id"), bot_user_id)
        report = None
        if body.get("type") == "event_callback":
            report = await send(body, bot_user_id)
        context["chatctx_report"] = report
        await next()

    app.use(forward)
