import fc from "fast-check";
import type { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import {
  applyIncidentRule,
  type CheckInput,
  type Hash,
  incidentRuleScript,
} from "../../src/store/incident-rule.ts";
import { useRedisServer } from "../support/redis-server.ts";

/**
 * The incident rule runs in Redis as Lua (src/store/incident-rule.lua) and is read in TypeScript
 * (src/store/incident-rule.ts). Over random histories of checks — passes and failures at random times,
 * thresholds, claim timeouts and lateness, with alerts posted and lost in between as the monitor does —
 * the script on a real redis-server and its twin give the same reply to every check, and leave the same
 * host hash and the same lateness histogram.
 */
let redis: Redis;
useRedisServer((client) => {
  redis = client;
});

type Step =
  | { op: "check"; outcome: "pass" | "fail"; dt: number; detail: string; lateMs?: number }
  | { op: "posted"; ts: string }
  | { op: "lost" };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record(
      {
        op: fc.constant("check" as const),
        outcome: fc.constantFrom("pass" as const, "fail" as const),
        dt: fc.integer({ min: 0, max: 90_000 }),
        detail: fc.constantFrom("HTTP 200", "HTTP 503", "unit failed", "timed out after 10 s", ""),
        lateMs: fc.integer({ min: 0, max: 70_000 }),
      },
      { requiredKeys: ["op", "outcome", "dt", "detail"] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("posted" as const),
      ts: fc.constantFrom("1796543623.442000", "1796543700.000100"),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("lost" as const) }) },
);

const history = fc.record({
  failureThreshold: fc.integer({ min: 1, max: 4 }),
  recoveryThreshold: fc.integer({ min: 1, max: 4 }),
  claimTimeoutMs: fc.integer({ min: 0, max: 120_000 }),
  steps: fc.array(step, { minLength: 1, maxLength: 40 }),
});

const bound = (ms: number) => (ms <= 1000 ? "1" : ms <= 10_000 ? "10" : "+Inf");

async function hash(key: string): Promise<Record<string, string>> {
  return await redis.hgetall(key);
}

describe("the incident rule's Lua script and its TypeScript twin", () => {
  it("answer every check alike and leave the same state, over random histories", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(history, async ({ failureThreshold, recoveryThreshold, claimTimeoutMs, steps }) => {
        run += 1;
        const hostKey = `{modelswap}:test:health:${run}`;
        const histKey = `{modelswap}:test:lateness:${run}`;
        const host: Hash = new Map();
        const histogram: Hash = new Map();
        let now = 1_796_500_000_000;
        for (const s of steps) {
          if (s.op === "posted" || s.op === "lost") {
            // as the monitor does once the alert is posted, or its post failed (SET_ON_INCIDENT)
            const since = host.get("incSince");
            if (since === undefined) continue;
            if (s.op === "posted") {
              host.set("incAlertTs", s.ts);
              await redis.hset(hostKey, "incAlertTs", s.ts);
            } else {
              host.delete("incClaimedAt");
              await redis.hdel(hostKey, "incClaimedAt");
            }
            continue;
          }
          now += s.dt;
          const input: CheckInput = {
            outcome: s.outcome,
            now,
            detail: s.detail,
            failureThreshold,
            recoveryThreshold,
            claimTimeoutMs,
            ...(s.lateMs === undefined ? {} : { late: { ms: s.lateMs, bound: bound(s.lateMs) } }),
          };
          const twin = applyIncidentRule(host, histogram, input);
          const script = (await redis.eval(
            incidentRuleScript(),
            2,
            hostKey,
            histKey,
            input.outcome,
            String(now),
            input.detail,
            String(failureThreshold),
            String(recoveryThreshold),
            String(claimTimeoutMs),
            input.late === undefined ? "" : String(input.late.ms),
            input.late === undefined ? "" : input.late.bound,
          )) as string[];
          expect(twin).toEqual(script);
          expect(Object.fromEntries(host)).toEqual(await hash(hostKey));
          expect(Object.fromEntries(histogram)).toEqual(await hash(histKey));
        }
      }),
      { numRuns: 150 },
    );
  }, 120_000);
});
