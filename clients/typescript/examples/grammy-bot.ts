// A group bot with chatctx: grammY, any OpenAI-compatible model, and a running `chatctx serve`.
//
// When someone mentions the bot or replies to it, it asks chatctx for the conversation's context (who said what,
// the reply parent, the room's chatter, its own earlier answers) and for what the user's "this" refers to, sends
// both to the model, and answers in the same topic. Everything the bot sends is recorded by chatctx as its own.
//
//     npm install chatctx grammy                 # (from this repository: npm ci && npm run build in clients/typescript)
//     chatctx serve --preset group-bot &          # talkative history, deterministic selection
//     BOT_TOKEN=123:ABC LLM_BASE_URL=http://127.0.0.1:11434/v1 LLM_MODEL=qwen2.5:7b node build/examples/grammy-bot.js
//
// Settings (environment): BOT_TOKEN; CHATCTX_URL (default http://127.0.0.1:7878); CHATCTX_TOKEN (when the server
// has `server.tokens`); LLM_BASE_URL, LLM_MODEL, LLM_API_KEY (optional); TELEGRAM_API_URL (a local Bot API server;
// the tests use a fake one).
import { Bot, type Context } from "grammy";

import { ChatctxError, Client, describeResolution, openaiMessages, type ChatMessage } from "chatctx";
import { setup, type ChatctxFlavor } from "chatctx/grammy";

import { askModel } from "./model.js";

const SYSTEM =
  "You are Helper, a friendly assistant in a Telegram group. Answer the last message briefly, in the language it " +
  "was written in, using the conversation for context.";

type BotContext = Context & ChatctxFlavor;


/** chatctx's own decision when it has one (a mention of the bot, a reply to it, a private chat), else the plain
 * checks: chatctx being down never makes the bot deaf. */
function addressed(ctx: BotContext): boolean {
  const decision = ctx.chatctx.report?.decisions[0];
  if (decision) return decision.triggered_agent;
  const text = ctx.msg?.text ?? ctx.msg?.caption ?? "";
  return (
    ctx.chat?.type === "private" ||
    ctx.msg?.reply_to_message?.from?.id === ctx.me.id ||
    text.includes(`@${ctx.me.username}`)
  );
}

export function build(context: Client): Bot<BotContext> {
  const apiRoot = process.env.TELEGRAM_API_URL;
  const token = process.env.BOT_TOKEN;
  if (!token) throw new Error("BOT_TOKEN is required");
  const bot = new Bot<BotContext>(token, apiRoot ? { client: { apiRoot } } : {});
  setup(bot, context, { timeoutMs: 2_000 }); // every update in, every sent message recorded

  bot.on(["message:text", "message:caption"], async (ctx) => {
    if (!addressed(ctx)) return;
    const msg = ctx.msg;
    const topic = msg.is_topic_message ? msg.message_thread_id : undefined;
    let messages: ChatMessage[];
    try {
      const history = await context.getChatHistoryContext({ chat_id: ctx.chat.id, current_message_id: msg.message_id, topic_id: topic });
      const ref = await context.resolveReferenceTarget({
        chat_id: ctx.chat.id,
        current_message_id: msg.message_id,
        sender_user_id: ctx.from?.id ?? 0,
        raw_user_text: msg.text ?? msg.caption,
        topic_id: topic,
      });
      // A note only when something was resolved: a message that refers to nothing comes back not_found
      // (why: no_reference), and an ambiguous one is left to the model and the history.
      const note = describeResolution(ref);
      messages = openaiMessages(history, { system: SYSTEM, notes: note ? [note] : [] });
    } catch (e) {
      // No context: answer the message alone rather than not at all.
      if (!(e instanceof ChatctxError)) throw e;
      console.warn(`chatctx: ${e.code}: ${e.message}`);
      messages = [{ role: "system", content: SYSTEM }, { role: "user", content: msg.text ?? msg.caption ?? "" }];
    }
    await ctx.reply(await askModel(messages), { reply_parameters: { message_id: msg.message_id } });
  });
  return bot;
}

const context = new Client({ baseUrl: process.env.CHATCTX_URL, token: process.env.CHATCTX_TOKEN, timeoutMs: 2_000 });
const bot = build(context);
process.once("SIGTERM", () => void bot.stop());
process.once("SIGINT", () => void bot.stop());
await bot.start({ timeout: 1, onStart: (me) => console.log(`@${me.username} is listening`) });
