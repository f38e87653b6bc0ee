// chatctx for grammY: a middleware that forwards each update before the bot's handlers, an API transformer that
// records what the bot sends, and a context flavor. Types only from grammY: nothing of it is loaded at run time.
//
//     import { setup, type ChatctxFlavor } from "chatctx/grammy";
//     const bot = new Bot<Context & ChatctxFlavor>(token);
//     setup(bot, new Client({ baseUrl, timeoutMs: 2_000 }));
import type { Bot, Context, MiddlewareFn, Transformer } from "grammy";

import type { Client } from "./client.js";
import type { IntegrationOptions } from "./failopen.js";
import { type ChatctxContext, forwarderOf } from "./telegram.js";

export type { IntegrationOptions } from "./failopen.js";
export type { ChatctxContext } from "./telegram.js";

/** The context flavor: `Bot<Context & ChatctxFlavor>` gives handlers `ctx.chatctx`. */
export interface ChatctxFlavor {
  chatctx: ChatctxContext;
}


/** Middleware forwarding each update to chatctx before the bot's handlers (fail-open, bounded by `timeoutMs`), and
 * putting `ctx.chatctx` in place. Register it first: `bot.use(chatctx(client))`. */
export function chatctx<C extends Context & ChatctxFlavor>(client: Client, options: IntegrationOptions = {}): MiddlewareFn<C> {
  const forwarder = forwarderOf(client, options);
  return async (ctx, next) => {
    const me = ctx.me;
    ctx.chatctx = await forwarder.context(ctx.update, { id: me.id, username: me.username }, ctx);
    await next();
  };
}

/** An API transformer recording every message the bot sends, edits or copies as its own (Telegram never sends a bot
 * its own messages): `bot.api.config.use(chatctxRecorder(client))`. `bot` gives the bot's id and username once it
 * is initialized; without it they are read from what Telegram answers. */
export function chatctxRecorder(client: Client, options: IntegrationOptions & { bot?: Bot<any> } = {}): Transformer {
  const forwarder = forwarderOf(client, options);
  return async (prev, method, payload, signal) => {
    const res = await prev(method, payload, signal);
    if (res.ok) {
      const info = options.bot?.isInited() ? options.bot.botInfo : undefined;
      const from = (res.result as { from?: { id: number; username?: string } } | undefined)?.from;
      const bot = info ? { id: info.id, username: info.username } : { id: from?.id, username: from?.username };
      await forwarder.sent(method, payload as Record<string, unknown>, res.result, bot);
    }
    return res;
  };
}

/** Everything at once: the middleware first, the recorder on the bot's API. */
export function setup<C extends Context & ChatctxFlavor>(bot: Bot<C>, client: Client, options: IntegrationOptions = {}): void {
  bot.use(chatctx<C>(client, options));
  bot.api.config.use(chatctxRecorder(client, { ...options, bot }));
}
