"""Response models, generated from chatctx's /openapi.json by scripts/generate_models.py. Do not edit.

Every model keeps fields it does not know (a newer server's additions) and converts to plain data with
`.model_dump()` (`.model_dump(mode="json")` for JSON-ready values).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field


class Model(BaseModel):
    """The base of every response model."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


ErrorCode = str
"""Stable error codes. Adapters map each to an HTTP status once."""

ListStatus = str
"""`ok` when something is active."""

Role = str
"""A prompt role."""

SelectionMethod = str
"""How the history was chosen."""

Status = str
"""`resolved` | `ambiguous` | `not_found`."""

Tier = str
"""Where the answer was found."""


class ActiveObject(Model):
    """One listed object."""

    activated_at: datetime = Field(description="When.")
    activation: str = Field(description="Its latest activation.")
    author: Optional[str] = Field(None, description="Who posted it, as the prompt refers to them.")
    caption: Optional[str] = Field(None, description="The first words of the message that carries it.")
    chat_id: str = Field(description="The chat.")
    created_at: datetime = Field(description="When it became known.")
    created_by_bot: bool = Field(description="Whether the bot created it.")
    created_by_user_id: Optional[str] = Field(None, description="Who created it.")
    expires_at: datetime = Field(description="When it stops being active.")
    file: Optional[FileRef] = Field(None, description="The platform's file reference (media, files): enough to send or fetch it again.")
    kind: str = Field(description="Kind.")
    last_touched_at: datetime = Field(description="Last change or activation.")
    object_id: str = Field(description="Id.")
    reasons: list[str] = Field(description="Why it is listed.")
    scope_match: Tier = Field(description="Which scope tier it matched.")
    source_message_id: Optional[str] = Field(None, description="The message that carries it.")
    title_or_label: Optional[str] = Field(None, description="At most 80 characters.")
    topic_id: Optional[str] = Field(None, description="The topic.")


class ActiveObjects(Model):
    """`list_active_context_objects` response."""

    objects: list[ActiveObject] = Field(description="Ordered by scope tier, then last activation (newer first), then `object_id`.")
    scope_used: Tier = Field(description="The request's scope: `topic` in a forum topic, else `chat` (`reply_chain` objects are included in both).")
    status: ListStatus = Field(description="`ok` or `empty`.")
    truncated: bool = Field(description="More were active than `limit`.")


class Candidate(Model):
    """A scored candidate."""

    author: Optional[str] = Field(None, description="Who posted it, as the prompt refers to them.")
    caption: Optional[str] = Field(None, description="The first words of the message that carries it.")
    chat_id: str = Field(description="The chat.")
    created_at: datetime = Field(description="When it became known.")
    created_by_bot: bool = Field(description="Whether the bot created it.")
    created_by_user_id: Optional[str] = Field(None, description="Who created it.")
    file: Optional[FileRef] = Field(None, description="The platform's file reference (media, files): enough to send or fetch it again.")
    kind: str = Field(description="Kind.")
    last_touched_at: datetime = Field(description="Last change or activation.")
    object_id: str = Field(description="Id.")
    reasons: list[str] = Field(description="Why.")
    score: float = Field(description="Its score (points, two decimals).")
    source_message_id: Optional[str] = Field(None, description="The message that carries it.")
    title_or_label: Optional[str] = Field(None, description="At most 80 characters.")
    topic_id: Optional[str] = Field(None, description="The topic.")


class ChatHistoryItem(Model):
    """One recorded event as the prompt sees it."""

    channel: str = Field(description="Platform.")
    chat_id: str = Field(description="The chat.")
    chat_type: Optional[str] = Field(None, description="`private`, `group`, …")
    kind: str = Field(description="Who produced it.")
    message_id: Optional[str] = Field(None, description="The message id (absent for reactions).")
    quote: Optional[HistoryQuote] = Field(None, description="A quoted passage.")
    reply_to_message_id: Optional[str] = Field(None, description="The message replied or reacted to.")
    sender: Sender = Field(description="The speaker.")
    sent_at: datetime = Field(description="When, UTC.")
    text: str = Field(description="The text, mentions normalized.")


class Decision(Model):
    """What the mapping decided for one accepted input that holds a message."""

    index: int = Field(description="Position in the batch, from 0.")
    kind: str = Field(description="`inbound_user`, `outbound_agent` or `system`.")
    message_id: str = Field(description="The message's id.")
    triggered_agent: bool = Field(description="Whether it addresses the bot (so a bot may use this decision instead of making its own).")


class Deleted(Model):
    """`delete_chat` response."""

    deleted: Optional[bool] = Field(None, description="")


class Descriptor(Model):
    """A compact, safe description of an object (no raw history)."""

    author: Optional[str] = Field(None, description="Who posted it, as the prompt refers to them.")
    caption: Optional[str] = Field(None, description="The first words of the message that carries it.")
    chat_id: str = Field(description="The chat.")
    created_at: datetime = Field(description="When it became known.")
    created_by_bot: bool = Field(description="Whether the bot created it.")
    created_by_user_id: Optional[str] = Field(None, description="Who created it.")
    file: Optional[FileRef] = Field(None, description="The platform's file reference (media, files): enough to send or fetch it again.")
    kind: str = Field(description="Kind.")
    last_touched_at: datetime = Field(description="Last change or activation.")
    object_id: str = Field(description="Id.")
    source_message_id: Optional[str] = Field(None, description="The message that carries it.")
    title_or_label: Optional[str] = Field(None, description="At most 80 characters.")
    topic_id: Optional[str] = Field(None, description="The topic.")


class Diagnostics(Model):
    """Scoring details for logs."""

    candidate_count: int = Field(description="Candidates scored.")
    top_score_gap: float = Field(description="Lead of the first over the second.")


class Error(Model):
    """`{"code": "…", "message": "…"}`."""

    code: ErrorCode = Field(description="The stable code.")
    message: str = Field(description="What went wrong, for a person; names the field when one is at fault.")


class Event(Model):
    """An input event (docs/protocol.md, "Events"); the fields depend on its type."""

    type: dict[str, Any]


class FileRef(Model):
    """The platform's reference to a file (Telegram: `file_id` to send or download it again, `file_unique_id` to recognise the same file)."""

    file_id: str = Field(description="What the platform's API takes to send or fetch the file.")
    file_unique_id: Optional[str] = Field(None, description="The same for every copy of the file.")


class HistoryContext(Model):
    """`get_chat_history_context` response (docs/protocol.md §6.3)."""

    items: list[ChatHistoryItem] = Field(description="The selected items, oldest first.")
    prompt: list[PromptMessage] = Field(description="The whole prompt, in the order of docs/protocol.md §5.4.")
    rendered: Rendered = Field(description="The rendered history.")
    selection: SelectionReport = Field(description="What selection did.")


class HistoryPayload(Model):
    """The `chat_history_context` payload, fields in the seed's order."""

    channel: str = Field(description="Platform.")
    messages: list[PayloadMessage] = Field(description="The items, oldest first.")
    note: str = Field(description="[`HISTORY_NOTE`].")
    type: str = Field(description="Always `chat_history_context`.")


class HistoryQuote(Model):
    """A quote inside a history item."""

    markdown_block: str = Field(description="The quote as a Markdown block quote.")
    sender_ref: str = Field(description="The quoted author's reference (empty when the platform hid the author).")
    text: str = Field(description="The quoted text.")


class IngestReport(Model):
    """What an ingest accepted and rejected."""

    accepted: int = Field(description="Inputs accepted (and durable).")
    decisions: list[Decision] = Field(description="For each accepted input that holds a message: its kind and whether it triggers the bot.")
    ignored: int = Field(description="Telegram update kinds that were received but have no meaning here (inline queries, callback queries, …), counted: accepted, and nothing stored.")
    rejected: list[Rejection] = Field(description="The rejected inputs, the first `server.max_rejections` of them.")
    rejected_count: int = Field(description="How many inputs were rejected in all (more than `rejected` lists when the list was cut).")


class Object(Model):
    """A typed object known in a chat."""

    activated_at: Optional[datetime] = Field(None, description="When the latest activation happened.")
    activation: Optional[str] = Field(None, description="The latest activation, if any.")
    author: Optional[str] = Field(None, description="Who posted it, as the prompt refers to them (`[Alice](tg:@alice)`).")
    caption: Optional[str] = Field(None, description="The first words of the message that carries it (its caption), at most 200 characters.")
    closed_at: Optional[datetime] = Field(None, description="When it was closed.")
    created_at: datetime = Field(description="When it became known.")
    created_by_bot: bool = Field(description="Whether the bot created it.")
    created_by_user_id: Optional[str] = Field(None, description="Who created it.")
    file: Optional[FileRef] = Field(None, description="The platform's file reference (media, files), to send or fetch it again without a cache of one's own.")
    kind: str = Field(description="Kind.")
    last_touched_at: datetime = Field(description="Last change or activation.")
    object_id: str = Field(description="Id, unique in the chat.")
    source_message_id: Optional[str] = Field(None, description="The message that carries it.")
    title_or_label: Optional[str] = Field(None, description="A short label, at most 80 characters.")
    topic_id: Optional[str] = Field(None, description="The topic it lives in.")


class PayloadMessage(Model):
    """One entry of the payload."""

    actions: Optional[list[str]] = Field(None, description="The tools the bot used for this reply (an extension: present only on bot items that have actions).")
    kind: str = Field(description="Item kind.")
    quote: Optional[str] = Field(None, description="The quote as a block quote.")
    sender: str = Field(description="The speaker's reference.")
    text: str = Field(description="The text.")
    time: str = Field(description="RFC 3339 UTC.")


class PromptMessage(Model):
    """A chat-completions message."""

    content: str = Field(description="The content.")
    role: Role = Field(description="`system`, `user` or `assistant`.")


class Rejection(Model):
    """One rejected input of a batch."""

    code: ErrorCode = Field(description="The error code.")
    index: int = Field(description="Position in the batch, from 0.")
    message: str = Field(description="What was wrong.")


class Resolution(Model):
    """`resolve_reference_target` response."""

    best_match: Optional[Descriptor] = Field(None, description="The winner when resolved.")
    candidates: list[Candidate] = Field(description="The top candidates (none when not found).")
    confidence: float = Field(description="In [0, 1]: resolved ≥ 0.5, ambiguous 0.25–0.5, not found < 0.25.")
    diagnostics: Diagnostics = Field(description="For logs.")
    reasons: list[str] = Field(description="The reasons of the best (or top) candidate.")
    scope_used: Tier = Field(description="Where the answer was found.")
    status: Status = Field(description="Outcome.")


class RevisionInfo(Model):
    """One kept revision as reported."""

    at: datetime = Field(description="When it was written.")
    patch: dict[str, Any] = Field(description="The patch that made it (for a revert, the state written back).")
    revision: int = Field(description="Its number.")


class Revoked(Model):
    """`revoke_scope` response."""

    revoked: Optional[bool] = Field(None, description="")
    scope_id: Optional[str] = Field(None, description="")


class ScenarioState(Model):
    """What `get_scenario` and `update_scenario` answer."""

    changed: Optional[bool] = Field(None, description="Whether this call wrote a revision (updates and reverts only).")
    revision: int = Field(description="The current revision (0 when nothing was ever written).")
    revisions: Optional[list[RevisionInfo]] = Field(None, description="The kept revisions, newest first (`get_scenario` with `\"revisions\": true`).")
    state: dict[str, Any] = Field(description="The state, keys in sorted order.")
    updated_at: Optional[datetime] = Field(None, description="When the current revision was written.")


class Scope(Model):
    """`create_scope` response."""

    channel: str
    chat_id: str
    current_message_id: Optional[str] = Field(None, description="")
    expires_at: datetime
    scope_id: str
    sender_user_id: Optional[str] = Field(None, description="")
    token: str
    topic_id: Optional[str] = Field(None, description="")


class SelectionReport(Model):
    """What selection did."""

    considered: int = Field(description="Items considered (after lookback, background rules and the recency window).")
    forced: list[str] = Field(description="Items kept by rule rather than by choice: `reply_parent`, `previous_task`.")
    kept: int = Field(description="Items kept.")
    method: SelectionMethod = Field(description="The method that really ran.")


class Sender(Model):
    """The speaker of a history item."""

    display_ref: str = Field(description="`[nickname](tg:@username)`.")
    is_bot: bool = Field(description="Whether a bot spoke.")
    nickname: str = Field(description="Display name by the priority of docs/protocol.md §5.2.")
    user_id: str = Field(description="Platform user id.")
    username: Optional[str] = Field(None, description="Username without `@`.")


Rendered = Union[HistoryPayload, list[PromptMessage]]
"""The rendered history: the `single` payload or the `per_item` messages."""

ActiveObject.model_rebuild()
ActiveObjects.model_rebuild()
Candidate.model_rebuild()
ChatHistoryItem.model_rebuild()
Decision.model_rebuild()
Deleted.model_rebuild()
Descriptor.model_rebuild()
Diagnostics.model_rebuild()
Error.model_rebuild()
Event.model_rebuild()
FileRef.model_rebuild()
HistoryContext.model_rebuild()
HistoryPayload.model_rebuild()
HistoryQuote.model_rebuild()
IngestReport.model_rebuild()
Object.model_rebuild()
PayloadMessage.model_rebuild()
PromptMessage.model_rebuild()
Rejection.model_rebuild()
Resolution.model_rebuild()
RevisionInfo.model_rebuild()
Revoked.model_rebuild()
ScenarioState.model_rebuild()
Scope.model_rebuild()
SelectionReport.model_rebuild()
Sender.model_rebuild()
