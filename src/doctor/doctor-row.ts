import type { ErrorCode } from "../errors.ts";
import type { RedisPolicyProblem } from "../redis/redis-policy.ts";

/**
 * The codes `modelswap doctor` names (docs/operations.md, "Every error code"): the errors a host or
 * Slack call raises anyway (HOST_KEY_MISMATCH, …), Redis's start-up warnings, and its own.
 */
export type DoctorCode =
  | ErrorCode
  | RedisPolicyProblem["code"]
  | "SLACK_TOKEN_INVALID"
  | "SLACK_UNREACHABLE"
  | "SLACK_SCOPES_MISSING"
  | "SLACK_SCOPES_UNKNOWN"
  | "SLACK_APP_TOKEN_INVALID"
  | "SLACK_CHANNEL_UNREACHABLE"
  | "REDIS_UNREACHABLE"
  | "HOST_SUDO_DENIED"
  | "HOST_SUDO_PARTIAL"
  | "HOST_HF_MISSING"
  | "HOST_HF_TOO_OLD"
  | "HOST_VENV_BROKEN"
  | "ENGINE_UPSTREAM_UNREACHABLE"
  | "MODELS_DIR_MISSING"
  | "MODELS_DIR_NOT_WRITABLE"
  | "MODELS_DIR_LOW_SPACE"
  | "GPU_UNAVAILABLE"
  | "SERVING_UNIT_MISSING"
  | "SERVING_UNIT_INACTIVE"
  | "SERVING_PORT_SILENT"
  | "FRONT_DOOR_MISCONFIGURED";

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
  code?: DoctorCode;
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
  code: DoctorCode,
  fix: string,
): DoctorRow => ({ target, check, status, saw, code, fix });
