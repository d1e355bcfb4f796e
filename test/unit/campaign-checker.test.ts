import { describe, expect, it } from "vitest";
import {
  type CheckInput,
  type HostSample,
  judge,
  readCardOutcome,
  readFinalLine,
  readLedger,
} from "../../testbench/fault-campaign/checker.ts";
import {
  campaignSchedules,
  FAULTS,
  POINTS,
  replayCommand,
  type Schedule,
} from "../../testbench/fault-campaign/schedule.ts";

/**
 * The fault campaign's checker (testbench/fault-campaign/checker.ts) on hand-made observations: each rule
 * that makes a lie, a stale claim or an outage caused by the bot; and its schedules, which a seed must
 * give back the same.
 */

const OLD = "Qwen/Qwen3-8B-FP8";
const NEW = "sim-org/camp-r1-m";
const T = Date.parse("2026-12-04T10:00:00Z");

const schedule = (over: Partial<Schedule> = {}): Schedule => ({
  mode: "door",
  fault: "worker-kill",
  point: "health",
  target: "running",
  durationMs: 2000,
  seed: 1,
  ...over,
});

const sample = (answer: HostSample["answer"], units = ["sglang-new.service"]): HostSample => ({
  at: T + 5000,
  answer,
  units: units.map((unit) => ({ unit, activeState: "active", subState: "running", mainPid: 100 })),
});

const NEW_LINE = `✅ *gpu-1 now serves ${NEW}@abc1234* (\`sglang-new.service\`). No request refused; sanity: 4/4 prompts answered sanely.`;
const ROLLED_BACK = `↩️ *Swap to ${NEW}@abc1234 on gpu-1 rolled back*: 4/4 prompts failed (SANITY_FAILED). sglang-old.service is healthy again. *Fix:* try another build`;
const PAGE = `<!channel> 🚨 *gpu-1 serves nothing*: the swap to ${NEW}@abc1234 failed (x) and the rollback failed too: y. Act now`;

function input(over: Partial<CheckInput>): CheckInput {
  return {
    schedule: schedule(),
    newModel: NEW,
    oldModel: OLD,
    struckAt: T,
    finalLine: readFinalLine(NEW_LINE, T + 4000, OLD),
    card: "succeeded",
    ledger: { outcome: "succeeded", model: NEW },
    samples: [sample({ status: 200, model: NEW })],
    withoutReadySlot: [],
    cards: 1,
    ...over,
  };
}

describe("reading what the bot said", () => {
  it("reads the final line's outcome and what it says serves", () => {
    expect(readFinalLine(NEW_LINE, T, OLD)).toMatchObject({
      outcome: "succeeded",
      serves: { kind: "model", model: NEW },
      at: T,
      checked: false,
    });
    expect(readFinalLine(ROLLED_BACK, T, OLD)).toMatchObject({
      outcome: "rolled_back",
      serves: { kind: "model", model: OLD },
    });
    expect(readFinalLine(PAGE, T, OLD)).toMatchObject({ outcome: "failed", serves: { kind: "nothing" } });
    const failed = `❌ *Swap to ${NEW}@abc1234 on gpu-1 failed*: x. Nothing on the host was changed.`;
    expect(readFinalLine(failed, T, OLD).serves).toEqual({ kind: "model", model: OLD });
  });

  it("takes a final check's time (to the second) as the claim's time", () => {
    const line = `${NEW_LINE} Checked at 09:59:58 UTC: \`sglang-new.service\` active (pid 100).`;
    expect(readFinalLine(line, T + 1500, OLD)).toMatchObject({ at: T - 2000, checked: true });
    // posted just after midnight, checked just before
    const late = Date.parse("2026-12-05T00:00:01Z");
    const line2 = `${NEW_LINE} Checked at 23:59:59 UTC: ok.`;
    expect(readFinalLine(line2, late, OLD).at).toBe(Date.parse("2026-12-04T23:59:59Z"));
  });

  it("reads the card's outcome and the ledger's newest row for the host", () => {
    expect(readCardOutcome("✅ Swapped: sim-org/x on gpu-1")).toBe("succeeded");
    expect(readCardOutcome("↩️ Rolled back")).toBe("rolled_back");
    expect(readCardOutcome("🔄 Swapping: health")).toBe("in progress");
    const history = [
      "Swap history: gpu-1 (newest first):",
      `2026-12-04 10:00 UTC gpu-1 rolled_back ${NEW}@abc1234`,
      `2026-12-04 09:50 UTC gpu-1 succeeded ${OLD}@def5678`,
    ].join("\n");
    expect(readLedger(history, "gpu-1")).toEqual({ outcome: "rolled_back", model: NEW });
    expect(readLedger(history, "gpu-1", OLD)).toEqual({ outcome: "succeeded", model: OLD });
    expect(readLedger(history, "gpu-2")).toBeUndefined();
  });
});

describe("judging", () => {
  it("finds no lie when the message, the card and the ledger say what clients get", () => {
    const v = judge(input({}));
    expect(v.lies).toEqual([]);
    expect(v.outageByBot).toBe(false);
    expect(v.served).toEqual({ kind: "model", model: NEW });
  });

  it("'now serves X' while clients get nothing is a lie, and an outage caused by the bot when the old model could serve", () => {
    const v = judge(
      input({
        schedule: schedule({ fault: "unit-crash-loop", target: "new", point: "retire" }),
        samples: [sample({ status: 0, error: "held or silent" }, [])],
      }),
    );
    expect(v.lies.map((l) => l.kind)).toEqual(["final-line", "ledger"]);
    expect(v.outageByBot).toBe(true);
  });

  it("'now serves X' while clients get X's NaN output is a lie", () => {
    const v = judge(
      input({
        schedule: schedule({ fault: "nan", target: "new", point: "benchmark" }),
        samples: [sample({ status: 200, model: NEW, nan: true })],
      }),
    );
    expect(v.lies.map((l) => l.kind)).toContain("final-line");
    expect(v.served.kind).toBe("garbage");
    expect(v.outageByBot).toBe(true);
  });

  it("'rolled back' while the old model answers is the truth; while nothing answers, a lie", () => {
    const rolledBack = {
      finalLine: readFinalLine(ROLLED_BACK, T + 4000, OLD),
      card: "rolled_back" as const,
      ledger: { outcome: "rolled_back" as const, model: NEW },
    };
    expect(judge(input({ ...rolledBack, samples: [sample({ status: 200, model: OLD })] })).lies).toEqual([]);
    const v = judge(input({ ...rolledBack, samples: [sample({ status: 503, error: "no server" }, [])] }));
    expect(v.lies.map((l) => l.kind)).toEqual(["final-line", "ledger"]);
    expect(v.outageByBot).toBe(true);
  });

  it("a page that nothing serves while a model answers is a false alarm", () => {
    const v = judge(
      input({
        finalLine: readFinalLine(PAGE, T + 4000, OLD),
        card: "failed",
        ledger: { outcome: "failed", model: NEW },
        samples: [sample({ status: 200, model: OLD })],
      }),
    );
    expect(v.lies.map((l) => l.kind)).toEqual(["false-alarm"]);
    expect(v.outageByBot).toBe(false);
  });

  it("nothing serving is no outage caused by the bot only when neither model could serve — never with one fault", () => {
    const nothing = [sample({ status: 0, error: "refused" }, [])];
    for (const fault of Object.keys(FAULTS) as (keyof typeof FAULTS)[]) {
      for (const target of FAULTS[fault]) {
        const v = judge(input({ schedule: schedule({ fault, target }), samples: nothing }));
        expect(v.outageByBot, `${fault}(${target})`).toBe(true);
      }
    }
  });

  it("a host fault struck after the bot's final check makes a disagreement stale, not a lie", () => {
    const line = `${NEW_LINE} Checked at 10:00:03 UTC: ok.`;
    const v = judge(
      input({
        schedule: schedule({ fault: "unit-crash-loop", target: "new", point: "retire" }),
        struckAt: T + 3500,
        finalLine: readFinalLine(line, T + 3800, OLD),
        samples: [sample({ status: 0, error: "refused" }, [])],
      }),
    );
    expect(v.lies).toEqual([]);
    expect(v.stale.map((l) => l.kind)).toEqual(["final-line", "ledger"]);
  });

  it("the card or the ledger disagreeing with the final line is a lie; no final line is unfinished, not a lie", () => {
    expect(judge(input({ card: "rolled_back" })).lies.map((l) => l.kind)).toEqual(["card-vs-final-line"]);
    expect(judge(input({ ledger: { outcome: "rolled_back", model: NEW } })).lies.map((l) => l.kind)).toEqual([
      "ledger-vs-final-line",
      "ledger",
    ]);
    const v = judge(input({ finalLine: undefined, card: "in progress", ledger: undefined }));
    expect(v.lies).toEqual([]);
    expect(v.unfinished).toBe(true);
  });

  it("keeps the invariants: a ready slot at every look, one card, one swap per host, one unit running at the end", () => {
    const v = judge(
      input({
        withoutReadySlot: [{ blue: "drain", hold: "maint" }],
        cards: 2,
        samples: [sample({ status: 200, model: NEW }, ["sglang-old.service", "sglang-new.service"])],
      }),
    );
    expect(v.invariants).toHaveLength(2);
    const second = judge(input({ secondSwap: { answer: "queued", text: "🔄 Swap queued (swap `sw-2`)" } }));
    expect(second.invariants).toEqual([expect.stringMatching(/a second swap was queued/)]);
    expect(judge(input({ secondSwap: { answer: "refused", text: "🚧 gpu-1 is busy" } })).invariants).toEqual(
      [],
    );
    const late = judge(
      input({ requestAnswered: "no answer within Slack's 3 s (operation_timeout), HTTP 0: (empty)" }),
    );
    expect(late.invariants).toEqual([expect.stringMatching(/yet the swap was queued and ran/)]);
    expect(v.strayUnits).toEqual(["sglang-old.service", "sglang-new.service"]);
  });
});

describe("schedules", () => {
  it("the same seed gives the same schedules, and a path gives back one of them", () => {
    const a = campaignSchedules(42, 50);
    expect(campaignSchedules(42, 50)).toEqual(a);
    expect(campaignSchedules(42, 0, [7, 31])).toEqual([a[7], a[31]]);
    for (const { schedule: s } of a) {
      expect(POINTS[s.mode]).toContain(s.point);
      expect(FAULTS[s.fault] as readonly string[]).toContain(s.target);
    }
    expect(replayCommand(42, 7)).toBe(
      "CAMPAIGN_SEED=42 CAMPAIGN_PATH=7 npx vitest run test/faults/campaign.test.ts",
    );
  });

  it("200 schedules cover every mode, fault and point", () => {
    const all = campaignSchedules(1, 200).map((p) => p.schedule);
    for (const mode of Object.keys(POINTS) as (keyof typeof POINTS)[])
      for (const point of POINTS[mode])
        expect(
          all.some((s) => s.mode === mode && s.point === point),
          `${mode} at ${point}`,
        ).toBe(true);
    for (const fault of Object.keys(FAULTS))
      expect(
        all.some((s) => s.fault === fault),
        fault,
      ).toBe(true);
  });
});
