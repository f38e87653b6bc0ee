// What the Telegram integrations (grammY, telegraf) share: forwarding updates, and recording what the bot sends,
// since Telegram never sends a bot its own messages.
import type { Client, Id, Schemas } from "./client.js";
import { failOpen, type IntegrationOptions, lazyScope } from "./failopen.js";

/** Bot API methods whose result is the message the bot sent (a list for `sendMediaGroup`). */
export const SENDS: ReadonlySet<string> = new Set([
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
]);
/** Bot API methods whose result is the message the bot edited (`true` for an inline message: nothing to record). */
export const EDITS: ReadonlySet<string> = new Set([
  "editMessageText",
  "editMessageCaption",
  "editMessageMedia",
  "editMessageLiveLocation",
  "stopMessageLiveLocation",
  "editMessageReplyMarkup",
  "editMessageChecklist",
]);
/** Methods that answer bare message ids: what they sent is rebuilt from the message they copied. */
const COPIES: ReadonlySet<string> = new Set(["copyMessage", "copyMessages", "forwardMessages"]);

/** Messages kept for `copyMessage` to rebuild what it sent from: the newest this many. */
export const MESSAGES_KEPT = 1_000;

type Message = Record<string, unknown> & { message_id: number; chat: { id: number | string; type?: string } };
type Bot = { id?: Id; username?: string };
const UPDATE_KINDS = ["message", "edited_message", "channel_post", "edited_channel_post", "business_message", "edited_business_message"];

/** What `ctx.chatctx` holds in a handler (grammY and telegraf alike). */
export interface ChatctxContext {
  /** The ingest report of this update (chatctx's decision whether it triggers the bot, per message), or
   * `undefined` when chatctx could not be reached in time: decide with your own check then. */
  report: Schemas["IngestReport"] | undefined;
  /** The client the integration forwards through. */
  client: Client;
  /** A client holding a scope pinned to this update's chat, topic, message and sender (made on first call), for a
   * model's tool loop. */
  scoped(): Promise<Client>;
}

/** What an update says of where it happened, as grammY's and telegraf's contexts give it. */
type Place = {
  chat?: { id: number } | undefined;
  msg?: { message_id?: number; message_thread_id?: number; is_topic_message?: boolean } | undefined;
  from?: { id: number } | undefined;
};

/** Forwards updates and records the bot's own messages, every call fail-open. */
export class TelegramForwarder {
  readonly #client: Client;
  readonly #options: IntegrationOptions;
  /** The newest messages seen, by `chat:message`, oldest first (a Map keeps insertion order). */
  readonly #messages = new Map<string, Message>();

  constructor(client: Client, options: IntegrationOptions = {}) {
    this.#client = client;
    this.#options = options;
  }

  /** Forwards one incoming update and makes the `ctx.chatctx` of its handlers. */
  async context(update: object, bot: Bot, { chat, msg, from }: Place): Promise<ChatctxContext> {
    const report = await this.update(update, bot);
    const place = chat
      ? {
          chat_id: chat.id,
          topic_id: msg?.is_topic_message ? msg.message_thread_id : undefined,
          current_message_id: msg?.message_id,
          sender_user_id: from?.id,
        }
      : undefined;
    return { report, client: this.#client, scoped: lazyScope(this.#client, place) };
  }

  /** Forwards one incoming update; its ingest report, or `undefined` when chatctx failed. */
  update(update: object, bot: Bot): Promise<Schemas["IngestReport"] | undefined> {
    for (const kind of UPDATE_KINDS) this.#remember((update as Record<string, unknown>)[kind]);
    return this.#send(update, bot, "forward a Telegram update");
  }

  /** Records what a Bot API call answered, when it is a message the bot sent, edited or copied. */
  async sent(method: string, payload: Record<string, unknown>, result: unknown, bot: Bot): Promise<void> {
    let field: "message" | "edited_message";
    let messages: unknown[];
    if (SENDS.has(method)) [field, messages] = ["message", Array.isArray(result) ? result : [result]];
    else if (EDITS.has(method)) [field, messages] = ["edited_message", [result]];
    else if (COPIES.has(method)) [field, messages] = ["message", this.#copies(method, payload, result, bot)];
    else return;
    for (const m of messages) {
      if (!isMessage(m)) continue; // an inline message's edit answers `true`
      this.#remember(m);
      // The bot's messages never arrive as updates, so they have no update_id of their own; chatctx identifies
      // messages by chat and message id.
      await this.#send({ update_id: 0, [field]: m }, bot, `record the bot's ${method}`);
    }
  }

  #send(update: object, bot: Bot, what: string): Promise<Schemas["IngestReport"] | undefined> {
    const params = { bot_user_id: bot.id === undefined ? undefined : String(bot.id), bot_username: bot.username };
    return failOpen(this.#options, what, (signal) => this.#client.telegramUpdate(update, params, { signal }));
  }

  /** What `copyMessage(s)` / `forwardMessages` sent: the copied messages (when seen) under their new ids. */
  #copies(method: string, payload: Record<string, unknown>, result: unknown, bot: Bot): Message[] {
    const ids = (method === "copyMessage" ? [payload.message_id] : (payload.message_ids as unknown[] | undefined) ?? []).map(String);
    const sent = (Array.isArray(result) ? result : [result]) as { message_id?: number }[];
    const out: Message[] = [];
    sent.forEach((s, i) => {
      const original = this.#messages.get(`${String(payload.from_chat_id)}:${ids[i] ?? ""}`);
      if (!original || typeof s?.message_id !== "number") return; // not seen: what was sent is not known
      const copy: Message = { ...original, message_id: s.message_id, chat: { ...original.chat, id: payload.chat_id as number }, date: Math.floor(Date.now() / 1000) };
      delete copy.reply_to_message;
      delete copy.edit_date;
      if (bot.id !== undefined) copy.from = { id: Number(bot.id), is_bot: true, first_name: bot.username ?? "bot", username: bot.username };
      if (method === "forwardMessages") copy.forward_origin = { type: "user", date: original.date, sender_user: original.from };
      if (method === "copyMessage" && typeof payload.caption === "string") copy.caption = payload.caption;
      if (payload.message_thread_id !== undefined) Object.assign(copy, { message_thread_id: payload.message_thread_id, is_topic_message: true });
      out.push(copy);
    });
    return out;
  }

  #remember(m: unknown): void {
    if (!isMessage(m)) return;
    const key = `${String(m.chat.id)}:${m.message_id}`;
    this.#messages.delete(key);
    this.#messages.set(key, m);
    if (this.#messages.size > MESSAGES_KEPT) this.#messages.delete(this.#messages.keys().next().value as string);
  }
}

function isMessage(m: unknown): m is Message {
  return typeof m === "object" && m !== null && typeof (m as Message).message_id === "number" && typeof (m as Message).chat === "object";
}

const forwarders = new WeakMap<Client, TelegramForwarder>();

/** One forwarder per client (so one cache of seen messages for `copyMessage`), shared by an integration's middleware
 * and its recorder. */
export function forwarderOf(client: Client, options: IntegrationOptions): TelegramForwarder {
  let f = forwarders.get(client);
  if (!f) forwarders.set(client, (f = new TelegramForwarder(client, options)));
  return f;
}
