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

  it("reads as a dry run while one runs, and says a failure's reason once, with its code", () => {
    const planning = renderSwapCard(
      aRecord({ request: { model: { repo: "org/m", revision: "main" }, dryRun: true, engineRef: "main" } }),
    );
    expect(planning.text).toMatch(/^📝 Planning \(dry run\): org\/m → /);

    const stages = newStages();
    stages.sanity = { state: "failed", detail: "4/4 prompts failed (4 NaN/null logprobs)" };
    const failed = JSON.stringify(
      renderSwapCard(
        aRecord({
          stages,
          outcome: "rolled_back",
          reason: "4/4 prompts failed (4 NaN/null logprobs)",
          failure: { code: "SANITY_FAILED", fix: "try another engine build" },
        }),
      ).blocks,
    );
    expect(failed.split("4/4 prompts failed").length - 1).toBe(1);
    expect(failed).toContain("❌ Sanity check\\n");
    expect(failed).toContain("*Why:* 4/4 prompts failed (4 NaN/null logprobs) (SANITY_FAILED)");
  });
});
