// Sample user code, type-checked in strict mode by `tsc -p tsconfig.check.json` (CI and `cargo test`): what a bot
// author writes must compile, and each mistake marked `@ts-expect-error` must not (an unused marker fails the check).
import { ChatctxError, Client, describeResolution, openaiMessages, type Schemas } from "chatctx";
import type { GatewayDispatchPayload } from "discord.js";
import type { Update } from "grammy/types";

/** A platform library's own types go in as they are: the raw bodies are open objects in the contract. */
export async function forward(client: Client, update: Update, packet: GatewayDispatchPayload): Promise<number> {
  const report = await client.telegramUpdate(update, { bot_username: "helper_bot", bot_user_id: 999 });
  await client.discordEvent(packet, { bot_user_id: "700000000000000999" });
  return report.accepted;
}

export async function answer(client: Client, chatId: bigint, messageId: number): Promise<string | undefined> {
  const ctx = await client.getChatHistoryContext({ chat_id: chatId, current_message_id: messageId, topic_id: "7" });
  const res = await client.resolveReferenceTarget({ chat_id: chatId, current_message_id: messageId, sender_user_id: 42 });
  const messages = openaiMessages(ctx, { system: "You are Helper.", notes: [describeResolution(res) ?? ""] });
  for await (const page of client.historyPages(chatId, { topic_id: 7, limit: 100 })) {
    const items: Schemas["ChatHistoryItem"][] = page.items;
    void items;
  }
  try {
    await client.ingest({ type: "message", chat_id: chatId, message_id: 1n, kind: "inbound_user", sent_at: 1_770_000_000, text: "hi" });
  } catch (e) {
    if (e instanceof ChatctxError && e.code === "timeout") return undefined;
    throw e;
  }
  return messages.at(-1)?.content;
}

export async function mistakes(client: Client): Promise<void> {
  // @ts-expect-error a missing `await`: a Promise is not the answer
  const ctx: Schemas["HistoryContext"] = client.getChatHistoryContext({ chat_id: 1 });
  void ctx;
  // @ts-expect-error a chat id is a string, number or bigint
  await client.getChatHistoryContext({ chat_id: true });
  // @ts-expect-error `chat_id` is required
  await client.resolveReferenceTarget({ current_message_id: 1, sender_user_id: 2 });
  // @ts-expect-error a misspelled field
  await client.getChatHistoryContext({ chat_id: 1, curent_message_id: 2 });
  // @ts-expect-error `sender_user_id` is required to resolve
  await client.resolveReferenceTarget({ chat_id: 1, current_message_id: 2 });
}
