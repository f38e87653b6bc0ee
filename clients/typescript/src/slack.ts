// chatctx for Slack Bolt (JavaScript): a global middleware forwarding each event's body before the listeners run,
// with the bot's user id from Bolt's context, and a wrapper of the Web API client the listeners use so what the
// bot posts is recorded as its own. Bolt drops the bot's own `message` events before any middleware runs (its
// default `ignoreSelf`), so without the wrapper chatctx would never see the bot's replies. Types only from Bolt.
//
//     import { setup } from "chatctx/slack";
//     setup(app, new Client({ baseUrl, token, timeoutMs: 2_000 }));   // chatctx's token, not Slack's xoxb-
import type { AnyMiddlewareArgs, App, Middleware } from "@slack/bolt";

import type { Client, Schemas } from "./client.js";
import { failOpen, type IntegrationOptions } from "./failopen.js";

export type { IntegrationOptions } from "./failopen.js";

/** Web API methods whose answer is a message the bot posted, and the one that changes one. */
const POSTS: ReadonlySet<string> = new Set(["chat.postMessage", "chat.meMessage"]);
const UPDATES: ReadonlySet<string> = new Set(["chat.update"]);

/** What the middleware puts in Bolt's `context`. */
export interface ChatctxSlackContext {
  /** The ingest report of this event, or `undefined` when chatctx could not be reached in time. */
  chatctxReport?: Schemas["IngestReport"] | undefined;
}

type Call = (options?: Record<string, unknown>) => Promise<unknown>;
type WebClient = {
  apiCall(method: string, options?: Record<string, unknown>): Promise<unknown>;
  chat?: { postMessage?: Call; meMessage?: Call; update?: Call };
  chatctxRecording?: boolean;
};

/** The Events API envelope of the message a Web API call posted or changed, when it did. */
export function envelopeOf(method: string, answer: unknown, teamId: string | undefined): Record<string, unknown> | undefined {
  const a = answer as { ok?: boolean; channel?: string; ts?: string; message?: Record<string, unknown> } | undefined;
  if (!a?.ok || !a.channel || typeof a.message !== "object" || a.message === null) return undefined;
  let event: Record<string, unknown>;
  if (POSTS.has(method)) event = { type: "message", channel: a.channel, ...a.message };
  else if (UPDATES.has(method)) {
    event = { type: "message", subtype: "message_changed", channel: a.channel, message: { ...a.message, ts: a.ts ?? a.message.ts } };
  } else return undefined;
  return { type: "event_callback", event, ...(teamId ? { team_id: teamId } : {}) };
}

/** Bolt middleware: forwards each event's body (fail-open, bounded by `timeoutMs`) before the listeners, and wraps
 * the request's Web API client (once) so the bot's posts are recorded. `app.use(chatctxMiddleware(client))`. */
export function chatctxMiddleware(client: Client, options: IntegrationOptions = {}): Middleware<AnyMiddlewareArgs> {
  const send = (envelope: object, botUserId: string | undefined) =>
    failOpen(options, "forward a Slack event", (signal) => client.slackEvent(envelope, { bot_user_id: botUserId }, { signal }));
  return async (args) => {
    const { body, context, next } = args;
    const web = (args as unknown as { client?: WebClient }).client;
    const botUserId = context.botUserId;
    if (web && !web.chatctxRecording) {
      web.chatctxRecording = true;
      const recorded =
        (method: string, call: (opts?: Record<string, unknown>) => Promise<unknown>) =>
        async (opts?: Record<string, unknown>) => {
          const answer = await call(opts);
          const envelope = envelopeOf(method, answer, context.teamId);
          if (envelope) await send(envelope, botUserId);
          return answer;
        };
      // The Web API client binds each method (`chat.postMessage`, …) to `apiCall` when it is made: both are wrapped.
      const chat = web.chat;
      for (const name of ["postMessage", "meMessage", "update"] as const) {
        const call = chat?.[name];
        if (chat && call) chat[name] = recorded(`chat.${name}`, call.bind(chat));
      }
      const apiCall = web.apiCall.bind(web);
      web.apiCall = (method, opts) => recorded(method, (o) => apiCall(method, o))(opts);
    }
    const event = body as { type?: string };
    (context as ChatctxSlackContext).chatctxReport = event.type === "event_callback" ? await send(body, botUserId) : undefined;
    await next();
  };
}

/** `app.use(chatctxMiddleware(client, options))`: posts made through the client Bolt hands a listener (`say`,
 * `client.chat.postMessage`, `client.chat.update`) are recorded; a post through another Web API client is not. */
export function setup(app: App, client: Client, options: IntegrationOptions = {}): void {
  app.use(chatctxMiddleware(client, options));
}
