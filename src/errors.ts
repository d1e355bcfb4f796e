/**
 * Every error a user can see carries a stable code and a fix-it message. The user sees `message` and
 * `fix`; the log sees the cause and the stack. Codes survive crossing process boundaries (BullMQ job
 * failures), classes do not, so code checks go through `errorCode()`.
 */
export type ErrorCode =
  | "CONFIG_INVALID"
  | "CONFIG_NOT_FOUND"
  | "HOST_UNKNOWN"
  | "HOST_UNREACHABLE"
  | "HOST_KEY_MISMATCH"
  | "HOST_AUTH_FAILED"
  | "HOST_CONNECTION_LOST"
  | "HOST_COMMAND_TIMEOUT"
  | "HOST_COMMAND_FAILED"
  | "QUEUE_UNAVAILABLE"
  | "SLACK_API_ERROR"
  | "SLACK_GROUP_UNAVAILABLE"
  | "INPUT_INVALID"
  | "NOT_AUTHORIZED"
  | "HUB_NOT_FOUND"
  | "HUB_REVISION_NOT_FOUND"
  | "HUB_GATED"
  | "HUB_TOKEN_INVALID"
  | "HUB_NO_SAFETENSORS"
  | "HUB_TOO_MANY_FILES"
  | "HUB_UNAVAILABLE"
  | "HUB_BAD_RESPONSE"
  | "MODEL_CONFIG_UNSUPPORTED"
  | "HEALTH_FAILED"
  | "SANITY_FAILED"
  | "IN_PLACE_REFUSED"
  | "PLAN_REFUSED"
  | "BENCH_FAILED"
  | "CHART_UNAVAILABLE"
  | "API_TOKEN_MISSING"
  | "API_TOKEN_INVALID"
  | "API_SCOPE_MISSING"
  | "COMMAND_FAILED"
  | "COMMAND_NO_ANSWER"
  | "DASHBOARD_UNAVAILABLE"
  | "SHUTTING_DOWN"
  | "SWAP_SUPERSEDED"
  | "SWAP_ENDED"
  | "ROLLOUT_ENDED"
  | "ROLLOUT_REFUSED"
  | "FENCE_STALE"
  | "FENCE_UNAVAILABLE"
  | "GC_READ_FAILED"
  | "GC_DELETE_FAILED"
  | "STORE_RECORD_INVALID"
  | "STORE_RECORD_TOO_LARGE"
  | "FRONT_DOOR_SOCKET_MISSING"
  | "FRONT_DOOR_UNREACHABLE"
  | "FRONT_DOOR_DENIED"
  | "FRONT_DOOR_UNKNOWN_SERVER"
  | "FRONT_DOOR_REFUSED"
  | "FRONT_DOOR_BAD_ANSWER"
  | "INTERNAL";

export class CodedError extends Error {
  readonly code: ErrorCode;
  readonly fix: string;

  constructor(code: ErrorCode, message: string, fix: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "CodedError";
    this.code = code;
    this.fix = fix;
  }
}

export function isCodedError(error: unknown): error is CodedError {
  return error instanceof CodedError;
}

/** Wraps anything thrown into a CodedError; unknown errors become INTERNAL with a generic fix. */
export function asCodedError(error: unknown): CodedError {
  if (error instanceof CodedError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new CodedError("INTERNAL", message, "This is a bug in modelswap; the bot's log has the details.", {
    cause: error,
  });
}

/** One line for a human: what went wrong and how to fix it. */
export function describeError(error: unknown): string {
  const coded = asCodedError(error);
  return `${coded.message} (${coded.code}). Fix: ${coded.fix}`;
}

/**
 * Errors that say the host could not be reached right now, not that it refused the work: the stage is
 * retried with backoff (for `swaps.hostRetrySeconds`) instead of failing the swap.
 */
export function isHostUnreachable(error: unknown): boolean {
  const code = asCodedError(error).code;
  return code === "HOST_UNREACHABLE" || code === "HOST_CONNECTION_LOST" || code === "HOST_COMMAND_TIMEOUT";
}

/**
 * Errors that say this run of a swap is over: another run holds its lease (SWAP_SUPERSEDED), the swap
 * was ended meanwhile from outside (SWAP_ENDED: a stuck swap cleared), or a host refused its command
 * because a later run had changed it (FENCE_STALE). Such a run stops where it is,
 * without saving and without touching a host again; no stage may take one for a failure of its own.
 */
export function isRunOver(error: unknown): boolean {
  const code = asCodedError(error).code;
  return code === "SWAP_SUPERSEDED" || code === "SWAP_ENDED" || code === "FENCE_STALE";
}

/**
 * Errors no stage takes for a failure of its own: the host away (the step runs again later), this run
 * over (it stops), this process stopping (the step is handed over). A stage that turns errors into its
 * result throws these on.
 */
export function passesThrough(error: unknown): boolean {
  return isHostUnreachable(error) || isRunOver(error) || asCodedError(error).code === "SHUTTING_DOWN";
}

/** Thrown inside a long step when this process is stopping: the step is handed to another worker. */
export function shuttingDown(): CodedError {
  return new CodedError(
    "SHUTTING_DOWN",
    "this modelswap process is stopping",
    "nothing to do: another worker (or this one after its restart) resumes the step",
  );
}
