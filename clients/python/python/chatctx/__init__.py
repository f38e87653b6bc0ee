"""chatctx for Python: a typed client for the chatctx server (shipped in this package as the `chatctx` command)
and integrations for aiogram (`chatctx.aiogram`) and python-telegram-bot (`chatctx.ptb`).

    from chatctx import Client
    with Client("http://127.0.0.1:7878") as ctx:
        answer = ctx.get_chat_history_context(chat_id=-100500, current_message_id=502)
"""

from . import models
from ._client import DEFAULT_BASE_URL, AsyncClient, ChatctxError, Client, Id, Instant
from ._prompt import describe_resolution, openai_messages

__all__ = [
    "DEFAULT_BASE_URL",
    "AsyncClient",
    "ChatctxError",
    "Client",
    "Id",
    "Instant",
    "describe_resolution",
    "models",
    "openai_messages",
]
