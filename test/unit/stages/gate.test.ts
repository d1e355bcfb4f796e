import { describe, expect, it } from "vitest";
import { requestApproval, verdict } from "../../../src/approval/gate.ts";
import type { Decision } from "../../../src/swap/swap-record.ts";
import { type FakeOptions, fakeContext } from "./fake-stage-context.ts";

const H1 = "1111aaaa2222bbbb";
const H2 = "3333cccc4444dddd";

const decision = (planHash: string, approved: boolean, at = "2026-12-01T12:10:00.000Z"): Decision => ({
  approved,
  by: "U0BOB00001",
  at,
  planHash,
  via: "reaction",
});

/** A swap with a plan (only its hash matters to the gate). */
function withPlan(options: FakeOptions = {}, planHash = H1) {
  return fakeContext({ ...options, record: { step: "preflight", planHash, ...options.record } });
}

describe("requestApproval", () => {
  it("opens the window for settings.approvalTtlMinutes from now and asks for a decision", () => {
    const fake = withPlan({ settings: { approvalTtlMinutes: 90 } });
    fake.clock.time += 42_000;

    requestApproval(fake.ctx);

    expect(fake.swap.record.approval).toEqual({
      requestedAt: "2026-12-01T12:00:42.000Z",
      expiresAt: "2026-12-01T13:30:42.000Z",
    });
    expect(fake.swap.record.stages.approval).toMatchObject({
      state: "running",
      startedAt: "2026-12-01T12:00:42.000Z",
      detail: "waiting for an approver's ✅ on the plan (in the thread)",
    });
    expect(fake.events()).toEqual([
      {
        type: "approval-requested",
        planHash: H1,
        expiresAt: "2026-12-01T13:30:42.000Z",
        at: "2026-12-01T12:00:42.000Z",
      },
    ]);
  });

  it("put up again for a changed plan: names the plan it replaces, clears the earlier decision, opens a new window", () => {
    const fake = withPlan({ record: { decision: decision(H1, true) } }, H2);
    fake.clock.time += 60 * 60_000;

    requestApproval(fake.ctx, { planHash: H1, voided: true, why: "flag spellings of this engine" });

    expect(fake.swap.record.decision).toBeUndefined();
    expect(fake.swap.record).not.toHaveProperty("decision");
    expect(fake.swap.record.approval?.expiresAt).toBe("2026-12-01T17:00:00.000Z");
    expect(fake.swap.record.stages.approval.detail).toBe(
      "the plan changed (flag spellings of this engine): approval needed again",
    );
    expect(fake.events()).toEqual([
      {
        type: "approval-requested",
        planHash: H2,
        expiresAt: "2026-12-01T17:00:00.000Z",
        replaces: { planHash: H1, voided: true, why: "flag spellings of this engine" },
        at: "2026-12-01T13:00:00.000Z",
      },
    ]);
  });

  it("refuses a swap that has no plan, asking nobody", () => {
    const fake = fakeContext();
    expect(() => requestApproval(fake.ctx)).toThrow("requestApproval: the swap has no plan");
    expect(fake.swap.record.approval).toBeUndefined();
    expect(fake.swap.record.stages.approval.state).toBe("pending");
    expect(fake.events()).toEqual([]);
  });
});

describe("verdict", () => {
  it("waits while no window is open (no plan put up yet), whatever was decided", async () => {
    const fake = withPlan({ decisions: { [H1]: decision(H1, true) } });
    expect(await verdict(fake.ctx)).toEqual({ kind: "waiting" });
  });

  it("waits inside the window while nobody decided", async () => {
    const fake = withPlan();
    requestApproval(fake.ctx);
    fake.clock.time += 239 * 60_000;
    expect(await verdict(fake.ctx)).toEqual({ kind: "waiting" });
  });

  it("tells the decision on the current plan: approved or rejected", async () => {
    const approved = withPlan({ decisions: { [H1]: decision(H1, true) } });
    requestApproval(approved.ctx);
    expect(await verdict(approved.ctx)).toEqual({ kind: "approved", decision: decision(H1, true) });

    const rejected = withPlan({ decisions: { [H1]: decision(H1, false) } });
    requestApproval(rejected.ctx);
    expect(await verdict(rejected.ctx)).toEqual({ kind: "rejected", decision: decision(H1, false) });
  });

  it("ignores a decision on another plan: an approval of the replaced plan does not count", async () => {
    const fake = withPlan({ decisions: { [H1]: decision(H1, true) } }, H2);
    requestApproval(fake.ctx, { planHash: H1, voided: true, why: "flag spellings of this engine" });
    expect(await verdict(fake.ctx)).toEqual({ kind: "waiting" });

    fake.decisions[H2] = decision(H2, true, "2026-12-01T12:20:00.000Z");
    expect(await verdict(fake.ctx)).toEqual({
      kind: "approved",
      decision: decision(H2, true, "2026-12-01T12:20:00.000Z"),
    });
  });

  it("expires only after the window's end", async () => {
    const fake = withPlan({ settings: { approvalTtlMinutes: 10 } });
    requestApproval(fake.ctx);
    fake.clock.time = Date.parse("2026-12-01T12:10:00.000Z");
    expect(await verdict(fake.ctx)).toEqual({ kind: "waiting" });
    fake.clock.time += 1;
    expect(await verdict(fake.ctx)).toEqual({ kind: "expired" });
  });

  it("a decision taken inside the window stands when the job looks after its end", async () => {
    const fake = withPlan({
      settings: { approvalTtlMinutes: 10 },
      decisions: { [H1]: decision(H1, true, "2026-12-01T12:09:00.000Z") },
    });
    requestApproval(fake.ctx);
    fake.clock.time = Date.parse("2026-12-01T12:30:00.000Z");
    expect(await verdict(fake.ctx)).toMatchObject({ kind: "approved" });
  });

  it("reads without changing the record or telling anything", async () => {
    const fake = withPlan({ decisions: { [H1]: decision(H1, false) } });
    requestApproval(fake.ctx);
    const before = structuredClone(fake.swap.record);
    const events = fake.events().length;
    await verdict(fake.ctx);
    expect(fake.swap.record).toEqual(before);
    expect(fake.events()).toHaveLength(events);
  });
});
