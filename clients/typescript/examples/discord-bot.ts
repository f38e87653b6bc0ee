// A Discord bot with chatctx: discord.js, any OpenAI-compatible model, and a running `chatctx serve`.
//
// Every Gateway dispatch chatctx maps goes to it as the bot receives it (its own messages included), so when
// someone mentions the bot, the conversation's context is ready: who said what, the replies, threads as topics.
//
//     npm install chatctx discord.js
//     chatctx serve --preset group-bot &
//     DISCORD_TOKEN=… LLM_BASE_URL=http://127.0.0.1:11434/v1 LLM_MODEL=qwen2.5:7b node build/examples/discord-bot.js
//
// Settings (environment): DISCORD_TOKEN (the bot needs the Message Content intent); CHATCTX_URL, CHATCTX_TOKEN;
// LLM_BASE_URL, LLM_MODEL, LLM_API_KEY.
import { pathToFileURL } from "node:url";

import { Client as DiscordClient, Events, GatewayIntentBits, type Message } from "discord.js";

import { ChatctxError, Client, openaiMessages, type ChatMessage } from "chatctx";
import { setup, type DiscordForwarding } from "chatctx/discord";

import { askModel } from "./model.js";

const SYSTEM = "You are Helper, a friendly assistant in a Discord server. Answer the last message briefly.";


/** Forwards `discord`'s dispatches to chatctx and answers mentions of the bot with the model. */
export function build(discord: DiscordClient, context: Client): DiscordForwarding {
  const forwarding = setup(discord, context, { timeoutMs: 2_000 });
  discord.on(Events.MessageCreate, async (message: Message) => {
    const me = discord.user;
    if (message.author.bot || !me || !message.mentions.has(me)) return;
    // The message's own dispatch is on its way to chatctx: wait for it (bounded) before asking.
    await forwarding.flush();
    let messages: ChatMessage[];
    try {
      // A thread's messages are a topic of its parent channel.
      const thread = message.channel.isThread() ? message.channel : undefined;
      const history = await context.getChatHistoryContext({
        channel: "discord",
        chat_id: thread?.parentId ?? message.channelId,
        current_message_id: message.id,
      });
      messages = openaiMessages(history, { system: SYSTEM });
    } catch (e) {
      if (!(e instanceof ChatctxError)) throw e;
      console.warn(`chatctx: ${e.code}: ${e.message}`);
      messages = [{ role: "system", content: SYSTEM }, { role: "user", content: message.content }];
    }
    await message.reply(await askModel(messages));
  });
  return forwarding;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const discord = new DiscordClient({
    intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent],
  });
  build(discord, new Client({ baseUrl: process.env.CHATCTX_URL, token: process.env.CHATCTX_TOKEN, timeoutMs: 2_000 }));
  await discord.login(process.env.DISCORD_TOKEN);
}
