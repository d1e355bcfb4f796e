import { probeCommandMs } from "../../../src/engine/engine.ts";
import { duration } from "../../../src/format-duration.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";

/** How long one health probe may wait for an answer. */
const PROBE_SECONDS = 10;

/**
 * `mainPid`: the unit's process as systemctl showed it in the probe that found it healthy (0: none), so the
 * process the final check will expect is read in the same look, not one more round trip later.
 */
export type HealthResult =
  | { healthy: true; mainPid: number }
  | { healthy: false; why: string; journal: string[] };

/**
 * Polls a unit's server until the engine's health probe answers 200 (a generation went through), failing fast
 * when the unit enters `failed` or its journal shows a fatal line (a traceback, CUDA OOM, sampling errors):
 * waiting out the timeout would only lengthen the outage. A process that is stopping hands the wait over
 * (SHUTTING_DOWN from the clock's sleep); the next worker resumes it on the same clock (`since`).
 */
export async function waitHealthy(
  ctx: Pick<StageContext, "host" | "clock" | "signal" | "settings" | "engine">,
  unit: string,
  timeoutSeconds: number,
  onPoll?: (elapsedSeconds: number) => Promise<void>,
  /** When the clock started (the unit's start): a worker that resumes the wait does not restart it. */
  since = ctx.clock.now(),
  /** The unit's port (a blue/green unit's is its slot's). */
  port = ctx.host.config.servingPort,
): Promise<HealthResult> {
  // The outage lasts until this notices the server is up: look twice a second at most (a cheap command on
  // an open connection), faster when pollSeconds says so.
  const pollMs = Math.max(200, Math.min(500, ctx.settings.pollSeconds * 1000));
  // when a poll first read a traceback that has not reached its exception line yet
  let unendedSince: number | undefined;
  for (;;) {
    const result = await ctx.host.exec(
      sh`
      systemctl is-active ${unit} || true
      ${ctx.engine.healthProbe(port, PROBE_SECONDS)} || true
      echo
      systemctl show -p MainPID --value ${unit} 2>/dev/null || true
      echo ---journal---
      journalctl -u ${unit} -n 200 --no-pager -o cat 2>/dev/null || true`,
      { timeoutMs: probeCommandMs(PROBE_SECONDS) },
    );
    const [head = "", log = ""] = result.stdout.split("---journal---\n");
    // the probe's status may end its line or not (the echo ends it): blank lines are nothing
    const [state = "", code = "", pid = ""] = head
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "");
    // this run's lines only: an earlier run's crash of the same unit is not this run's
    const journal = journalSince(log.split("\n").filter((l) => l !== "" && l !== "-- No entries --"));
    if (code === "200" && state === "active") return { healthy: true, mainPid: Number(pid) || 0 };
    const fatal = ctx.engine.findFatalLine(journal);
    const elapsed = (ctx.clock.now() - since) / 1000;
    // A traceback read before its exception line says the engine is going down but not why: the why is
    // the line an operator needs, and it follows within moments. Read again, for a few seconds at most.
    if (fatal?.unended && elapsed <= timeoutSeconds) {
      unendedSince ??= ctx.clock.now();
      if (ctx.clock.now() - unendedSince < UNENDED_TRACEBACK_GRACE_MS) {
        await ctx.clock.sleep(pollMs, ctx.signal);
        continue;
      }
    }
    if (state === "failed")
      return { healthy: false, why: `${unit} failed${fatal ? `: ${fatal.line}` : ""}`, journal };
    if (fatal !== undefined)
      return { healthy: false, why: `fatal line in the journal: ${fatal.line}`, journal };
    if (elapsed > timeoutSeconds) {
      return {
        healthy: false,
        why: `not healthy after ${duration(elapsed)} (limit ${duration(timeoutSeconds)})`,
        journal,
      };
    }
    await onPoll?.(elapsed);
    await ctx.clock.sleep(pollMs, ctx.signal);
  }
}

/**
 * How long a traceback may stay without its exception line before the wait reports it as it stands. Python
 * writes a whole traceback at once; the seconds cover journald and a loaded host, not a slow writer.
 */
const UNENDED_TRACEBACK_GRACE_MS = 5000;

/** The journal lines since the unit's last start (earlier runs' crashes are not this run's). */
export function journalSince(lines: string[]): string[] {
  const last = lines.findLastIndex((l) => /^Started .*\.service|^Starting .*\.service/.test(l));
  return last < 0 ? lines : lines.slice(last);
}
