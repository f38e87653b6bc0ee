// chatctx for discord.js: every Gateway dispatch chatctx maps, forwarded as the client receives it (the `raw`
// event), with the bot's user id; the bot's own messages arrive as dispatches too, so its replies are recorded as
// its own. Types only from discord.js: nothing of it is loaded at run time.
//
//     import { setup } from "chatctx/discord";
//     const forwarding = setup(discordClient, new Client({ baseUrl, timeoutMs: 2_000 }));
//     discordClient.on("messageCreate", async (m) => { await forwarding.flush(); /* …ask chatctx… */ });
import type { Client as DiscordClient } from "discord.js";

import type { Client } from "./client.js";
import { failOpen, type IntegrationOptions } from "./failopen.js";

export type { IntegrationOptions } from "./failopen.js";

/** The dispatch types chatctx maps (docs/protocol.md §3.9); others (presence, typing, voice) are not sent. */
export const FORWARDED: ReadonlySet<string> = new Set([
  "MESSAGE_CREATE",
  "MESSAGE_UPDATE",
  "MESSAGE_DELETE",
  "MESSAGE_DELETE_BULK",
  "MESSAGE_REACTION_ADD",
  "MESSAGE_REACTION_REMOVE",
  "THREAD_CREATE",
  "THREAD_UPDATE",
  "THREAD_LIST_SYNC",
  "CHANNEL_CREATE",
  "CHANNEL_UPDATE",
  "GUILD_MEMBER_ADD",
  "GUILD_MEMBER_UPDATE",
  "GUILD_MEMBERS_CHUNK",
  "USER_UPDATE",
]);

/** Dispatches waiting to be sent at most; past it one is dropped (and reported) rather than queued. */
export const MAX_PENDING = 1_000;

type Packet = { op?: number; t?: string | null; d?: unknown };

/** What {@link setup} answers. */
export interface DiscordForwarding {
  /** Sends one Gateway packet as the `raw` event gives it (what `setup` does for every packet). */
  forward(packet: Packet): Promise<void>;
  /** Resolves once every packet received so far has been sent (or given up on): await it in a handler before
   * asking chatctx about the message it handles. */
  flush(): Promise<void>;
  /** Stops forwarding. */
  close(): void;
}

/** Forwards every mapped dispatch `discord` receives, in order, each bounded by `timeoutMs` and fail-open. */
export function setup(discord: DiscordClient, client: Client, options: IntegrationOptions & { botUserId?: string } = {}): DiscordForwarding {
  let botUserId = options.botUserId;
  let tail: Promise<void> = Promise.resolve();
  let pending = 0;
  const forward = (packet: Packet): Promise<void> => {
    if (packet.op !== 0 || !packet.t) return tail;
    if (packet.t === "READY") {
      // The bot's own id, before any message.
      botUserId ??= (packet.d as { user?: { id?: string } } | undefined)?.user?.id;
      return tail;
    }
    if (!FORWARDED.has(packet.t)) return tail;
    if (pending >= MAX_PENDING) {
      (options.onError ?? (() => {}))(new Error(`${MAX_PENDING} dispatches are waiting on chatctx`), `forward a Discord ${packet.t}`);
      return tail;
    }
    pending++;
    // One after another, so chatctx sees them in the order Discord sent them.
    tail = tail.then(async () => {
      const user = botUserId ?? discord.user?.id;
      await failOpen(options, `forward a Discord ${packet.t}`, (signal) =>
        client.discordEvent(packet, { bot_user_id: user }, { signal }),
      );
      pending--;
    });
    return tail;
  };
  const listener = (packet: Packet) => void forward(packet);
  discord.on("raw", listener);
  return { forward, flush: () => tail, close: () => void discord.off("raw", listener) };
}
