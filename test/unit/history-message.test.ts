import type { KnownBlock } from "@slack/types";
import { describe, expect, it } from "vitest";
import { parseHistoryArgs } from "../../commands/history.ts";
import { type HistoryRow, historyRow, renderHistory } from "../../src/reporter/history-message.ts";
import { LIMITS } from "../../src/slack/blocks.ts";
import { newStages, type SwapOutcome, type SwapRecord } from "../../src/swap/swap-record.ts";

const ALICE = "U0ALICE001";
const BOB = "U0BOB00001";
const NOW = new Date("2026-03-10T12:00:00Z");

/** A finished swap record as the pipeline leaves it (only what the ledger reads). */
function record(
  id: string,
  at: string,
  outcome: SwapOutcome | undefined,
  extra: Partial<SwapRecord> & { repo?: string; sha?: string; single?: number; loaded?: number } = {},
): SwapRecord {
  const { repo = "sim-org/open-llama-1B", sha = "0123456789abcdef", single, loaded, ...rest } = extra;
  return {
    id,
    host: "gpu-1",
    requester: ALICE,
    channel: "C0LLMOPS01",
    createdAt: at,
    request: {
      model: { repo, revision: "main" },
      host: "gpu-1",
      tp: undefined,
      dryRun: false,
      engineRef: "main",
    },
    step: outcome === undefined ? "prepare" : "done",
    stages: newStages(),
    tasks: {},
    ...(outcome === undefined ? {} : { outcome }),
    plan: { model: { repo, sha } } as unknown as SwapRecord["plan"],
    ...(single === undefined
      ? {}
      : {
          benchmark: {
            single: { outputThroughput: single, maxConcurrency: 1, raw: {} },
            loaded: { outputThroughput: loaded, maxConcurrency: 16, raw: {} },
          },
        }),
    ...rest,
  };
}

/** Every mrkdwn/plain text in the blocks. */
function texts(blocks: readonly KnownBlock[]): string[] {
  const out: string[] = [];
  for (const block of blocks) {
    const b = block as unknown as { text?: { text: string }; elements?: { text?: string }[] };
    if (b.text !== undefined) out.push(b.text.text);
    for (const e of b.elements ?? []) if (e.text !== undefined) out.push(e.text);
  }
  return out;
}

describe("renderHistory", () => {
  it("says so when nothing was recorded yet", () => {
    const msg = renderHistory([], { host: "gpu-1", limit: 10, now: NOW });
    expect(msg.text).toContain("no swaps recorded yet");
    expect(texts(msg.blocks).join("\n")).toContain("No swaps recorded for *gpu-1* yet.");
    expect(msg.blocks.length).toBeLessThanOrEqual(2);
  });

  it("shows newest first: when, who asked and approved, model@sha, outcome, downtime", () => {
    const older = record("sw-1", "2026-03-01T09:00:00Z", "rejected", {
      decision: { approved: false, by: BOB, at: "2026-03-01T09:05:00Z", planHash: "h", via: "reaction" },
      reason: `rejected by <@${BOB}>; downloaded files are kept`,
    });
    const newer = record("sw-2", "2026-03-09T12:00:00Z", "succeeded", {
      repo: "nvidia/Qwen3.5-397B-A17B-NVFP4",
      sha: "fedcba9876543210",
      decision: { approved: true, by: BOB, at: "2026-03-09T12:01:00Z", planHash: "h", via: "button" },
      downtimeSeconds: 75,
      single: 41.25,
      loaded: 512,
    });
    const msg = renderHistory([historyRow(newer), historyRow(older)], { limit: 10, now: NOW });
    const all = texts(msg.blocks).join("\n");
    expect(texts(msg.blocks)[0]).toBe("Swap history: all hosts");
    expect(all.indexOf("nvidia/Qwen3.5-397B-A17B-NVFP4")).toBeLessThan(all.indexOf("sim-org/open-llama-1B"));
    expect(all).toContain("`fedcba9`");
    expect(all).toContain(`asked by <@${ALICE}>`);
    expect(all).toContain(`approved by <@${BOB}>`);
    expect(all).toContain(`rejected by <@${BOB}>`);
    expect(all).toContain("✅ succeeded");
    expect(all).toContain("🚫 rejected");
    expect(all).toContain("downtime 1 min 15 s");
    expect(all).toContain("2026-03-09 12:00 UTC");
    expect(all).toContain("1 d ago");
    expect(all).toContain("41.3 tok/s at 1 stream");
    expect(all).toContain("512 tok/s at 16 streams");
    // no swap succeeded on the host before it: nothing to compare with
    expect(all).toContain("no earlier numbers on this host");
    expect(msg.text).toMatch(/2026-03-09 12:00 UTC gpu-1 succeeded nvidia\/Qwen3\.5-397B-A17B-NVFP4@fedcba9/);
  });

  it("gives each benchmark's change against the previous succeeded swap on the host, in %", () => {
    const first = record("sw-1", "2026-03-01T09:00:00Z", "succeeded", {
      repo: "org/a",
      single: 40,
      loaded: 500,
    });
    const failed = record("sw-2", "2026-03-02T09:00:00Z", "rolled_back", {
      repo: "org/b",
      reason: "sanity: NaN in output",
    });
    const second = record("sw-3", "2026-03-03T09:00:00Z", "succeeded", {
      repo: "org/c",
      single: 50,
      loaded: 450,
    });
    const same = record("sw-4", "2026-03-04T09:00:00Z", "succeeded", {
      repo: "org/d",
      single: 50,
      loaded: 450,
    });
    const rows = [
      historyRow(same, second),
      historyRow(second, first),
      historyRow(failed, first),
      historyRow(first),
    ];
    const all = texts(renderHistory(rows, { host: "gpu-1", limit: 10, now: NOW }).blocks).join("\n");
    expect(all).toContain("50.0 tok/s at 1 stream (▲25.0%) · 450 tok/s at 16 streams (▼10.0%) — vs `org/a`");
    expect(all).toContain("(±0.0%)");
    expect(all).toContain("vs `org/c` @ `0123456`");
    expect(all).toContain("↩️ rolled back");
    expect(all).toContain("↳ sanity: NaN in output");
  });

  it("says when the benchmark did not run, and when the model before has no numbers", () => {
    const unmeasured = record("sw-1", "2026-03-01T09:00:00Z", "succeeded", { repo: "org/a" });
    const measured = record("sw-2", "2026-03-02T09:00:00Z", "succeeded", {
      repo: "org/b",
      single: 40,
      loaded: 400,
    });
    const all = texts(
      renderHistory([historyRow(measured, unmeasured), historyRow(unmeasured)], { limit: 10, now: NOW })
        .blocks,
    ).join("\n");
    expect(all).toContain("the benchmark did not run");
    expect(all).toContain("no numbers for the model before (`org/a`)");
    expect(all).not.toMatch(/[▲▼±]\d/);
  });

  it("names a rollout's host's swap with its rollout, its wave and where its files came from", () => {
    const copied = record("sw-2", "2026-03-10T11:00:00Z", "succeeded", {
      rollout: { id: "ro-mx2i7lz1-9b03ee", wave: 2 },
      peerCopy: { state: "copied", from: "gpu-3" },
    });
    const canary = record("sw-1", "2026-03-10T10:00:00Z", "succeeded", {
      rollout: { id: "ro-mx2i7lz1-9b03ee", wave: 0 },
      peerCopy: { state: "hub", why: "the rollout's first host" },
    });
    const text = texts(
      renderHistory([historyRow(copied), historyRow(canary)], { limit: 10, now: NOW }).blocks as KnownBlock[],
    ).join("\n");
    expect(text).toContain("↳ rollout `ro-mx2i7lz1-9b03ee`, wave 3; files copied from gpu-3");
    expect(text).toContain("↳ rollout `ro-mx2i7lz1-9b03ee`, the canary; files from the Hub");
  });

  it("shows a swap still running with its step", () => {
    const running = record("sw-1", "2026-03-10T11:59:00Z", undefined);
    const all = texts(renderHistory([historyRow(running)], { limit: 10, now: NOW }).blocks).join("\n");
    expect(all).toContain("🔄 in progress (prepare)");
    expect(all).toContain("1 min ago");
  });

  it("fits 50 entries with long model names and long reasons in Slack's limits, every entry shown", () => {
    const longName = `${"o".repeat(42)}/${"Qwen3.5-397B-A17B-NVFP4-".repeat(4).slice(0, 96)}`;
    const rows: HistoryRow[] = [];
    for (let i = 0; i < 50; i++) {
      const at = new Date(Date.parse("2026-01-01T00:00:00Z") + (50 - i) * 3_600_000).toISOString();
      const r = record(`sw-${i}`, at, i % 2 === 0 ? "succeeded" : "failed", {
        repo: `${longName}${i}`,
        decision: { approved: true, by: BOB, at, planHash: "h", via: "reaction" },
        downtimeSeconds: 600,
        ...(i % 2 === 0 ? { single: 40 + i, loaded: 500 + i } : { reason: `x<>&\`${"why ".repeat(200)}` }),
      });
      const before = record(`sw-b${i}`, at, "succeeded", { repo: `${longName}b`, single: 40, loaded: 500 });
      rows.push(historyRow(r, before));
    }
    const msg = renderHistory(rows, { limit: 50, now: NOW });
    expect(msg.blocks.length).toBeLessThanOrEqual(LIMITS.blocks);
    expect(msg.text.length).toBeLessThanOrEqual(LIMITS.fallbackText);
    for (const block of msg.blocks) {
      const text = (block as { text?: { text: string } }).text?.text;
      if (text !== undefined) expect(text.length).toBeLessThanOrEqual(LIMITS.sectionText);
    }
    const all = texts(msg.blocks).join("\n");
    // nothing was cut: every entry is there, in order
    let last = -1;
    for (let i = 0; i < 50; i++) {
      const at = all.indexOf(`${longName.slice(0, 90)}`, last + 1);
      expect(at, `entry ${i}`).toBeGreaterThan(last);
      last = at;
    }
    expect(all).toContain("50 swaps, newest first");
    // the hostile reason was escaped
    expect(all).not.toContain("x<>&");
    expect(all).toContain("x&lt;&gt;&amp;");
  });
});

describe("parseHistoryArgs", () => {
  it("takes an optional host and --limit N from 1 to 50", () => {
    expect(parseHistoryArgs([])).toEqual({ ok: true, limit: 10 });
    expect(parseHistoryArgs(["gpu-1"])).toEqual({ ok: true, host: "gpu-1", limit: 10 });
    expect(parseHistoryArgs(["--limit", "50", "gpu-1"])).toEqual({ ok: true, host: "gpu-1", limit: 50 });
    expect(parseHistoryArgs(["gpu-1", "--limit=1"])).toEqual({ ok: true, host: "gpu-1", limit: 1 });
  });

  it("reads an em or en dash from autocorrect as --", () => {
    expect(parseHistoryArgs(["gpu-1", "—limit", "5"])).toEqual({ ok: true, host: "gpu-1", limit: 5 });
    expect(parseHistoryArgs(["–limit=5"])).toEqual({ ok: true, limit: 5 });
    expect(parseHistoryArgs(["—force"])).toMatchObject({
      ok: false,
      reason: expect.stringContaining("--force"),
    });
  });

  it("refuses anything else with the reason", () => {
    for (const args of [
      ["--limit"],
      ["--limit", "0"],
      ["--limit", "51"],
      ["--limit", "-3"],
      ["--limit", "1e1"],
      ["--limit", "ten"],
      ["--limit", "5", "--limit", "6"],
      ["a", "b"],
      ["--host", "gpu-1"],
    ]) {
      const parsed = parseHistoryArgs(args);
      expect(parsed.ok, args.join(" ")).toBe(false);
    }
    expect(parseHistoryArgs(["--limit", "99"])).toMatchObject({ reason: expect.stringContaining("1 to 50") });
  });
});
