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

describe("the thread's in-place lines", () => {
  const unit = "sglang-org-model-1111111.service";
  const say = (event: Parameters<typeof threadReply>[0]) => threadReply(event, aRecord({}))?.message.text;

  it("says the new weights were loaded into the same process, or that the engine refused them and kept the old", () => {
    expect(
      say({
        type: "updated",
        unit,
        mechanism: "update_weights_from_disk",
        seconds: 3.4,
        mainPid: 4242,
        ...at,
      }),
    ).toBe(
      `⚡ New weights loaded into the running \`${unit}\` in 3.4 s (\`update_weights_from_disk\`): the same process (MainPID 4242), so no restart, graph capture or JIT.`,
    );
    expect(
      say({
        type: "updated",
        unit,
        mechanism: "update_weights_from_disk",
        refused: "HTTP 400: Failed to get weights iterator: no safetensors.",
        ...at,
      }),
    ).toBe(
      `❌ \`${unit}\` refused the new weights (\`update_weights_from_disk\`) and kept serving the old ones: HTTP 400: Failed to get weights iterator: no safetensors.`,
    );
  });

  it("says how the old weights came back: loaded back into the same process, or the unit restarted from its file", () => {
    expect(say({ type: "reverted", unit, how: "loaded-back", seconds: 2, ...at })).toBe(
      `↩️ The old weights loaded back into \`${unit}\` in 2 s: the same process.`,
    );
    expect(
      say({
        type: "reverted",
        unit,
        how: "restarted",
        why: "the old weights did not load back: no answer",
        ...at,
      }),
    ).toBe(
      `⚠️ \`${unit}\` restarted from its unit file with the old weights: the old weights did not load back: no answer.`,
    );
  });
});
