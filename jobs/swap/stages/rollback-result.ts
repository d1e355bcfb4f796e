/** What a rollback came to: whether the host serves again, and why not. */
export interface RollbackResult {
  ok: boolean;
  detail: string;
  /** The host could not be reached: the rollback may be tried again (every step of it is idempotent). */
  unreachable?: unknown;
  /** Nothing had reached production (a blue/green swap before its flip): the swap failed, nothing was rolled back. */
  nothingToUndo?: boolean;
}
