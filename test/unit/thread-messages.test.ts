import { describe, expect, it } from "vitest";
import { threadReply } from "../../src/reporter/thread-messages.ts";
import { newStages } from "../../src/swap/swap-record.ts";
import { aRecord } from "../support/records.ts";

const WHY = '4/4 prompts failed (4 NaN/null logprobs): NaN logits (argmax fell to token 0, "!!!!")';
const rollingBack = {
  type: "rolling-back",
  to: "sglang-old.service",
  stopping: "sglang-new.service",
  why: WHY,
} as const;
const at = { at: new Date().toISOString() };

describe("the thread's rollback reply", () => {
  it("does not repeat a reason the failed sanity check or health wait told just above", () => {
    for (const stage of ["sanity", "health"] as const) {
      const stages = { ...newStages(), [stage]: { state: "failed" as const } };
      const reply = threadReply({ ...rollingBack, ...at }, aRecord({ stages }));
      expect(reply?.message.text).toBe(
        `↩️ Rolling back to \`sglang-old.service\` (the ${stage === "sanity" ? "sanity check" : "health wait"} failed, above)`,
      );
    }
  });

  it("gives the reason when no reply told it (a switch that failed, a cancel)", () => {
    const stages = { ...newStages(), switch: { state: "failed" as const } };
    const reply = threadReply({ ...rollingBack, ...at }, aRecord({ stages }));
    expect(reply?.message.text).toMatch(/^↩️ Rolling back to `sglang-old.service`: 4\/4 prompts failed/);
  });
});
