import { CodedError } from "../errors.ts";
import { withTimeout } from "../with-timeout.ts";
import type { DoctorRow } from "./doctor-row.ts";

/** One of the doctor's rows for a host: what it checks, and the check (doctor's checkHost runs them at once). */
export interface Check {
  check: string;
  run: () => Promise<DoctorRow>;
}

/** Rejects with HOST_COMMAND_TIMEOUT when `work` outlives `ms` by 2 s: a backstop, the transport's own limits come first. */
export function within<T>(ms: number, work: Promise<T>): Promise<T> {
  return withTimeout(
    work,
    ms + 2000,
    () =>
      new CodedError(
        "HOST_COMMAND_TIMEOUT",
        `no answer within ${Math.round(ms / 1000)} s`,
        "the host may be overloaded or a tool on it hangs (nvidia-smi does when the driver is stuck); look at the host directly",
      ),
  );
}

export function lastLine(text: string): string {
  return text.trim().split("\n").at(-1)?.trim() ?? "";
}
