import { describe, expect, it } from "vitest";
import { renderSwapCard } from "../../src/reporter/swap-card.ts";
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
    step: "prepare",
    stages: newStages(),
    tasks: {},
    ...over,
  };
}

describe("the swap card", () => {
  it("shows who approved as a mention, while quoted text stays escaped", () => {
    const stages = newStages();
    stages.approval = { state: "done", detail: "approved by <@U0BOB00001>" };
    stages.build = { state: "failed", detail: "error: <!channel> <https://evil.example|click> & more" };
    const card = renderSwapCard(
      record({ stages, reason: "cancelled by <@U0BOB00001> after <!here> said so" }),
    );
    const text = JSON.stringify(card.blocks);
    expect(text).toContain("approved by <@U0BOB00001>");
    expect(text).toContain("cancelled by <@U0BOB00001>");
    expect(text).not.toContain("<!channel>");
    expect(text).not.toContain("<!here>");
    expect(text).not.toContain("<https://evil.example");
    expect(text).toContain("&lt;!channel&gt;");
  });
});
