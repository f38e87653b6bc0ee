"""What every request of the clients is made of: the error, the request and how its answer is read, and how an
argument is written on the wire."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Optional, Union

from pydantic import TypeAdapter

from . import models

Id = Union[int, str]
"""A chat, topic, message or user id: Telegram's integers and any platform's strings alike."""
Instant = Union[int, str, datetime]
"""A time: Unix seconds, an RFC 3339 string, or a timezone-aware datetime."""

DEFAULT_BASE_URL = "http://127.0.0.1:7878"


class ChatctxError(Exception):
    """Every failure of a call: the server's documented `{code, message}`, or a client-side code.

    Client-side codes: `connection_error` (the server could not be reached, after the retries) and
    `bad_response` (an answer that is not chatctx's JSON, e.g. from a proxy). `status` is the HTTP status when
    the server answered.
    """

    def __init__(self, code: str, message: str, status: Optional[int] = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


@dataclass(frozen=True)
class _Call:
    """One HTTP request and how to read its answer."""

    method: str
    path: str
    parse: Any  # a pydantic TypeAdapter, None for a JSON value as is, or STATUS for "answered 200"
    body: Any = None
    params: Optional[dict[str, str]] = None
    # Safe to send again after a failure in flight (reads; ingest, whose resend is an edit of the same message).
    idempotent: bool = False
    text: bool = False  # the answer is text/plain


def _wire(name: str, value: Any) -> Any:
    """One argument as the server reads it: ids as strings, a time as Unix seconds or RFC 3339, a flag in a
    query as `true`/`false`, mappings and other iterables as JSON objects and arrays."""
    if name.endswith("_id"):
        return str(value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"`{name}` must be timezone-aware")
        return value.isoformat()
    if isinstance(value, bool):
        return str(value).lower() if name == "triggered_agent" else value
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return list(value)
    return value


def _fields(arguments: dict[str, Any], *leave_out: str) -> dict[str, Any]:
    """A method's arguments (its `locals()`) as request fields: `self`, `leave_out` and the arguments left
    unset (None) dropped, each converted by [`_wire`]. The methods' parameters are the request's fields by
    name, which tests/test_openapi.py holds to the server's document."""
    return {k: _wire(k, v) for k, v in arguments.items() if v is not None and k != "self" and k not in leave_out}


def _plain(data: Any) -> Any:
    """A Bot API object as JSON data: a dict, an aiogram model, or a python-telegram-bot object."""
    if isinstance(data, Mapping):
        return dict(data)
    if hasattr(data, "model_dump"):  # aiogram (pydantic): "from" by alias, dates as Unix seconds
        return data.model_dump(mode="json", exclude_none=True, by_alias=True)
    if hasattr(data, "to_dict"):  # python-telegram-bot
        return data.to_dict()
    raise TypeError(f"cannot send a {type(data).__name__} as JSON")


STATUS = "status"
"""A `_Call.parse` that reads only whether the answer was 200 (the probes)."""

_adapters: dict[Any, TypeAdapter[Any]] = {}


def _adapter(kind: Any) -> TypeAdapter[Any]:
    if kind not in _adapters:
        _adapters[kind] = TypeAdapter(kind)
    return _adapters[kind]


# What each tool answers (a tool this client does not know answers plain JSON).
_TOOL_ANSWERS: dict[str, Any] = {
    "get_chat_history_context": models.HistoryContext,
    "get_chat_history_range": models.HistoryPage,
    "resolve_reference_target": models.Resolution,
    "list_active_context_objects": models.ActiveObjects,
    "get_scenario": models.ScenarioState,
    "update_scenario": models.ScenarioState,
    "revert_scenario": models.ScenarioState,
    "update_summary": models.SummaryWritten,
}
