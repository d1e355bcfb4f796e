import { describe, expect, it } from "vitest";
import { finalLine } from "../../src/reporter/final-line.ts";
import { aRecord } from "../support/records.ts";

describe("the final line of a swap", () => {
  it("keeps quoted text from becoming mrkdwn: no code block, no channel ping, no link", () => {
    const line = finalLine(
      aRecord({
        outcome: "failed",
        step: "done",
        reason: "the unit failed: ```boom``` <!channel> <https://evil.example|click> in the log",
      }),
    );
    expect(line).not.toContain("```");
    expect(line).not.toContain("<!channel>");
    expect(line).not.toContain("<https://");
    expect(line).toContain("Nothing on the host was changed.");
  });

  it("names who rejected or cancelled from the record, as a mention", () => {
    const rejected = finalLine(
      aRecord({
        outcome: "rejected",
        step: "done",
        reason: "downloaded files are kept",
        decision: {
          approved: false,
          by: "U0BOB00001",
          at: new Date().toISOString(),
          planHash: "x",
          via: "reaction",
        },
      }),
    );
    expect(rejected).toMatch(/rejected by <@U0BOB00001>: downloaded files are kept\./);
    const cancelled = finalLine(
      aRecord({
        outcome: "cancelled",
        step: "done",
        cancel: { by: "U0ALICE001", at: new Date().toISOString() },
      }),
    );
    expect(cancelled).toContain("cancelled by <@U0ALICE001>");
  });

  it("pages the channel when the rollback failed too, naming the unit to restart", () => {
    const line = finalLine(
      aRecord({
        outcome: "failed",
        step: "done",
        reason: "sanity failed",
        previous: { unit: "sglang-old.service" },
        rollback: { ok: false, detail: "sglang-old.service did not come back" },
      }),
    );
    expect(line).toMatch(/^<!channel> 🚨 \*gpu-1 serves nothing\*/);
    expect(line).toContain("sglang-old.service");
  });
});
