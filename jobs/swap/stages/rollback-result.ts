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
