/**
 * One line of `modelswap doctor`'s table: a check of one target (Slack, Redis, a host), what it saw, and
 * for a problem its code and a one-line fix. A warning is worth knowing but does not fail the doctor.
 */
export interface DoctorRow {
  /** "Slack", "Redis", or "host <name>". */
  target: string;
  check: string;
  status: "pass" | "warn" | "fail";
  /** What the check saw, in one line; never a secret. */
  saw: string;
  /** For a warning or a failure: a stable code (docs/operations.md, "modelswap doctor"). */
  code?: string;
  /** For a warning or a failure: what to do, in one line. */
  fix?: string;
}

export const pass = (target: string, check: string, saw: string): DoctorRow => ({
  target,
  check,
  status: "pass",
  saw,
});

export const problem = (
  status: "warn" | "fail",
  target: string,
  check: string,
  saw: string,
  code: string,
  fix: string,
): DoctorRow => ({ target, check, status, saw, code, fix });
