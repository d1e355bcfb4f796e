import { describe, expect, it } from "vitest";
import { renderSwapCard } from "../../src/reporter/swap-card.ts";
import { newStages } from "../../src/swap/swap-record.ts";
import { aRecord } from "../support/records.ts";

describe("the swap card", () => {
  it("names who approved and who cancelled from the record, while quoted text stays escaped", () => {
    const stages = newStages();
    stages.approval = { state: "done", detail: "waiting for the download" };
    stages.build = {
      state: "failed",
      detail: "error: <!channel> <https://evil.example|click> & more <@U0MALLORY1>",
    };
    const card = renderSwapCard(
      aRecord({
        stages,
        reason: "the switch had happened after <!here> said so",
        decision: {
          approved: true,
          by: "U0BOB00001",
          at: new Date().toISOString(),
          planHash: "x",
          via: "button",
        },
        cancel: { by: "U0DAVE0001", at: new Date().toISOString() },
      }),
    );
    const text = JSON.stringify(card.blocks);
    expect(text).toContain("Approval approved by <@U0BOB00001> — waiting for the download");
    expect(text).toContain("cancelled by <@U0DAVE0001>");
    expect(text).not.toContain("<!channel>");
    expect(text).not.toContain("<!here>");
    expect(text).not.toContain("<https://evil.example");
    // a mention in quoted text stays text: only the record's own ids become mentions
    expect(text).not.toContain("<@U0MALLORY1>");
    expect(text).toContain("&lt;!channel&gt;");
  });
});
