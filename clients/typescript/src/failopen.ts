// What every integration shares: a call to chatctx that never breaks the bot and never holds it up past a bound.
import type { Client } from "./client.js";

/** What every integration takes. */
export interface IntegrationOptions {
  /** The longest a bot waits on chatctx for one update or one recorded message, in ms (default 2,000). Past it the
   * bot goes on without context; the call is abandoned, not retried. */
  timeoutMs?: number;
  /** Told of every failure (chatctx down, slow, refusing); default a `console.warn` line. Never throws into the bot. */
  onError?: (error: unknown, what: string) => void;
}

/** `call` bounded by the options' timeout (one signal over every attempt and wait), its failure reported and
 * swallowed: the answer, or `undefined` when chatctx could not give one in time. */
export async function failOpen<T>(
  options: IntegrationOptions,
  what: string,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T | undefined> {
  const timeoutMs = options.timeoutMs ?? 2_000;
  const signal = AbortSignal.timeout(timeoutMs);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), timeoutMs + 50);
  });
  try {
    const answer = await Promise.race([call(signal), late]);
    if (answer === "late") throw new Error(`no answer within ${timeoutMs} ms`);
    return answer as T;
  } catch (e) {
    try {
      (options.onError ?? warn)(e, what);
    } catch {
      // a failing reporter must not break the bot either
    }
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

function warn(error: unknown, what: string): void {
  console.warn(`chatctx: could not ${what}: ${error instanceof Error ? error.message : String(error)}`);
}

/** A client for the place of one update, made when first asked for: a scope pinned to that chat (and topic,
 * message, sender), for a model's tool loop. */
export function lazyScope(client: Client, place: Parameters<Client["scoped"]>[0] | undefined): () => Promise<Client> {
  let made: Promise<Client> | undefined;
  return () => {
    if (!place) return Promise.reject(new Error("this update names no chat"));
    made ??= client.scoped(place);
    return made;
  };
}
