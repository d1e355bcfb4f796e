import { describe, expect, it } from "vitest";
import { finalLine } from "../../jobs/swap/stages/finish.ts";
import { newStages, type SwapRecord } from "../../src/swap/swap-record.ts";

function record(over: Partial<SwapRecord>): SwapRecord {
  return {
    id: "sw-test-abcdef",
    host: "gpu-1",
    requester: "U0ALICE001",
    channel: "C0LLMOPS01",
    createdAt: "2026-11-30T00:00:00.000Z",
    request: {
      model: { repo: "org/model", revision: "main" },
      engineRef: "main",
      dryRun: false,
    } as SwapRecord["request"],
    step: "done",
    stages: newStages(),
    tasks: {},
    ...over,
  };
}

describe("the final line of a swap", () => {
  it("keeps a quoted error's ``` from opening a code block, and our own mentions as they are", () => {
    const line = finalLine(
      { record: record({ reason: "cancelled by <@U0BOB00001>: ```boom``` in the log" }) },
      "failed",
    );
    expect(line).not.toContain("```");
    expect(line).toContain("<@U0BOB00001>");
    expect(line).toContain("Nothing on the host was changed.");
  });

  it("says what happened to the engine when a swap ended before its switch", () => {
    const line = finalLine(
      {
        record: record({
          reason: "rejected by <@U0BOB00001>",
          engineRestore: "the engine is back at commit 1a2b3c4, as before the swap",
        }),
      },
      "rejected",
    );
    expect(line).toMatch(/rejected: rejected by <@U0BOB00001>\. Then the engine is back at commit 1a2b3c4/);
  });
});
