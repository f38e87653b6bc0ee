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

    explain: Optional[ListDecision] = Field(None, description="Each live object's activation and TTL (docs/protocol.md §6.7): in the answer when the request says `\"explain\": true`.")
    objects: list[ActiveObject] = Field(description="Ordered by scope tier, then last activation (newer first), then `object_id`.")
    scope_used: Tier = Field(description="The request's scope: `topic` in a forum topic, else `chat` (`reply_chain` objects are included in both).")
    status: ListStatus = Field(description="`ok` or `empty`.")
    truncated: bool = Field(description="More were active than `limit`.")


class Budget(Model):
    """The token budget and what the prompt's history cost."""

    max_tokens: Optional[int] = Field(None, description="`max_context_tokens` (absent when there is no budget).")
    summary_tokens: Optional[int] = Field(None, description="Estimated tokens of the conversation's summary block (absent without one).")
    used_tokens: int = Field(description="Estimated tokens of the kept items, the current message and the summary.")


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


class CandidateView(Model):
    """One candidate of a written-out resolve record."""

    kind: str = Field(description="Its kind.")
    object_id: str = Field(description="The object id.")
    parts: list[ScorePart] = Field(description="The parts of the score, which add up to it.")
    rank: Optional[int] = Field(None, description="Its rank among the candidates that may win (1 = the best), absent when a kind hint excluded it.")
    reasons: list[str] = Field(description="Reason codes.")
    score: float = Field(description="The total (rounded to 2 places, as answers show it).")
    tier: Tier = Field(description="How near the request it is.")


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
    topic_id: Optional[str] = Field(None, description="The forum topic (thread) the item belongs to: given by range reads (`get_chat_history_range`, `GET /v1/chats/{chat_id}/history`), so a reader sees which conversation, and so which prompt, it is in.")


class ChatOverview(Model):
    """One chat, as `GET /v1/chats` lists it."""

    channel: str = Field(description="The platform.")
    chat_id: str = Field(description="The chat id.")
    chat_type: Optional[str] = Field(None, description="The chat's type as the platform names it (`supergroup`, …), when known.")
    items: int = Field(description="History items held.")
    last_at: Optional[datetime] = Field(None, description="When the newest item was sent.")
    objects: int = Field(description="Objects held.")
    people: int = Field(description="People known.")
    title: Optional[str] = Field(None, description="The chat's title (a group's title, a channel's name), when the platform told it (docs/protocol.md §3.12).")
    topic_titles: Optional[dict[str, Any]] = Field(None, description="The titles of its topics that the platform told, by topic id.")
    topics: list[str] = Field(description="The forum topics (threads) with history, sorted (the general thread is not listed).")


class ChatsResponse(Model):
    """`chats` response."""

    chats: list[ChatOverview]
    next: Optional[str] = Field(None, description="The `after` of the next page, when there is one.")


class Decision(Model):
    """What the mapping decided for one accepted input that holds a message."""

    index: int = Field(description="Position in the batch, from 0.")
    kind: str = Field(description="`inbound_user`, `outbound_agent` or `system`.")
    message_id: str = Field(description="The message's id.")
    triggered_agent: bool = Field(description="Whether it addresses the bot (so a bot may use this decision instead of making its own).")


class DecisionsResponse(Model):
    """`decisions` response."""

    decisions: list[Record]
    keep: int = Field(description="Records kept per chat ([decisions] keep).")


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


class Glance(Model):
    """Who and a few words."""

    text: str = Field(description="The first words (at most 120 characters, `…` when cut).")
    topic_id: Optional[str] = Field(None, description="The topic it is in, if any.")
    who: Optional[str] = Field(None, description="The author's name, when known.")


class HistoryContext(Model):
    """`get_chat_history_context` response (docs/protocol.md §6.3)."""

    explain: Optional[HistoryDecision] = Field(None, description="How the items were chosen (docs/protocol.md §6.7): in the answer when the request says `\"explain\": true`.")
    items: list[ChatHistoryItem] = Field(description="The selected items, oldest first (after the message the summary covers).")
    prompt: list[PromptMessage] = Field(description="The whole prompt, in the order of docs/protocol.md §5.4.")
    rendered: Rendered = Field(description="The rendered history.")
    selection: SelectionReport = Field(description="What selection did.")
    summary: Optional[Summary] = Field(None, description="The conversation's summary (docs/protocol.md §6.6), when one covers messages before the selected ones; the prompt then opens with it.")


class HistoryDecision(Model):
    """How `get_chat_history_context` chose its items."""

    budget: Budget = Field(description="The budget and its use.")
    covered_by_summary: Optional[int] = Field(None, description="Older items the conversation's summary covers, which selection does not look at.")
    in_other_topics: Optional[int] = Field(None, description="Items of the chat's other topics, which a per-topic history (`history.scope = \"topic\"`) does not look at.")
    items: list[ItemVerdict] = Field(description="Every item looked at, oldest first, with its verdict.")
    method: SelectionMethod = Field(description="The method that ran.")
    outside_lookback: int = Field(description="Older items of the scope that selection did not look at (beyond `lookback_count` or the mode's cap).")
    triage: Optional[TriageRecord] = Field(None, description="The model triage, when a model was asked.")


class HistoryPage(Model):
    """`get_chat_history_range` response (and `GET /v1/chats/{chat_id}/history`)."""

    items: list[ChatHistoryItem] = Field(description="The page's items, oldest first.")
    next: Optional[str] = Field(None, description="Pass as `cursor` for the next page; absent on the last page.")
    truncated: Optional[Truncation] = Field(None, description="Present when the range reaches back past items that left the store.")


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


class HistoryRecord(Model):
    """A history answer's record: the verdicts, and what the model was given."""

    budget: Budget = Field(description="The budget and its use.")
    covered_by_summary: Optional[int] = Field(None, description="Older items the conversation's summary covers, which selection does not look at.")
    in_other_topics: Optional[int] = Field(None, description="Items of the chat's other topics, which a per-topic history (`history.scope = \"topic\"`) does not look at.")
    items: list[ItemVerdict] = Field(description="Every item looked at, oldest first, with its verdict.")
    kept_items: list[ChatHistoryItem] = Field(description="The answer's items (the kept ones), oldest first.")
    method: SelectionMethod = Field(description="The method that ran.")
    outside_lookback: int = Field(description="Older items of the scope that selection did not look at (beyond `lookback_count` or the mode's cap).")
    prompt: list[PromptMessage] = Field(description="The exact prompt of the answer.")
    triage: Optional[TriageRecord] = Field(None, description="The model triage, when a model was asked.")


class IngestReport(Model):
    """What an ingest accepted and rejected."""

    accepted: int = Field(description="Inputs accepted (and durable).")
    decisions: list[Decision] = Field(description="For each accepted input that holds a message: its kind and whether it triggers the bot.")
    ignored: int = Field(description="Telegram update kinds that were received but have no meaning here (inline queries, callback queries, …), counted: accepted, and nothing stored.")
    rejected: list[Rejection] = Field(description="The rejected inputs, the first `server.max_rejections` of them.")
    rejected_count: int = Field(description="How many inputs were rejected in all (more than `rejected` lists when the list was cut).")


class ItemVerdict(Model):
    """One item selection looked at."""

    kept: bool = Field(description="Whether it is in the prompt.")
    kind: str = Field(description="The item's kind.")
    message_id: Optional[str] = Field(None, description="The message id (items without one, such as reactions, are named by `sent_at` and `kind`).")
    reason: str = Field(description="Why.")
    score: Optional[float] = Field(None, description="The lexical selector's score, when it ranked the item.")
    sent_at: datetime = Field(description="When it was sent.")
    tokens: int = Field(description="Its estimated tokens (the measure `max_context_tokens` is counted in).")


class ListDecision(Model):
    """How `list_active_context_objects` found its objects."""

    now: datetime = Field(description="The time liveness was judged at.")
    objects: list[ObjectLiveness] = Field(description="Every live object found, in answer order.")


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


class ObjectLiveness(Model):
    """One live object as `list_active_context_objects` found it."""

    activated_at: datetime = Field(description="When.")
    activated_by: Optional[str] = Field(None, description="By which message, when one did.")
    activation: str = Field(description="How it was activated.")
    expires_at: datetime = Field(description="When it stops being active.")
    kind: str = Field(description="Its kind.")
    object_id: str = Field(description="The object id.")
    returned: bool = Field(description="Whether it is in the answer (`false`: beyond `limit`).")
    tier: Tier = Field(description="The scope tier it was found in.")
    ttl_left_secs: int = Field(description="Seconds of its TTL left at the request's `now`.")


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


class Record(Model):
    """One tool answer's record, as the routes show it: with a glance at what it names, as the store holds it now."""

    channel: str = Field(description="Where it applied.")
    chat_id: str = Field(description="The chat.")
    current_message_id: Optional[str] = Field(None, description="The message being handled, if any.")
    now: datetime = Field(description="The time the answer was for.")
    request_id: str = Field(description="The request id the call was logged under (`x-request-id`).")
    stored: Stored = Field(description="What the record names, as the store holds it when the record is read (absent what is no longer stored): for the people reading records (the console), never part of the answer the record is of.")
    tool: str = Field(description="The tool.")
    topic_id: Optional[str] = Field(None, description="The topic the request named, if any.")


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
    explain: Optional[ResolveView] = Field(None, description="How the answer was reached (docs/protocol.md §6.7): in the answer when the request says `\"explain\": true`.")
    reasons: list[str] = Field(description="The reasons of the best (or top) candidate.")
    scope_used: Tier = Field(description="Where the answer was found.")
    status: Status = Field(description="Outcome.")
    why: Optional[str] = Field(None, description="Why nothing was resolved, when the message refers to nothing: `no_reference` (docs/resolver.md).")


class ResolveView(Model):
    """A resolve record as written out."""

    ambiguity_gap: float = Field(description="`resolver.ambiguity_gap`.")
    candidates: list[CandidateView] = Field(description="Every candidate scored, best first (those a kind hint excluded last).")
    min_score: float = Field(description="`resolver.min_score`.")
    status: Status = Field(description="The answer's status.")
    top_score_gap: float = Field(description="The lead of the best over the runner-up.")
    why: str = Field(description="Why the answer is what it is: `resolved` (the winner leads by at least `ambiguity_gap`), `ambiguous` (the runner-up is within it), `below_min_score`, `no_candidates`, `no_candidate_of_kind`, `no_reference` (the message refers to nothing; nothing was scored).")


class RevisionInfo(Model):
    """One kept revision as reported."""

    at: datetime = Field(description="When it was written.")
    patch: dict[str, Any] = Field(description="The patch that made it (for a revert, the state written back).")
    revision: int = Field(description="Its number.")


class Revoked(Model):
    """`revoke_scope` response."""

    revoked: Optional[bool] = Field(None, description="")
    scope_id: Optional[str] = Field(None, description="")


class ScenarioDecision(Model):
    """What a state tool did."""

    changed: bool = Field(description="Whether the call wrote a revision.")
    keys_changed: list[str] = Field(description="The top-level keys whose values differ from the revision before (sorted).")
    revision: int = Field(description="The revision after the call.")


class ScenarioState(Model):
    """What `get_scenario` and `update_scenario` answer."""

    changed: Optional[bool] = Field(None, description="Whether this call wrote a revision (updates and reverts only).")
    explain: Optional[ScenarioDecision] = Field(None, description="What the call did (docs/protocol.md §6.7): in the answer when the request says `\"explain\": true`.")
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
    may_write_summary: Optional[bool] = Field(None, description="")
    scope_id: str
    sender_user_id: Optional[str] = Field(None, description="")
    token: str
    topic_id: Optional[str] = Field(None, description="")


class ScorePart(Model):
    """One part of a candidate's score."""

    part: str = Field(description="What it is for: a reason code, or `typed_object`, `recency`, `not_owned`.")
    points: float = Field(description="Its points (rounded to 3 places).")


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


class Stored(Model):
    """What a record names, as the store holds it when the record is read."""

    candidates: Optional[dict[str, Any]] = Field(None, description="Each resolver candidate still held, by object id: who posted it and its first words.")
    chat_title: Optional[str] = Field(None, description="The chat's title (docs/protocol.md §3.12).")
    message: Optional[Glance] = Field(None, description="The message being handled: who wrote it, its first words, its topic.")
    topic_title: Optional[str] = Field(None, description="The title of the topic the call was for.")


class Summary(Model):
    """A conversation's summary and where it stands."""

    covers_until_at: datetime = Field(description="When that message was sent.")
    covers_until_message_id: str = Field(description="The last message it covers: history selection starts after it.")
    message_count: int = Field(description="How many messages it covers, from the conversation's start.")
    revision: int = Field(description="Counts the writes to this slot, from 1.")
    source: str = Field(description="Who wrote it.")
    text: str = Field(description="The summary.")
    topic_id: Optional[str] = Field(None, description="The topic whose conversation it summarizes (none: the chat's general conversation, or the whole chat when history is per chat).")
    written_at: datetime = Field(description="When it was written.")


class SummaryWritten(Model):
    """What `update_summary` answers."""

    changed: bool = Field(description="Whether the call changed it (writing the same text and coverage again changes nothing).")
    summary: Summary = Field(description="The summary now in the slot.")


class TriageRecord(Model):
    """The model triage of a history request, when a model was asked."""

    chosen: list[str] = Field(description="The message ids it chose.")
    error: Optional[str] = Field(None, description="The failure, when it failed (never the model's text).")
    listed: int = Field(description="How many older items were listed to it.")
    model: str = Field(description="The role alias asked (`conversation.selection_model`).")
    outcome: str = Field(description="How it ended.")
    timeout_secs: float = Field(description="Its time budget, retries included.")


class Truncation(Model):
    """What a range read could not see."""

    before: datetime = Field(description="Items of the range sent before this time may have left the store.")
    by: str = Field(description="Why: `cache_max_per_conversation` (the per-topic cap evicted the oldest) or `max_age` (retention).")


Rendered = Union[HistoryPayload, list[PromptMessage]]
"""The rendered history: the `single` payload or the `per_item` messages."""

ActiveObject.model_rebuild()
ActiveObjects.model_rebuild()
Budget.model_rebuild()
Candidate.model_rebuild()
CandidateView.model_rebuild()
ChatHistoryItem.model_rebuild()
ChatOverview.model_rebuild()
ChatsResponse.model_rebuild()
Decision.model_rebuild()
DecisionsResponse.model_rebuild()
Deleted.model_rebuild()
Descriptor.model_rebuild()
Diagnostics.model_rebuild()
Error.model_rebuild()
Event.model_rebuild()
FileRef.model_rebuild()
Glance.model_rebuild()
HistoryContext.model_rebuild()
HistoryDecision.model_rebuild()
HistoryPage.model_rebuild()
HistoryPayload.model_rebuild()
HistoryQuote.model_rebuild()
HistoryRecord.model_rebuild()
IngestReport.model_rebuild()
ItemVerdict.model_rebuild()
ListDecision.model_rebuild()
Object.model_rebuild()
ObjectLiveness.model_rebuild()
PayloadMessage.model_rebuild()
PromptMessage.model_rebuild()
Record.model_rebuild()
Rejection.model_rebuild()
Resolution.model_rebuild()
ResolveView.model_rebuild()
RevisionInfo.model_rebuild()
Revoked.model_rebuild()
ScenarioDecision.model_rebuild()
ScenarioState.model_rebuild()
Scope.model_rebuild()
ScorePart.model_rebuild()
SelectionReport.model_rebuild()
Sender.model_rebuild()
Stored.model_rebuild()
Summary.model_rebuild()
SummaryWritten.model_rebuild()
TriageRecord.model_rebuild()
Truncation.model_rebuild()
