import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { BenchResult } from "../../src/engine/bench-serving.ts";
import { escapeMrkdwn } from "../../src/escape-mrkdwn.ts";
import type { GpuInfo } from "../../src/gpu/nvidia-smi.ts";
import { makePlan } from "../../src/plan/make-plan.ts";
import type { SwapPlan } from "../../src/plan/types.ts";
import { renderAlert, renderRecovery } from "../../src/reporter/alert-message.ts";
import { renderBenchmarkComparison } from "../../src/reporter/benchmark-table.ts";
import {
  type FleetRow,
  renderFleet,
  renderFleetPages,
  renderFleetSummary,
} from "../../src/reporter/fleet-message.ts";
import { type HistoryRow, renderHistory } from "../../src/reporter/history-message.ts";
import { renderPlanDetails } from "../../src/reporter/plan-details.ts";
import { renderPlan } from "../../src/reporter/plan-message.ts";
import { renderHostStatus } from "../../src/reporter/status-message.ts";
import { renderSwapCard } from "../../src/reporter/swap-card.ts";
import { codeBlock, LIMITS, message, type SlackMessage, section } from "../../src/slack/blocks.ts";
import type { HostStatus } from "../../src/status/probe-host.ts";
import { newStages, STAGES, type SwapOutcome, type SwapRecord } from "../../src/swap/swap-record.ts";
import { MESSAGE_TEXT_LIMIT, validateMessage } from "../../testbench/slack/index.ts";
import { planInput } from "./plan-fixtures.ts";

/**
 * Every message the bot renders, in its worst case, must be one Slack accepts (the emulator's validator
 * answers what Slack answers: `invalid_blocks`, `msg_too_long`, `no_text`) and must still say what
 * matters: the model, where it was cut, how much was left out.
 */

const ALICE = "U0ALICE001";
const BOB = "U0BOB00001";
const NOW = new Date("2026-11-29T22:30:00Z");

/** A Hub name part at its longest (the Hub allows 96 characters: [A-Za-z0-9_][A-Za-z0-9._-]{0,95}). */
const part = (seed: string) => `${seed}${"-x.y_z".repeat(20)}`.slice(0, 96);
const LONG_REPO = `${part("org")}/${part("Qwen3.5-397B-A17B-NVFP4")}`;

/** A Hub repo id: org/name, each part up to 96 characters. */
const repoArb = fc
  .tuple(
    fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,95}$/),
    fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,95}$/),
  )
  .map(([org, name]) => `${org}/${name}`);

/** Text as hostile as a log or an error can be: mrkdwn control characters, fences, mentions, emoji. */
const nastyLine = (i: number, width = 700) =>
  `${i} <!channel> & \`\`\` *b* _i_ ~s~ <@U0BOB00001> 🚀 ${"CUDA error: an illegal memory access ".repeat(40)}`.slice(
    0,
    width,
  );

/** Every text in a message (blocks and fallback), to look for what it must keep. */
function allText(msg: SlackMessage): string {
  return `${msg.text}\n${JSON.stringify(msg.blocks)}`;
}

/** Slack takes it as it is, with a fallback text within our own (stricter) limit. */
function expectAccepted(msg: SlackMessage, what: string): void {
  const verdict = validateMessage(msg);
  expect(verdict.errors, what).toEqual([]);
  expect(verdict.error, what).toBeUndefined();
  expect(verdict.warnings, what).toEqual([]);
  expect(msg.text.length, what).toBeGreaterThan(0);
  expect(msg.text.length, what).toBeLessThanOrEqual(Math.min(LIMITS.fallbackText, MESSAGE_TEXT_LIMIT));
  for (const block of msg.blocks) {
    const text = (block as { text?: { type?: string; text?: string } }).text;
    // a code block cut in half would show the rest of the message as code
    if (block.type === "section" && text?.text !== undefined)
      expect((text.text.match(/```/g) ?? []).length % 2, text.text).toBe(0);
  }
}

const gpu = (index: number, name = "NVIDIA RTX PRO 6000 Blackwell Server Edition"): GpuInfo => ({
  index,
  name,
  uuid: `GPU-${index}`,
  memoryTotalMiB: 97887,
  memoryUsedMiB: 95000,
  memoryFreeMiB: 2887,
  utilizationPct: 100,
  temperatureC: 81,
  powerDrawW: 598.4,
  computeCapability: { major: 12, minor: 0 },
  driverVersion: "580.159.04",
});

describe("Block Kit limits: the plan", () => {
  const base = makePlan(planInput("qwen3.5-moe-nvfp4", "8x-rtx-pro-6000-blackwell"));

  // built once: 5000 lines of 500 characters take a while, and no run changes them
  const worstDiff = Array.from({ length: 5000 }, (_, i) => `+${nastyLine(i, 500)}`).join("\n");

  function worstPlan(repo: string): SwapPlan {
    return {
      ...base,
      model: { ...base.model, repo },
      host: { ...base.host, host: `gpu-${"h".repeat(120)}` },
      flags: Array.from({ length: 120 }, (_, i) => ({
        setting: `setting-${i}`,
        flag: `--setting-${i}`,
        value: `/models/${repo}/${"v".repeat(i * 3)}`,
        reason: `because ${nastyLine(i, 400)}`,
      })),
      checks: [
        ...base.checks,
        ...Array.from({ length: 60 }, (_, i) => ({
          id: `check-${i}`,
          ok: i % 3 !== 0,
          detail: nastyLine(i),
          fix: nastyLine(i + 1),
        })),
      ],
      notes: Array.from({ length: 30 }, (_, i) => nastyLine(i)),
      unitDiff: worstDiff,
    };
  }

  it("fits every status with 120 flags, 60 checks, a 5000-line unit diff and the longest Hub name", () => {
    const plan = worstPlan(LONG_REPO);
    for (const status of ["awaiting-approval", "approved", "rejected", "refused", "dry-run"] as const) {
      const msg = renderPlan(plan, { swapId: "sw-20261129-0001", requester: ALICE, status, decidedBy: BOB });
      expectAccepted(msg, status);
      // the model is named in full (in the fields and the fallback), the cuts are said
      expect(msg.text).toContain(LONG_REPO);
      expect(JSON.stringify(msg.blocks)).toContain(LONG_REPO);
      expect(allText(msg)).toMatch(/and \d+ more/);
    }
    {
      const msg = renderPlanDetails(plan, "sw-20261129-0001");
      expectAccepted(msg, "details");
      expect(allText(msg)).toMatch(/… \d+ more lines/);
      expect(allText(msg)).toMatch(/… and \d+ more/);
    }
  });

  it("fits for any Hub name (property)", () => {
    fc.assert(
      fc.property(repoArb, fc.integer({ min: 0, max: 200 }), (repo, flags) => {
        const worst = worstPlan(repo);
        const plan: SwapPlan = { ...worst, flags: worst.flags.slice(0, flags) };
        const msg = renderPlan(plan, { swapId: "sw-1", requester: ALICE, status: "awaiting-approval" });
        expectAccepted(msg, repo);
        expect(msg.text).toContain(repo);
      }),
      { numRuns: 40 },
    );
  });
});

function swapRecord(repo: string, outcome?: SwapOutcome): SwapRecord {
  const stages = newStages();
  STAGES.forEach((name, i) => {
    stages[name] = {
      state: outcome === undefined ? (i < 5 ? "done" : i === 5 ? "running" : "pending") : "failed",
      detail: nastyLine(i, 2000),
    };
  });
  return {
    id: "sw-20261129-0001",
    host: `gpu-${"h".repeat(100)}`,
    requester: ALICE,
    channel: "C0LLMOPS01",
    createdAt: NOW.toISOString(),
    request: {
      model: { repo, revision: "main" },
      host: "gpu-1",
      tp: undefined,
      dryRun: false,
      engineRef: "main",
    },
    step: outcome === undefined ? "switch" : "done",
    stages,
    tasks: {},
    ...(outcome === undefined ? {} : { outcome }),
    reason: Array.from({ length: 50 }, (_, i) => nastyLine(i)).join("\n"),
    decision: { approved: true, by: BOB, at: NOW.toISOString(), planHash: "h", via: "reaction" },
    downtimeSeconds: 431,
  };
}

describe("Block Kit limits: the live card and the final report", () => {
  it("keeps the model and the host in the card's header whatever their length, running or finished", () => {
    for (const outcome of [undefined, "succeeded", "rolled_back", "failed"] as const) {
      const record = swapRecord(LONG_REPO, outcome);
      const card = renderSwapCard(record);
      expectAccepted(card, String(outcome));
      expect(card.text).toContain(LONG_REPO);
      const header = (card.blocks[0] as { text: { text: string } }).text.text;
      // the host is cut at 60 characters, the model makes room for it
      expect(header, "the header names the host even when the model name is long").toContain(
        record.host.slice(0, 59),
      );
      expect(header).toContain("…");
      expect(allText(card)).toContain(LONG_REPO);
    }
  });

  it("fits the card for any Hub name (property)", () => {
    fc.assert(
      fc.property(
        repoArb,
        fc.constantFrom<SwapOutcome | undefined>(undefined, "succeeded", "failed"),
        (repo, outcome) => {
          const card = renderSwapCard(swapRecord(repo, outcome));
          expectAccepted(card, repo);
          expect(card.text).toContain(repo);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("fits a thread report with a 5000-line log of long lines, and marks what it left out", () => {
    const log = Array.from({ length: 5000 }, (_, i) => nastyLine(i, 2000));
    const text = `❌ *Swap to ${LONG_REPO} on gpu-1 failed*: ${escapeMrkdwn(nastyLine(0, 5000))}`;
    // what a stage's ctx.say(text, { log }) posts
    const msg = message(text, [section(text), section(codeBlock(log))]);
    expectAccepted(msg, "say with log");
    expect(msg.text).toContain(LONG_REPO);
    const code = (msg.blocks[1] as { text: { text: string } }).text.text;
    expect(code).toContain("4999 "); // the last line is kept
    expect(code).toMatch(/… \d+ earlier lines/);
  });

  it("fits the benchmark table against a model with the longest name and odd numbers", () => {
    const result = (concurrency: number, tps: number): BenchResult => ({
      maxConcurrency: concurrency,
      outputThroughput: tps,
      medianTtftMs: Number.POSITIVE_INFINITY,
      p99TtftMs: Number.NaN,
      meanTpotMs: 1e12,
      successfulRequests: 3,
      requested: 64,
      raw: {},
    });
    const table = renderBenchmarkComparison(
      { single: result(1, 41.2), loaded: result(1_000_000, 9e15) },
      { model: LONG_REPO, engine: "sglang", single: result(1, 1e-9), loaded: result(16, 0) },
    );
    expectAccepted(table, "benchmark");
    expect(allText(table)).toContain(LONG_REPO);
  });
});

function hostStatus(
  host: string,
  verdict: HostStatus["verdict"],
  extra: Partial<HostStatus> = {},
): HostStatus {
  return {
    host,
    unitName: `sglang-${host}.service`,
    port: 30000,
    healthLabel: "/health_generate",
    checkedAt: NOW,
    durationMs: 1234,
    verdict,
    connection: undefined,
    unit: {
      name: `sglang-${host}.service`,
      loadState: "loaded",
      activeState: "failed",
      subState: "failed",
      result: "exit-code",
      mainPid: 0,
      activeSince: undefined,
      unitFileState: "enabled",
      restarts: 12,
      fragmentPath: "/etc/systemd/system/x.service",
    },
    gpus: Array.from({ length: 8 }, (_, i) => gpu(i)),
    gpuProblem: undefined,
    server: {
      healthStatus: null,
      healthError: nastyLine(1, 800),
      models: [`/models/${LONG_REPO.replace("/", "--")}--0123456789ab`],
      modelRoots: [],
    },
    journalTail: [],
    ...extra,
  };
}

describe("Block Kit limits: status and the fleet", () => {
  it("fits a host's status with a 5000-line journal of long lines and 16 GPUs", () => {
    const journal = Array.from({ length: 5000 }, (_, i) => nastyLine(i, 3000));
    const status = hostStatus("gpu-1", "failed", {
      journalTail: journal,
      gpus: Array.from({ length: 16 }, (_, i) => gpu(i, `NVIDIA ${"Very Long GPU Name ".repeat(10)}`)),
      gpuProblem: { code: "HOST_COMMAND_FAILED", message: nastyLine(2, 3000), fix: nastyLine(3, 3000) },
    });
    const msg = renderHostStatus(status, NOW);
    expectAccepted(msg, "status");
    // the model directory is named as the repo it holds (org/name), cut to fit
    expect(allText(msg)).toContain(LONG_REPO.slice(0, 80));
    expect(allText(msg)).toContain("4999 "); // the newest journal line is shown
    expect(allText(msg)).toMatch(/… \d+ earlier lines/);
  });

  it('says a failed unit\'s state once (not "failed (failed)")', () => {
    const text = allText(renderHostStatus(hostStatus("gpu-1", "failed"), NOW));
    expect(text).toContain("failed, 12 restart(s)");
    expect(text).not.toContain("failed (failed)");
  });

  it("fits an unreachable host whose error is huge", () => {
    const msg = renderHostStatus(
      hostStatus("gpu-1", "unreachable", {
        connection: { code: "HOST_UNREACHABLE", message: nastyLine(1, 6000), fix: nastyLine(2, 6000) },
      }),
      NOW,
    );
    expectAccepted(msg, "unreachable");
  });

  it("fits a 300-host fleet and says how many hosts it could not show", () => {
    const rows: FleetRow[] = Array.from({ length: 300 }, (_, i) => ({
      status: hostStatus(
        `gpu-node-${String(i).padStart(3, "0")}-${"r".repeat(30)}`,
        i % 7 === 0 ? "failed" : "healthy",
      ),
      ...(i % 5 === 0
        ? { active: { id: `sw-${i}`, step: "download", repo: LONG_REPO } }
        : { last: { outcome: "rolled_back", repo: LONG_REPO } }),
    }));
    const msg = renderFleet(rows, NOW);
    expectAccepted(msg, "fleet");
    const body = allText(msg);
    expect(msg.text).toContain("300 hosts");
    const shown = rows.filter((r) => body.includes(r.status.host.slice(0, 18))).length;
    expect(shown).toBeGreaterThan(100);
    if (shown < rows.length) expect(body).toContain(`${rows.length - shown} more hosts not shown`);
  });

  it("fits a fleet of 2000 hosts, most of them left out and counted", () => {
    const rows: FleetRow[] = Array.from({ length: 2000 }, (_, i) => ({
      status: hostStatus(`gpu-${i}`, "healthy"),
    }));
    const msg = renderFleet(rows, NOW);
    expectAccepted(msg, "big fleet");
    expect(allText(msg)).toMatch(/… (\d+) more hosts not shown/);
    const left = Number(/… (\d+) more hosts not shown/.exec(allText(msg))?.[1]);
    const shown = new Set([...JSON.stringify(msg.blocks).matchAll(/\bgpu-(\d+)\b/g)].map((m) => m[1])).size;
    expect(shown + left).toBe(2000);
  });
});

describe("Block Kit limits: a fleet of a thousand hosts (issue #16)", () => {
  const fleet: FleetRow[] = Array.from({ length: 1000 }, (_, i) => ({
    status: hostStatus(
      `gpu-node-${String(i).padStart(4, "0")}-${"r".repeat(24)}`,
      i % 97 === 0 ? "failed" : i % 131 === 0 ? "unreachable" : i === 7 ? "starting" : "healthy",
    ),
    ...(i % 50 === 3 ? { active: { id: `sw-${i}`, step: "download", repo: LONG_REPO } } : {}),
  }));
  const wanting = fleet.filter((r) => r.status.verdict !== "healthy" || r.active !== undefined);

  it("the summary: counts by state, then every host that wants a look, worst first, in one message", () => {
    const msg = renderFleetSummary(fleet, NOW);
    expectAccepted(msg, "fleet summary");
    const body = allText(msg);
    expect(msg.text).toContain("Fleet: 1000 hosts, ");
    const failed = fleet.filter((r) => r.status.verdict === "failed").length;
    const unreachable = fleet.filter((r) => r.status.verdict === "unreachable").length;
    expect(body).toContain(`🔴 failed *${failed}*`);
    expect(body).toContain(`⚫ unreachable *${unreachable}*`);
    expect(body).toContain("🟡 starting *1*");
    expect(body).toContain(`🔄 swapping *${fleet.filter((r) => r.active !== undefined).length}*`);
    for (const row of wanting) expect(body).toContain(row.status.host.slice(0, 18));
    // a failed host comes before any that is only swapping
    expect(body.indexOf("gpu-node-0097")).toBeLessThan(body.indexOf("gpu-node-0003"));
    // healthy hosts are counted, not listed
    expect(body).not.toContain("gpu-node-0001");
    expect(body).toContain("/llm status --all");
  });

  it("the whole table with --all: every host once, over messages that each fit", () => {
    const pages = renderFleetPages(fleet, NOW);
    for (const [i, page] of pages.entries()) expectAccepted(page, `fleet page ${i + 1}`);
    const bodies = pages.map(allText).join("\n");
    for (const row of fleet) expect(bodies).toContain(row.status.host.slice(0, 18));
    if (pages.length > 1) expect(allText(pages[0]!)).toContain(`(part 1 of ${pages.length})`);
  });

  it("says which hosts were counted from the health monitor's last check, and how old the oldest is", () => {
    const seen = fleet.map((r, i) =>
      r.status.verdict === "healthy" && r.active === undefined
        ? {
            ...r,
            status: { ...r.status, checkedAt: new Date(NOW.getTime() - (i % 40) * 1000) },
            fromMonitor: true as const,
          }
        : r,
    );
    const counted = seen.filter((r) => r.fromMonitor === true).length;
    const msg = renderFleetSummary(seen, NOW);
    expectAccepted(msg, "fleet summary from the monitor");
    expect(allText(msg)).toContain(
      `(${counted} healthy hosts as the health monitor saw them in the last 39 s; ${1000 - counted} probed now)`,
    );
    // every host probed: nothing to say
    expect(allText(renderFleetSummary(fleet, NOW))).not.toContain("health monitor");
  });

  it("a summary of an all-healthy fleet says so", () => {
    const healthy = fleet.map((r) => ({ status: { ...r.status, verdict: "healthy" as const } }));
    expect(allText(renderFleetSummary(healthy, NOW))).toContain(
      "Every host is healthy and none is swapping.",
    );
  });
});

describe("Block Kit limits: history", () => {
  it("fits 50 entries with the longest names and long reasons, saying how many it shows", () => {
    const rows: HistoryRow[] = Array.from({ length: 50 }, (_, i) => ({
      id: `sw-${i}`,
      host: `gpu-${"h".repeat(60)}-${i}`,
      at: new Date(NOW.getTime() - i * 3_600_000).toISOString(),
      requester: ALICE,
      approver: BOB,
      model: LONG_REPO,
      sha: "0123456789abcdef",
      outcome: i % 2 === 0 ? "rolled_back" : "succeeded",
      downtimeSeconds: 300 + i,
      reason: nastyLine(i, 3000),
      bench: { single: 41.2 + i, loaded: 512, loadedConcurrency: 16 },
      before: { model: LONG_REPO, sha: "fedcba9876543210", bench: { single: 40, loaded: 500 } },
    }));
    const msg = renderHistory(rows, { limit: 50, now: NOW });
    expectAccepted(msg, "history");
    expect(allText(msg)).toContain(LONG_REPO.slice(0, 90));
    expect(allText(msg)).toMatch(/(\d+ of )?50 swaps, newest first/);
    expect(allText(msg)).toContain("…"); // the long reasons are cut, visibly
  });
});

describe("Block Kit limits: alerts", () => {
  it("fits an alert with a 5000-line journal, 16 GPUs and a huge failing check", () => {
    const msg = renderAlert({
      host: "gpu-1",
      model: LONG_REPO,
      unit: `sglang-${"u".repeat(200)}.service`,
      since: NOW,
      failures: 12,
      failingCheck: nastyLine(1, 6000),
      firstFailure: nastyLine(2, 6000),
      journalTail: Array.from({ length: 5000 }, (_, i) => nastyLine(i, 3000)),
      journalProblem: undefined,
      gpus: Array.from({ length: 16 }, (_, i) => gpu(i)),
      gpuProblem: undefined,
      intervalSeconds: 30,
      recoveryThreshold: 2,
    });
    expectAccepted(msg, "alert");
    expect(msg.text).toContain(LONG_REPO);
    expect(allText(msg)).toContain("4999 ");
    expect(allText(msg)).toMatch(/… \d+ earlier lines/);
  });

  it("fits a recovery for the longest names", () => {
    const msg = renderRecovery({
      host: `gpu-${"h".repeat(200)}`,
      model: LONG_REPO,
      unit: `sglang-${"u".repeat(200)}.service`,
      since: new Date(NOW.getTime() - 3_600_000),
      recoveredAt: NOW,
    });
    expectAccepted(msg, "recovery");
    expect(allText(msg)).toContain(LONG_REPO);
  });
});

describe("the emulator's validator answers like Slack", () => {
  it("refuses what Slack refuses", () => {
    const header = { type: "header", text: { type: "plain_text", text: "h".repeat(151) } };
    expect(validateMessage({ text: "x", blocks: [header] }).error).toBe("invalid_blocks");
    const context = { type: "context", elements: [{ type: "mrkdwn", text: "c".repeat(3001) }] };
    expect(validateMessage({ text: "x", blocks: [context] }).errors).toEqual([
      "must be less than 3001 characters [json-pointer:/blocks/0/elements/0/text]",
    ]);
    const emptyContext = { type: "context", elements: [{ type: "mrkdwn", text: "" }] };
    expect(validateMessage({ text: "x", blocks: [emptyContext] }).error).toBe("invalid_blocks");
    const eleven = {
      type: "context",
      elements: Array.from({ length: 11 }, () => ({ type: "mrkdwn", text: "c" })),
    };
    expect(validateMessage({ text: "x", blocks: [eleven] }).error).toBe("invalid_blocks");
    const fiftyOne = Array.from({ length: 51 }, () => ({ type: "divider" }));
    expect(validateMessage({ text: "x", blocks: fiftyOne }).error).toBe("invalid_blocks");
    const longSection = { type: "section", text: { type: "mrkdwn", text: "s".repeat(3001) } };
    expect(validateMessage({ text: "x", blocks: [longSection] }).error).toBe("invalid_blocks");
    expect(validateMessage({ text: "t".repeat(40_001) }).error).toBe("msg_too_long");
    expect(validateMessage({ text: "" }).error).toBe("no_text");
    expect(validateMessage({ text: "", blocks: [{ type: "divider" }] }).warnings).toEqual([
      "missing_text_fallback: blocks without a top-level text fallback",
    ]);
    expect(
      validateMessage({
        text: "ok",
        blocks: [{ type: "section", text: { type: "mrkdwn", text: "s".repeat(3000) } }],
      }),
    ).toEqual({
      errors: [],
      warnings: [],
    });
  });
});
