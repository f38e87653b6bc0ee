/** What every failed call throws: the server's `{code, message}` (docs/protocol.md §9), or a client-side code. */
export class ChatctxError extends Error {
  /**
   * The error code: one of the server's (`invalid_request`, `unknown_chat`, `forbidden_scope`, …) or, from the
   * client itself, `connection_error` (the server could not be reached), `timeout` (no answer within the call's
   * timeout), `bad_response` (an answer that is not the documented JSON) or `aborted` (the caller's signal).
   */
  readonly code: string;
  /** The HTTP status, when the server answered. */
  readonly status: number | undefined;

  constructor(code: string, message: string, status?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ChatctxError";
    this.code = code;
    this.status = status;
  }
}
