import { asCodedError, describeError, isHostUnreachable, isRunOver } from "../../../src/errors.ts";

/** What a rollback came to: whether the host serves again, and why not. */
export interface RollbackResult {
  ok: boolean;
  detail: string;
  /** The host could not be reached: the rollback may be tried again (every step of it is idempotent). */
  unreachable?: unknown;
  /** Nothing had reached production (a blue/green swap before its flip): the swap failed, nothing was rolled back. */
  nothingToUndo?: boolean;
  /**
   * Not undone, and nothing changed: what served before no longer serves (a blue/green swap's old unit that
   * died in the flip-back window), so going back would leave nothing serving.
   */
  notDone?: string;
}

/**
 * A rollback step's error as the rollback's result: a failed rollback, with the host away said so (every
 * step is idempotent: it may be tried again). This run being over or this process stopping is no result
 * of the rollback's: those are thrown on, to stop the run or hand the step over.
 */
export function rollbackFailed(error: unknown): RollbackResult {
  if (isRunOver(error) || asCodedError(error).code === "SHUTTING_DOWN") throw error;
  return {
    ok: false,
    detail: describeError(error),
    ...(isHostUnreachable(error) ? { unreachable: error } : {}),
  };
}
