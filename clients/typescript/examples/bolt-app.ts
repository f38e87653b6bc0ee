// A Slack app with chatctx: Bolt for JavaScript, any OpenAI-compatible model, and a running `chatctx serve`.
//
// Every event's body goes to chatctx before the listeners, and what the app posts is recorded as the bot's own
// (Bolt drops the bot's own message events before any middleware, so chatctx could not see them otherwise).
//
//     npm install chatctx @slack/bolt
//     chatctx serve --preset group-bot &
//     SLACK_BOT_TOKEN=xoxb-… SLACK_SIGNING_SECRET=… LLM_BASE_URL=… LLM_MODEL=… node build/examples/bolt-app.js
//
// Settings (environment): SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, PORT (default 3000); CHATCTX_URL, CHATCTX_TOKEN
// (chatctx's token, not Slack's xoxb-); LLM_BASE_URL, LLM_MODEL, LLM_API_KEY; SLACK_API_URL (the tests' fake).
import { pathToFileURL } from "node:url";

import bolt from "@slack/bolt";

import { ChatctxError, Client, openaiMessages, type ChatMessage } from "chatctx";
import { setup } from "chatctx/slack";

import { askModel } from "./model.js";

const SYSTEM = "You are Helper, a friendly assistant in a Slack workspace. Answer the last message briefly.";


/** The app: mentions answered in their thread with the model and chatctx's context. */
export function build(context: Client): bolt.App {
  const api = process.env.SLACK_API_URL;
  const app = new bolt.App({
    token: process.env.SLACK_BOT_TOKEN,
    signingSecret: process.env.SLACK_SIGNING_SECRET ?? "",
    ...(api ? { clientOptions: { slackApiUrl: api } } : {}),
  });
  setup(app, context, { timeoutMs: 2_000 });
  app.event("app_mention", async ({ event, say }) => {
    let messages: ChatMessage[];
    try {
      const history = await context.getChatHistoryContext({ channel: "slack", chat_id: event.channel, current_message_id: event.ts });
      messages = openaiMessages(history, { system: SYSTEM });
    } catch (e) {
      if (!(e instanceof ChatctxError)) throw e;
      console.warn(`chatctx: ${e.code}: ${e.message}`);
      messages = [{ role: "system", content: SYSTEM }, { role: "user", content: event.text }];
    }
    await say({ text: await askModel(messages), thread_ts: event.thread_ts ?? event.ts });
  });
  return app;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const app = build(new Client({ baseUrl: process.env.CHATCTX_URL, token: process.env.CHATCTX_TOKEN, timeoutMs: 2_000 }));
  await app.start(Number(process.env.PORT ?? 3000));
  console.log("the app is listening");
}
