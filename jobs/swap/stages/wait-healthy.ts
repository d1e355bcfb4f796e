import { findFatalLine } from "../../../src/engine/fatal-lines.ts";
import { shuttingDown } from "../../../src/errors.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import type { StageContext } from "../swap-context.ts";

export type HealthResult = { healthy: true } | { healthy: false; why: string; journal: string[] };

/**
 * Polls a unit's server until `/health_generate` answers 200 (a generation went through), failing fast
 * when the unit enters `failed` or its journal shows a fatal line (a traceback, CUDA OOM, sampling errors):
 * waiting out the timeout would only lengthen the outage.
 */
export async function waitHealthy(
  ctx: StageContext,
  unit: string,
  timeoutSeconds: number,
  onPoll?: (elapsedSeconds: number) => Promise<void>,
  /** When the clock started (the unit's start): a worker that resumes the wait does not restart it. */
  since = Date.now(),
): Promise<HealthResult> {
  const port = ctx.host.servingPort;
  const started = since;
  // The outage lasts until this notices the server is up: look twice a second at most (a cheap command on
  // an open connection), faster when pollSeconds says so.
  const pollMs = Math.max(200, Math.min(500, ctx.deps.config.file.swaps.pollSeconds * 1000));
  let journal: string[] = [];
  for (;;) {
    const result = await ctx.exec(sh`
      systemctl is-active ${unit} || true
      curl -s -o /dev/null -w '%{http_code}\\n' --max-time 10 ${`http://127.0.0.1:${port}/health_generate`} || true
      echo ---journal---
      journalctl -u ${unit} -n 200 --no-pager -o cat 2>/dev/null || true`);
    const [head = "", log = ""] = result.stdout.split("---journal---\n");
    const [state = "", code = ""] = head
      .trim()
      .split("\n")
      .map((l) => l.trim());
    journal = log.split("\n").filter((l) => l !== "" && l !== "-- No entries --");
    const sinceStart = journalSince(journal);
    if (code === "200" && state === "active") return { healthy: true };
    const fatal = findFatalLine(sinceStart);
    if (state === "failed")
      return { healthy: false, why: `${unit} failed${fatal ? `: ${fatal.line}` : ""}`, journal };
    if (fatal !== undefined)
      return { healthy: false, why: `fatal line in the journal: ${fatal.line}`, journal };
    const elapsed = (Date.now() - started) / 1000;
    if (elapsed > timeoutSeconds) {
      return {
        healthy: false,
        why: `not healthy after ${Math.round(elapsed)} s (limit ${timeoutSeconds} s)`,
        journal,
      };
    }
    await onPoll?.(elapsed);
    await pause(pollMs, ctx.deps.stopping);
  }
}

/** Sleeps between polls; a process that is stopping hands the wait over instead (it resumes on the same clock). */
async function pause(ms: number, stopping: AbortSignal | undefined): Promise<void> {
  if (stopping?.aborted) throw shuttingDown();
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      stopping?.removeEventListener("abort", done);
      resolve();
    }
    stopping?.addEventListener("abort", done, { once: true });
  });
  if (stopping?.aborted) throw shuttingDown();
}

/** The journal lines since the unit's last start (earlier runs' crashes are not this run's). */
function journalSince(lines: string[]): string[] {
  const last = lines.findLastIndex((l) => /^Started .*\.service|^Starting .*\.service/.test(l));
  return last < 0 ? lines : lines.slice(last);
}
