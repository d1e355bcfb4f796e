import { type Clock, systemClock } from "../../src/clock.ts";
import type { Engine } from "../../src/engine/engine.ts";
import { asCodedError } from "../../src/errors.ts";
import { sh } from "../../src/host/shell-quote.ts";
import type { HostTransport } from "../../src/host/transport.ts";

export interface HealthCheckTarget {
  /** The systemd unit that serves now (store.hosts.serving(host)?.unit ?? the config's currentUnit). */
  unit: string;
  /** The engine's HTTP port, read with curl on the host itself (it is usually bound to loopback). */
  port: number;
  /** The host's engine: its generating health probe. */
  engine: Pick<Engine, "healthProbe" | "healthFailure">;
}

export interface HealthCheckResult {
  ok: boolean;
  checkedAt: Date;
  durationMs: number;
  /** `systemctl is-active`'s answer (active, failed, inactive, activating, …); undefined when not asked. */
  unitState: string | undefined;
  /** HTTP status of the engine's health probe (SGLang's /health_generate), or null when nothing answered. */
  httpStatus: number | null;
  /** The failing check, for people: "`x.service` is failed", "/health_generate timed out after 10 s". */
  failure: string | undefined;
  /**
   * Set when the check never reached the host (SSH refused, lost, or a changed host key): its serving
   * state is unknown, not "down". The coded error, said once by the alert.
   */
  unreachable?: { code: string; message: string; fix: string };
}

/** Errors that mean the bot could not look at the host at all (a changed host key among them). */
const UNREACHABLE_CODES = new Set([
  "HOST_UNREACHABLE",
  "HOST_CONNECTION_LOST",
  "HOST_AUTH_FAILED",
  "HOST_KEY_MISMATCH",
]);

const UNIT_MARK = "__modelswap_unit_rc=";
const CURL_MARK = "__modelswap_curl_rc=";

/**
 * One health check of one host, as the monitor runs it every interval: is the serving unit active
 * (`systemctl is-active`), and does the engine generate (`curl --max-time <timeout>` of
 * `/health_generate` on the host, which SGLang answers 200 only once a token came back). Both run in
 * one command on the host's transport. Never throws: an unreachable host is a failed check.
 */
export async function checkHealth(
  transport: Pick<HostTransport, "exec">,
  target: HealthCheckTarget,
  timeoutSeconds: number,
  clock: Clock = systemClock,
): Promise<HealthCheckResult> {
  const started = clock.now();
  const result: HealthCheckResult = {
    ok: false,
    checkedAt: new Date(started),
    durationMs: 0,
    unitState: undefined,
    httpStatus: null,
    failure: undefined,
  };
  const command = sh`systemctl is-active ${target.unit}; echo ${UNIT_MARK}$?
${target.engine.healthProbe(target.port, timeoutSeconds)}; echo ${CURL_MARK}$?`;
  try {
    const answer = await transport.exec(command, {
      // curl gives up after timeoutSeconds; the margin covers systemctl and the SSH round trip
      timeoutMs: Math.ceil(timeoutSeconds * 1000) + 5000,
      maxOutputBytes: 64 * 1024,
    });
    const lines = answer.stdout.split("\n").map((line) => line.trim());
    const unitAt = lines.findIndex((line) => line.startsWith(UNIT_MARK));
    const curlAt = lines.findIndex((line) => line.startsWith(CURL_MARK));
    result.unitState = (unitAt > 0 ? lines[unitAt - 1] : undefined) || "unknown";
    const code = curlAt > 0 ? Number(lines[curlAt - 1]) : 0;
    result.httpStatus = code > 0 ? code : null;
    const curlExit = curlAt >= 0 ? Number(lines[curlAt]!.slice(CURL_MARK.length)) : null;
    const failures: string[] = [];
    if (result.unitState !== "active") failures.push(`\`${target.unit}\` is ${result.unitState}`);
    if (result.httpStatus !== 200)
      failures.push(target.engine.healthFailure(result.httpStatus, curlExit, timeoutSeconds));
    result.ok = failures.length === 0;
    result.failure = result.ok ? undefined : failures.join("; ");
  } catch (error) {
    const coded = asCodedError(error);
    result.failure =
      coded.code === "HOST_COMMAND_TIMEOUT"
        ? `the check did not finish within ${timeoutSeconds + 5} s (${coded.message})`
        : `the host could not be reached: ${coded.message}`;
    if (UNREACHABLE_CODES.has(coded.code)) {
      result.unreachable = { code: coded.code, message: coded.message, fix: coded.fix };
    }
  }
  result.durationMs = clock.now() - started;
  return result;
}
