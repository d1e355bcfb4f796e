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
        previous: { unit: "sglang-old.service", engine: "sglang" },
        rollback: { ok: false, detail: "sglang-old.service did not come back" },
      }),
    );
    expect(line).toMatch(/^<!channel> 🚨 \*gpu-1 serves nothing\*/);
    expect(line).toContain("sglang-old.service");
  });

  describe("says what the last check of the host saw (issue 27 §1)", () => {
    const switched = { startedAt: "2026-12-01T12:00:00.000Z", oldMainPid: 111 };
    const check = (ok: boolean, detail: string) => ({
      at: "2026-12-01T12:03:04.000Z",
      unit: "sglang-old.service",
      ok,
      mainPid: 111,
      detail,
    });

    it("after the outcome and before what to try, which stays last", () => {
      const line = finalLine(
        aRecord({
          outcome: "rolled_back",
          step: "done",
          reason: "NaN in output",
          switch: switched,
          rollback: { ok: true, detail: "sglang-old.service is healthy again" },
          failure: { code: "SANITY_FAILED", fix: "try another engine build" },
          finalCheck: check(
            true,
            "`sglang-old.service` active (MainPID 111); /health_generate and a sanity prompt answered on port 30000",
          ),
        }),
      );
      expect(line).toMatch(
        /healthy again\. 🔎 Checked at 12:03:04 UTC: `sglang-old\.service` active \(MainPID 111\); .* on port 30000\. \*Fix:\* try another engine build$/,
      );
    });

    it("on the page too, where nothing serves: what it found instead", () => {
      const line = finalLine(
        aRecord({
          outcome: "failed",
          step: "done",
          reason: "NaN in output",
          switch: switched,
          rollback: { ok: false, detail: "sglang-old.service did not come back" },
          finalCheck: check(false, "`sglang-old.service` is not active (failed)"),
        }),
      );
      expect(line).toMatch(/^<!channel> 🚨 \*gpu-1 serves nothing\*/);
      expect(line).toMatch(
        /by hand\. ⚠️ Checked at 12:03:04 UTC: `sglang-old\.service` is not active \(failed\)\.$/,
      );
    });

    it("never says 'serves nothing' when the check found a unit serving, nor that nothing changed", () => {
      const line = finalLine(
        aRecord({
          outcome: "failed",
          step: "done",
          reason: "the new unit stopped serving in the flip-back window",
          switch: { ...switched, beside: true },
          rollback: { ok: false, detail: "not flipped back: `sglang-old.service` is not active (failed)" },
          finalCheck: {
            ...check(true, "`sglang-new.service` active (MainPID 222)"),
            unit: "sglang-new.service",
          },
        }),
      );
      expect(line).not.toMatch(/serves nothing|Nothing on the host was changed/);
      expect(line).toMatch(/It could not be undone \(.*\); `sglang-new\.service` serves\. 🔎 Checked at/);
    });
  });
});
