// chatctx for telegraf: a middleware that forwards each update before the bot's handlers (`ctx.chatctx` then
// holds its report) and wraps the update's `ctx.telegram.callApi`, and the same wrapper on `bot.telegram`, so what
// the bot sends, edits and copies is recorded as its own.
// Types only from telegraf: nothing of it is loaded at run time.
//
//     import { setup } from "chatctx/telegraf";
//     setup(bot, new Client({ baseUrl, timeoutMs: 2_000 }));
import type { Context, MiddlewareFn, Telegraf, Telegram } from "telegraf";

import type { Client } from "./client.js";
import type { IntegrationOptions } from "./failopen.js";
import { type ChatctxContext, forwarderOf } from "./telegram.js";

export type { IntegrationOptions } from "./failopen.js";
export type { ChatctxContext } from "./telegram.js";

/** A telegraf context with `ctx.chatctx`: `new Telegraf<ChatctxTelegrafContext>(token)`. */
export interface ChatctxTelegrafContext extends Context {
  chatctx: ChatctxContext;
}


/** Middleware forwarding each update to chatctx before the bot's handlers (fail-open, bounded by `timeoutMs`), and
 * putting `ctx.chatctx` in place. Register it first: `bot.use(chatctx(client))`. */
export function chatctx<C extends Context>(client: Client, options: IntegrationOptions = {}): MiddlewareFn<C> {
  const forwarder = forwarderOf(client, options);
  return async (ctx, next) => {
    // telegraf gives each update a `Telegram` of its own: what the handlers send goes through this one.
    recordCalls(ctx.telegram, client, { ...options, botInfo: () => ctx.botInfo });
    const bot = { id: ctx.botInfo?.id, username: ctx.botInfo?.username };
    const place = { chat: ctx.chat, msg: (ctx as Context).msg, from: ctx.from };
    (ctx as unknown as { chatctx: ChatctxContext }).chatctx = await forwarder.context(ctx.update, bot, place);
    await next();
  };
}

/** Wraps `telegram.callApi` (once) so every message the bot sends, edits or copies is recorded as its own. */
export function recordCalls(telegram: Telegram, client: Client, options: IntegrationOptions & { botInfo?: () => { id: number; username?: string } | undefined } = {}): void {
  const marked = telegram as Telegram & { chatctxRecording?: boolean };
  if (marked.chatctxRecording) return;
  marked.chatctxRecording = true;
  const forwarder = forwarderOf(client, options);
  const call = telegram.callApi.bind(telegram) as (method: string, payload: object, opts?: object) => Promise<unknown>;
  (telegram as unknown as { callApi: typeof call }).callApi = async (method, payload, opts) => {
    const result = await call(method, payload, opts);
    const info = options.botInfo?.();
    const from = (result as { from?: { id: number; username?: string } } | undefined)?.from;
    const bot = info ? { id: info.id, username: info.username } : { id: from?.id, username: from?.username };
    await forwarder.sent(method, payload as Record<string, unknown>, result, bot);
    return result;
  };
}

/** Everything at once: the middleware first (which records what handlers send), the recorder on `bot.telegram`
 * (what the bot sends outside handlers). */
export function setup<C extends Context>(bot: Telegraf<C>, client: Client, options: IntegrationOptions = {}): void {
  bot.use(chatctx<C>(client, options));
  recordCalls(bot.telegram, client, { ...options, botInfo: () => bot.botInfo });
}
