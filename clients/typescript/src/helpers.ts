// Turning chatctx's answers into what a chat-completions call takes.
import type { Schemas } from "./client.js";

/** One message of an OpenAI-style chat-completions `messages` array. */
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

/**
 * The `messages` array of a chat-completions call, from a `getChatHistoryContext` answer. The answer's `prompt` is
 * already in order (chatctx's system text, the history, the conversation state, the current message); `system`
 * (the bot's own instructions) goes first, and each of `notes` (say, what the user's "this" was resolved to)
 * becomes a system message just before the current message.
 */
export function openaiMessages(
  ctx: Pick<Schemas["HistoryContext"], "prompt">,
  options: { system?: string; notes?: readonly string[] } = {},
): ChatMessage[] {
  const messages: ChatMessage[] = ctx.prompt.map((m) => ({ role: m.role, content: m.content }));
  const notes: ChatMessage[] = (options.notes ?? []).map((content) => ({ role: "system", content }));
  if (notes.length) {
    // The last message is the current one when there is one; the notes belong just before it.
    const at = messages.length && messages[messages.length - 1]?.role === "user" ? messages.length - 1 : messages.length;
    messages.splice(at, 0, ...notes);
  }
  if (options.system) messages.unshift({ role: "system", content: options.system });
  return messages;
}

/**
 * One line for the model saying what the user's reference points at, or `undefined` unless it was resolved. An
 * ambiguous answer is never turned into a guess: the bot should ask the user which one they mean.
 */
export function describeResolution(res: Pick<Schemas["Resolution"], "status" | "best_match">): string | undefined {
  const best = res.best_match;
  if (res.status !== "resolved" || !best) return undefined;
  const parts = [`The user's reference points at ${best.kind} \`${best.object_id}\``];
  if (best.title_or_label) parts.push(`"${best.title_or_label}"`);
  if (best.caption && best.caption !== best.title_or_label) parts.push(`(caption: "${best.caption}")`);
  if (best.author) parts.push(`posted by ${best.author}`);
  if (best.source_message_id) parts.push(`in message ${best.source_message_id}`);
  return parts.join(" ") + ".";
}
