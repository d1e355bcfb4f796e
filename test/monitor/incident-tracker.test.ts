import { Redis } from "ioredis";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import {
  IncidentTracker,
  readLateness,
  type Thresholds,
  type Transition,
} from "../../src/store/incidents.ts";
import { useRedisServer } from "../support/redis-server.ts";

/** The incident state machine on a real redis-server: thresholds, flapping, several workers, lost alerts. */
let a: Redis;
let b: Redis;
const THRESHOLDS: Thresholds = { failureThreshold: 3, recoveryThreshold: 2, claimTimeoutMs: 60_000 };

useRedisServer((client, server) => {
  a = client;
  b = new Redis(server.url);
});

afterAll(() => {
  b?.disconnect();
});

beforeEach(async () => {
  await a.flushall();
});

const fail = { ok: false, detail: "`x.service` is failed" };
const pass = { ok: true, detail: "healthy" };

async function run(tracker: IncidentTracker, checks: boolean[], start = 1_000_000): Promise<string[]> {
  const kinds: string[] = [];
  for (const [i, ok] of checks.entries()) {
    kinds.push((await tracker.record("h", ok ? pass : fail, start + i * 1000)).kind);
  }
  return kinds;
}

describe("IncidentTracker", () => {
  it("counts how late each scheduled check started, fleet-wide, across workers", async () => {
    const first = new IncidentTracker(a, THRESHOLDS);
    const second = new IncidentTracker(b, THRESHOLDS);
    await first.record("h1", pass, 1_000, 12);
    await second.record("h2", fail, 1_000, 700);
    await first.record("h3", pass, 1_000, 95_000);
    // a check run off schedule (no due time) changes nothing in the histogram
    await second.record("h4", pass, 1_000);
    const lateness = await readLateness(a);
    expect(lateness.count).toBe(3);
    expect(Object.fromEntries(lateness.counts)).toEqual({ "0.05": 1, "1": 1, "+Inf": 1 });
    expect(lateness.maxSeconds).toBe(95);
    expect(lateness.sumSeconds).toBeCloseTo(95.712, 3);
    // a check that started early (a worker's clock ahead) is on time, not negative
    await second.record("h5", pass, 1_000, -40);
    expect((await readLateness(b)).counts.get("0.05")).toBe(2);
  });

  it("alerts once after N consecutive failures and recovers once after M consecutive passes", async () => {
    const tracker = new IncidentTracker(a, THRESHOLDS);
    const kinds = await run(tracker, [false, false, false, false, false, true, true, true]);
    expect(kinds).toEqual([
      "failing",
      "failing",
      "alert",
      "still-down",
      "still-down",
      "recovering",
      "recovered",
      "healthy",
    ]);
    expect((await tracker.state("h")).incident).toBeUndefined();
  });

  it("dates the incident from the first failed check of the streak, and remembers the alert's ts and model", async () => {
    const tracker = new IncidentTracker(a, THRESHOLDS);
    await tracker.record("h", { ok: false, detail: "first" }, 5000);
    await tracker.record("h", { ok: false, detail: "second" }, 6000);
    const alert = await tracker.record("h", { ok: false, detail: "third" }, 7000);
    expect(alert).toMatchObject({ kind: "alert", failures: 3 });
    const incident = (alert as Extract<Transition, { kind: "alert" }>).incident;
    expect(incident.since.getTime()).toBe(5000);
    expect(incident.firstFailure).toBe("first");
    expect(incident.lastFailure).toBe("third");
    await tracker.alertPosted("h", incident, "1700000000.000100", "org/model");
    await tracker.record("h", pass, 8000);
    const recovered = await tracker.record("h", pass, 9000);
    expect(recovered).toMatchObject({
      kind: "recovered",
      incident: { alertTs: "1700000000.000100", model: "org/model", firstFailure: "first" },
    });
    // the outage ends with the first of the passes that closed it
    expect((recovered as Extract<Transition, { kind: "recovered" }>).incident.healthySince?.getTime()).toBe(
      8000,
    );
  });

  it("never alerts for a host that fails and passes alternately below the threshold", async () => {
    const tracker = new IncidentTracker(a, THRESHOLDS);
    const kinds = await run(tracker, [false, true, false, false, true, false, true, false, false, true]);
    expect(kinds).not.toContain("alert");
  });

  it("keeps one incident open while the host flaps: a single pass does not close it", async () => {
    const tracker = new IncidentTracker(a, THRESHOLDS);
    const kinds = await run(tracker, [
      false,
      false,
      false,
      true,
      false,
      true,
      false,
      true,
      false,
      true,
      true,
    ]);
    expect(kinds.filter((k) => k === "alert")).toHaveLength(1);
    expect(kinds.filter((k) => k === "recovered")).toHaveLength(1);
    expect(kinds.at(-1)).toBe("recovered");
  });

  it("gives one alert and one recovery however many workers record at once", async () => {
    const one = new IncidentTracker(a, THRESHOLDS);
    const two = new IncidentTracker(b, THRESHOLDS);
    const failures = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? one : two).record("h", fail, 1000 + i)),
    );
    expect(failures.filter((t) => t.kind === "alert")).toHaveLength(1);
    const passes = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? one : two).record("h", pass, 2000 + i)),
    );
    expect(passes.filter((t) => t.kind === "recovered")).toHaveLength(1);
  });

  it("claims an alert again when posting it failed, but not while another claim is fresh", async () => {
    const tracker = new IncidentTracker(a, { ...THRESHOLDS, claimTimeoutMs: 10_000 });
    const kinds = await run(tracker, [false, false, false, false]);
    expect(kinds.slice(2)).toEqual(["alert", "still-down"]);
    const { incident } = await tracker.state("h");
    await tracker.alertFailed("h", incident!);
    expect((await tracker.record("h", fail, 1_005_000)).kind).toBe("alert");
    // claimed, never marked posted (the worker died): claimed again only after the timeout
    expect((await tracker.record("h", fail, 1_006_000)).kind).toBe("still-down");
    expect((await tracker.record("h", fail, 1_016_000)).kind).toBe("alert");
  });

  it("resets the streak while a swap switches the host, keeping an open incident", async () => {
    const tracker = new IncidentTracker(a, THRESHOLDS);
    await run(tracker, [false, false]);
    await tracker.suppress("h", "swap sw-1 is switching the host");
    expect(await tracker.state("h")).toMatchObject({ failures: 0, lastResult: "suppressed" });
    expect((await tracker.record("h", fail)).kind).toBe("failing");

    await run(tracker, [false, false, false], 2_000_000);
    await tracker.suppress("h", "swap sw-2 is switching the host");
    expect((await tracker.state("h")).incident).toBeDefined();
    expect((await tracker.record("h", pass)).kind).toBe("recovering");
  });

  it("lets only one check of a host run at a time, and forgets a host entirely", async () => {
    const tracker = new IncidentTracker(a, THRESHOLDS);
    expect(await tracker.beginCheck("h", "job-1", 5000)).toBe(true);
    expect(await tracker.beginCheck("h", "job-2", 5000)).toBe(false);
    await tracker.endCheck("h", "job-2"); // not its slot: no effect
    expect(await tracker.beginCheck("h", "job-3", 5000)).toBe(false);
    await tracker.endCheck("h", "job-1");
    expect(await tracker.beginCheck("h", "job-4", 5000)).toBe(true);
    await run(tracker, [false, false, false]);
    await tracker.forget("h");
    expect(await a.keys("*")).toEqual([]);
  });
});
