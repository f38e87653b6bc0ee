"""Turning chatctx's answers into what a chat-completions call takes."""

from __future__ import annotations

from typing import Any, Optional, Union

from . import models


def openai_messages(
    context: Union[models.HistoryContext, dict[str, Any]],
    *,
    system: Optional[str] = None,
    notes: Optional[list[str]] = None,
) -> list[dict[str, str]]:
    """The `messages` list of an OpenAI-style chat-completions call, from a `get_chat_history_context` answer.

    The answer's `prompt` is already in the right order (chatctx's system text, the history, the conversation
    state, the current message); `system` (the bot's own instructions) goes first, and each of `notes` (say, what
    the user's "this" was resolved to) becomes a system message just before the current message.
    """
    if isinstance(context, dict):
        context = models.HistoryContext.model_validate(context)
    messages = [{"role": str(m.role), "content": m.content} for m in context.prompt]
    extra = [{"role": "system", "content": n} for n in notes or []]
    if extra:
        # The last message is the current one when there is one; the notes belong just before it.
        at = len(messages) - 1 if messages and messages[-1]["role"] == "user" else len(messages)
        messages[at:at] = extra
    if system:
        messages.insert(0, {"role": "system", "content": system})
    return messages


def describe_resolution(resolution: Union[models.Resolution, dict[str, Any]]) -> Optional[str]:
    """One line for the model saying what the user's reference points at, or None unless it was resolved.

    An ambiguous answer is never turned into a guess: the bot should ask the user which one they mean."""
    if isinstance(resolution, dict):
        resolution = models.Resolution.model_validate(resolution)
    best = resolution.best_match
    if resolution.status != "resolved" or best is None:
        return None
    parts = [f"The user's reference points at {best.kind} `{best.object_id}`"]
    if best.title_or_label:
        parts.append(f'"{best.title_or_label}"')
    if best.caption and best.caption != best.title_or_label:
        parts.append(f'(caption: "{best.caption}")')
    if best.author:
        parts.append(f"posted by {best.author}")
    if best.source_message_id:
        parts.append(f"in message {best.source_message_id}")
    return " ".join(parts) + "."
