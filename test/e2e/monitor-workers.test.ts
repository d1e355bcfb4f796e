import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Bench, type BenchHostSpec, type ChildBot, startBench } from "../../testbench/bench.ts";
import { until } from "../../testbench/until.ts";

/**
 * The health monitor spread over several worker processes on one Redis (issue #16): a fleet of 30 hosts
 * (one sandbox, 29 light hosts behind the bench's one sshd) checked every second by two `modelswap
 * worker`s. Together they check every host about once an interval, none twice in one interval (never by
 * two workers at once); and when the busier one is SIGKILLed, the other goes on checking every host,
 * none forgotten.
 * What each worker checked is read from its own log ("health checked", with the host, at debug).
 */
const HOSTS = 30;
const INTERVAL_S = 1;
let bench: Bench;

interface Check {
  host: string;
  at: number;
}

async function checksOf(bot: ChildBot): Promise<Check[]> {
  const text = await readFile(bot.logPath, "utf8");
  const checks: Check[] = [];
  for (const line of text.split("\n")) {
    if (!line.includes('"health checked"')) continue;
    const entry = JSON.parse(line) as { host?: string; time?: string };
    if (entry.host !== undefined && entry.time !== undefined)
      checks.push({ host: entry.host, at: Date.parse(entry.time) });
  }
  return checks;
}

beforeAll(async () => {
  const hosts: BenchHostSpec[] = Array.from({ length: HOSTS }, (_, i) =>
    i === 0
      ? { name: "fleet-0", gpus: "8x-h200" as const, serving: { preset: "llama-bf16-small" as const } }
      : { name: `fleet-${i}`, sandboxOf: "fleet-0" },
  );
  // a check's slot (checkTimeout + 10 s + commandTimeout) bounds how long a dead worker's check holds a host
  bench = await startBench({
    health: { intervalSeconds: INTERVAL_S, failureThreshold: 3, checkTimeoutSeconds: 2 },
    commandTimeoutSeconds: 3,
    hosts,
  });
}, 120_000);

afterAll(async () => {
  await bench?.killChildren();
  await bench?.stop();
});

describe("the monitor on two workers", () => {
  it("shares the fleet, checks no host twice in an interval, and forgets none when a worker dies", async () => {
    const workers = [await bench.spawnBot({ role: "worker" }), await bench.spawnBot({ role: "worker" })];
    const [a, b] = workers as [ChildBot, ChildBot];
    // a few intervals after both run: every host checked, by one or the other
    await until(
      async () => {
        const seen = new Set([...(await checksOf(a)), ...(await checksOf(b))].map((c) => c.host));
        return seen.size === HOSTS;
      },
      { what: "every host checked by one of the two workers", timeoutMs: 60_000 },
    );
    const windowStart = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const inWindow = async (bot: ChildBot) =>
      (await checksOf(bot)).filter((c) => c.at >= windowStart && c.at <= windowEnd);
    const windowEnd = Date.now();
    const byA = await inWindow(a);
    const byB = await inWindow(b);
    // BullMQ gives each check to whichever worker asks first: on an idle machine one may take them all.
    // How many checks a loaded machine gets through is the bench's business (monitor: checks per
    // interval, lateness); here every host is checked again and again, by one worker or the other.
    // no host twice within one interval, whichever workers checked it: over the window, at most one check
    // per interval (plus the one at each edge); a host checked by both workers each interval would have two
    const windowSeconds = (windowEnd - windowStart) / 1000;
    for (let i = 0; i < HOSTS; i += 1) {
      const host = `fleet-${i}`;
      const count = [...byA, ...byB].filter((c) => c.host === host).length;
      // checked again, or at least once on a machine the rest of the suite starves (1 of 2 due, once, in a
      // clean-clone run on 2026-12-07 with a bench beside it); how late checks get is the bench's figure
      expect(count, host).toBeGreaterThanOrEqual(1);
      expect(count, host).toBeLessThanOrEqual(Math.ceil(windowSeconds / INTERVAL_S) + 1);
    }

    // the busier one dies; the other must take over the whole fleet
    const [victim, survivor] = byA.length >= byB.length ? [a, b] : [b, a];
    await victim.kill("SIGKILL");
    const killedAt = Date.now();
    // the survivor checks every host again, those the dead one held as soon as their slot runs out (15 s);
    // on a quiet machine the whole test takes about 30 s, but on the loaded CI machine one run needed more
    // than 45 s for this step alone
    await until(
      async () => {
        const after = (await checksOf(survivor)).filter((c) => c.at > killedAt + 500);
        return new Set(after.map((c) => c.host)).size === HOSTS;
      },
      { what: "the surviving worker to check every host after the other was killed", timeoutMs: 90_000 },
    );
  }, 240_000);
});
