import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readConfig } from "../../src/config/load-config.ts";
import { expandHostSet } from "../../src/grammar/host-set.ts";
import { parseSwapRequest } from "../../src/grammar/swap-request.ts";
import {
  renderRolloutCard,
  renderRolloutPlan,
  rolloutEventLine,
  weightsLine,
} from "../../src/reporter/rollout-messages.ts";
import { rolloutPlanHash } from "../../src/rollout/rollout-plan-hash.ts";
import type { RolloutRecord } from "../../src/rollout/rollout-record.ts";
import { judgeWave } from "../../src/rollout/wave-gate.ts";
import { batches, planWaves } from "../../src/rollout/waves.ts";
import type { SwapRecord } from "../../src/swap/swap-record.ts";
import { urgentFor } from "../../src/swap/urgency.ts";
import { tempDir } from "../support/tmp.ts";

/** Rollouts' pure parts: host sets, waves, the gate, the config's groups, the request, what Slack shows. */

describe("host sets (--hosts, a group's hosts)", () => {
  it("expands ranges, keeps zero padding, and takes lists", () => {
    expect(expandHostSet("gpu-[1-4]")).toEqual({ ok: true, hosts: ["gpu-1", "gpu-2", "gpu-3", "gpu-4"] });
    expect(expandHostSet("h200-[08-10]")).toEqual({ ok: true, hosts: ["h200-08", "h200-09", "h200-10"] });
    expect(expandHostSet("gpu-1,gpu-[3-4],box")).toEqual({
      ok: true,
      hosts: ["gpu-1", "gpu-3", "gpu-4", "box"],
    });
  });

  it("refuses what is not a host name, backwards or huge ranges, and a host named twice, saying why", () => {
    expect(expandHostSet("gpu-[4-1]")).toEqual({ ok: false, reason: "the range [4-1] runs backwards" });
    expect(expandHostSet("gpu-[1-9999]")).toMatchObject({
      ok: false,
      reason: expect.stringContaining("more than 256"),
    });
    expect(expandHostSet("gpu-1,gpu-[1-2]")).toEqual({ ok: false, reason: "gpu-1 is named twice" });
    expect(expandHostSet("gpu-1;reboot")).toMatchObject({
      ok: false,
      reason: expect.stringContaining("is not a host name"),
    });
    expect(expandHostSet("$(id)-[1-2]")).toMatchObject({ ok: false });
    expect(expandHostSet("gpu-1,,gpu-2")).toMatchObject({
      ok: false,
      reason: expect.stringContaining("empty name"),
    });
  });
});

describe("waves", () => {
  const hosts = Array.from({ length: 20 }, (_, i) => `gpu-${i + 1}`);
  it("go canary first, then each share of the group, then the rest", () => {
    const waves = planWaves(hosts, { canary: 1, waves: [25, 100] });
    expect(waves.map((w) => w.length)).toEqual([1, 4, 15]);
    expect(waves.flat()).toEqual(hosts);
    expect(planWaves(hosts.slice(0, 4), { canary: 1, waves: [50, 100] })).toEqual([
      ["gpu-1"],
      ["gpu-2"],
      ["gpu-3", "gpu-4"],
    ]);
    // a share already reached by the canary still moves at least one host
    expect(planWaves(hosts.slice(0, 3), { canary: 2, waves: [10, 100] })).toEqual([
      ["gpu-1", "gpu-2"],
      ["gpu-3"],
    ]);
    expect(planWaves(["gpu-1"], { canary: 1, waves: [25, 100] })).toEqual([["gpu-1"]]);
  });

  it("switch in batches of at most maxUnavailable", () => {
    expect(batches(["a", "b", "c", "d", "e"], 2)).toEqual([["a", "b"], ["c", "d"], ["e"]]);
  });
});

describe("the gate between waves", () => {
  const ok = (tokS: number): WaveRecord => ({ outcome: "succeeded", benchmark: bench(tokS) });
  type WaveRecord = Pick<SwapRecord, "outcome" | "reason" | "benchmark">;
  const bench = (outputThroughput: number) =>
    ({ single: { outputThroughput }, loaded: { outputThroughput } }) as SwapRecord["benchmark"];

  it("passes a wave whose hosts all succeeded within the margin of the canary", () => {
    expect(judgeWave([{ host: "gpu-1", record: ok(100) }], "canary", 10)).toEqual({
      passed: true,
      tokS: { "gpu-1": 100 },
    });
    expect(
      judgeWave(
        [
          { host: "a", record: ok(91) },
          { host: "b", record: ok(120) },
        ],
        100,
        10,
      ).passed,
    ).toBe(true);
  });

  it("stops on a host that failed or was rolled back, naming it and why", () => {
    const verdict = judgeWave(
      [
        { host: "a", record: ok(100) },
        { host: "b", record: { outcome: "rolled_back", reason: "NaN in output" } },
      ],
      100,
      10,
    );
    expect(verdict).toMatchObject({ passed: false, why: "b was rolled back (NaN in output)" });
  });

  it("stops on a host slower than the margin allows, or with no figure", () => {
    const slow = judgeWave([{ host: "a", record: ok(89.9) }], 100, 10);
    expect(slow).toMatchObject({
      passed: false,
      why: "a 89.9 tok/s: more than 10 % below the canary's 100.0 tok/s (at least 90.0 passes)",
    });
    const none = judgeWave([{ host: "a", record: { outcome: "succeeded" } }], 100, 10);
    expect(none).toMatchObject({ passed: false, why: expect.stringContaining("a has no benchmark figure") });
    // a margin of 100 turns the throughput part off
    expect(judgeWave([{ host: "a", record: { outcome: "succeeded" } }], 100, 100).passed).toBe(true);
  });

  it("never waves later hosts through on a canary without a figure: the canary wave needs one, later waves stop", () => {
    // a swap's benchmark failing is not fatal to the swap (its record has no figure); with the throughput
    // part on, the gate then has nothing to compare the next waves with
    const canary = judgeWave([{ host: "gpu-1", record: { outcome: "succeeded" } }], "canary", 10);
    expect(canary).toMatchObject({
      passed: false,
      why: "gpu-1 has no benchmark figure: the canary's output tok/s is what later waves are held to",
    });
    expect(judgeWave([{ host: "gpu-1", record: ok(80) }], "canary", 10)).toEqual({
      passed: true,
      tokS: { "gpu-1": 80 },
    });
    const later = judgeWave([{ host: "gpu-2", record: ok(100) }], undefined, 10);
    expect(later).toMatchObject({
      passed: false,
      why: "the canary has no benchmark figure to hold gpu-2 to (throughputMargin 10 %)",
    });
    // with the throughput part off, neither needs a figure
    expect(judgeWave([{ host: "gpu-1", record: { outcome: "succeeded" } }], "canary", 100).passed).toBe(true);
    expect(judgeWave([{ host: "gpu-2", record: ok(100) }], undefined, 100).passed).toBe(true);
  });
});

describe("the request", () => {
  it("takes --group and --hosts, one of them, and never with --host or --dry-run", () => {
    const group = parseSwapRequest(["org/model", "--group", "prod-a"]);
    expect(group).toMatchObject({ ok: true, request: { group: "prod-a", host: undefined } });
    const set = parseSwapRequest(["org/model", "--hosts=gpu-[1-3]"]);
    expect(set).toMatchObject({ ok: true, request: { hosts: ["gpu-1", "gpu-2", "gpu-3"] } });
    expect(parseSwapRequest(["org/model", "--group", "a", "--hosts", "gpu-1"])).toEqual({
      ok: false,
      reason: "give one of --host, --group and --hosts",
    });
    expect(parseSwapRequest(["org/model", "--group", "a", "--dry-run"])).toMatchObject({
      ok: false,
      reason: expect.stringContaining("--dry-run plans one host"),
    });
    expect(parseSwapRequest(["org/model", "--group", "Prod;rm"])).toMatchObject({
      ok: false,
      reason: expect.stringContaining("--group needs a group name"),
    });
    expect(parseSwapRequest(["org/model", "--hosts", "gpu-[2-1]"])).toMatchObject({
      ok: false,
      reason: expect.stringContaining("runs backwards"),
    });
  });
});

describe("groups in the config", () => {
  let dir: { path: string; remove: () => Promise<void> };
  beforeAll(async () => {
    dir = await tempDir();
  });
  afterAll(() => dir.remove());
  const config = (groups: string) => `
slack:
  channel: C0SWAPS01
requesters:
  users: [U0ALICE01]
approvers:
  users: [U0BOB0001]
hosts:
${["gpu-1", "gpu-2", "gpu-3"].map((name) => `  - name: ${name}\n    local: true\n    modelsDir: /srv/models\n    engineSourceDir: /opt/sglang\n    venv: /opt/sglang/.venv\n    currentUnit: sglang-qwen.service\n`).join("")}${groups}`;
  const read = async (groups: string) => {
    const path = join(dir.path, "modelswap.yaml");
    await writeFile(path, config(groups));
    return await readConfig({
      SLACK_BOT_TOKEN: "xoxb-1-abc",
      SLACK_SIGNING_SECRET: "0123456789abcdef0123",
      MODELSWAP_CONFIG: path,
    });
  };

  it("expands a group's hosts and fills in its policy", async () => {
    const { config: loaded, problems } = await read("groups:\n  prod:\n    hosts: gpu-[1-3]\n");
    expect(problems).toEqual([]);
    expect(loaded?.file.groups.prod).toEqual({
      hosts: ["gpu-1", "gpu-2", "gpu-3"],
      canary: 1,
      waves: [25, 100],
      maxUnavailable: 4,
      throughputMargin: 10,
      copyFanout: 2,
      copyGbps: 10,
    });
  });

  it("refuses a host that is not configured, and waves that do not rise to 100, with the fix", async () => {
    const unknown = await read("groups:\n  prod:\n    hosts: [gpu-1, gpu-9]\n");
    expect(unknown.problems.map((p) => [p.path, p.what])).toEqual([
      ["groups.prod.hosts", "group prod names host gpu-9, which is not under hosts:"],
    ]);
    expect(unknown.problems[0]?.fix).toContain("add gpu-9 under hosts:");
    const waves = await read("groups:\n  prod:\n    hosts: gpu-[1-3]\n    waves: [50, 40]\n");
    expect(waves.problems.map((p) => p.what)).toEqual(["a group's waves must rise and end at 100"]);
    const set = await read("groups:\n  prod:\n    hosts: gpu-[3-1]\n");
    expect(set.problems[0]?.what).toContain("the range [3-1] runs backwards");
  });
});

describe("what the channel sees of a rollout", () => {
  const record: RolloutRecord = {
    id: "ro-mx2i7lz1-9b03ee",
    requester: "U0ALICE01",
    channel: "C0SWAPS01",
    createdAt: "2026-12-07T10:00:00.000Z",
    request: {
      model: { repo: "org/model", revision: "main" },
      host: undefined,
      tp: undefined,
      dryRun: false,
    },
    group: "prod",
    policy: {
      canary: 1,
      waves: [50, 100],
      maxUnavailable: 2,
      throughputMargin: 10,
      copyFanout: 2,
      copyGbps: 10,
    },
    hosts: [
      { host: "gpu-1", swapId: "sw-mx2i7lz1-000001", wave: 0, planHash: "a" },
      { host: "gpu-2", swapId: "sw-mx2i7lz1-000002", wave: 1, planHash: "b" },
      { host: "gpu-3", swapId: "sw-mx2i7lz1-000003", wave: 2, planHash: "c" },
    ],
    step: "approval",
    wave: 0,
    waves: [],
  };

  it("a plan hash that changes with any host's plan or the policy", () => {
    const hash = rolloutPlanHash(record);
    expect(
      rolloutPlanHash({
        ...record,
        hosts: record.hosts.map((h, i) => (i === 2 ? { ...h, planHash: "d" } : h)),
      }),
    ).not.toBe(hash);
    expect(rolloutPlanHash({ ...record, policy: { ...record.policy, maxUnavailable: 3 } })).not.toBe(hash);
    expect(rolloutPlanHash(structuredClone(record))).toBe(hash);
  });

  it("a card that links each host's thread once Slack gave its permalink, and no more than a context holds", () => {
    const none = JSON.stringify(renderRolloutCard(record, new Map()));
    expect(none).not.toContain("Threads:");
    const some = JSON.stringify(
      renderRolloutCard(record, new Map(), { "gpu-2": "https://t.slack.com/archives/C1/p1" }),
    );
    expect(some).toContain("Threads: <https://t.slack.com/archives/C1/p1|gpu-2>");
    const many = {
      ...record,
      hosts: Array.from({ length: 200 }, (_, i) => ({ ...record.hosts[0]!, host: `gpu-${i + 1}` })),
    };
    const links = Object.fromEntries(
      many.hosts.map((h, i) => [h.host, `https://team.slack.com/archives/C0SWAPS01/p17966748519860${i}`]),
    );
    const blocks = renderRolloutCard(many, new Map(), links).blocks;
    const threads = JSON.stringify(blocks.find((b) => JSON.stringify(b).includes("Threads:")));
    expect(threads).toMatch(/and \d+ more \(their swap ids above\)/);
    const text = (
      blocks.find((b) => JSON.stringify(b).includes("Threads:")) as { elements: { text: string }[] }
    ).elements[0]!.text;
    expect(text.length).toBeLessThanOrEqual(3000);
  });

  it("a card that says which host copies its files from a peer and which waits for one", () => {
    const stages = (download: object) => ({ download, build: { state: "done" } });
    const children = new Map([
      ["sw-mx2i7lz1-000001", { step: "prepare", stages: stages({ state: "done" }) }],
      [
        "sw-mx2i7lz1-000002",
        {
          step: "prepare",
          stages: stages({ state: "running" }),
          peerCopy: { state: "copying", from: "gpu-1" },
        },
      ],
      [
        "sw-mx2i7lz1-000003",
        {
          step: "prepare",
          stages: stages({ state: "pending", detail: "gpu-1 fetches the files from the Hub" }),
        },
      ],
    ]) as unknown as Map<string, SwapRecord>;
    const card = JSON.stringify(renderRolloutCard(record, children));
    expect(card).toMatch(/gpu-1 +canary +ready, waits for its wave/);
    expect(card).toMatch(/gpu-2 +2 +copying/);
    expect(card).toMatch(/gpu-3 +3 +waits for a peer's files/);
  });

  it("a card with a row per host, and a plan with the waves, the gate and the buttons", () => {
    const card = JSON.stringify(renderRolloutCard(record, new Map()));
    expect(card).toContain("Rollout: org/model@main → 3 hosts (prod)");
    expect(card).toMatch(/gpu-1 +canary +record unreadable/);
    const plan = JSON.stringify(renderRolloutPlan(record, new Map(), { awaiting: true }));
    expect(plan).toContain("canary: gpu-1 · wave 2: gpu-2 · wave 3: gpu-3");
    expect(plan).toContain("At most 2 hosts switch at once");
    expect(plan).toContain("at most 10 % below the canary's");
    expect(plan).toContain('"value":"ro-mx2i7lz1-9b03ee"');
    const decided = JSON.stringify(
      renderRolloutPlan(record, new Map(), { awaiting: false, decided: "✅ *Approved*" }),
    );
    expect(decided).not.toContain("swap_approve");
  });

  it("a plan that says what crosses the Hub: once, then copies host to host in rounds; or once a host", () => {
    const twenty = {
      policy: record.policy,
      hosts: Array.from({ length: 20 }, (_, i) => ({ ...record.hosts[0]!, host: `gpu-${i + 1}` })),
    };
    const line = weightsLine(twenty, 246e9, 0);
    // 1 holder, then 3, 9, 27: three rounds of copies at 2 a host
    expect(line).toContain("from the Hub once: gpu-1 fetches them, and 19 copies go host to host over SSH");
    // 246 GB × 2 copies sharing a 10 Gbit/s link: 394 s a round, three rounds
    expect(line).toContain(
      "at most 2 from one host at once: about 3 rounds of copies, about 20 min at 10 Gbit/s",
    );
    expect(line).toContain("Hub bytes: 246 GB, not 4.9 TB.");
    const off = weightsLine({ ...twenty, policy: { ...record.policy, copyFanout: 0 } }, 246e9, 2);
    expect(off).toContain("from the Hub to each: 18 downloads (2 hosts have them on disk)");
    expect(JSON.stringify(renderRolloutPlan(record, new Map(), { awaiting: true }))).toContain(
      "from the Hub once: gpu-1 fetches them, and 2 copies go host to host",
    );
  });

  it("a halt line that says what was not touched and what stays", () => {
    const line = rolloutEventLine(
      {
        type: "halted",
        wave: 1,
        reason: "wave 2 did not pass its gate: gpu-2 failed",
        kept: ["gpu-1"],
        finished: [],
        undone: ["gpu-4"],
        untouched: ["gpu-3"],
      },
      record,
    );
    expect(line).toContain("*Rollout halted* at wave 2");
    expect(line).toContain("Not touched (their swaps cancelled, files kept): gpu-3");
    expect(line).toContain("Serving the new model from earlier waves, left so: gpu-1");
    expect(line).toContain("Taken back (their own swaps succeeded, but the wave did not pass): gpu-4");
  });
});

describe("a rollout host's own swap", () => {
  it("never hurries its posts past others in a busy channel: its rollout's card, plan and lines go first", () => {
    const rollout = { id: "ro-mx2i7lz1-9b03ee", wave: 1 };
    expect(urgentFor({ rollout }, true)).toBe(false);
    expect(urgentFor({ rollout: undefined }, true)).toBe(true);
    expect(urgentFor({ rollout: undefined }, false)).toBe(false);
  });

  it("cannot be decided on by itself: its approval is the rollout's", async () => {
    const { decideOnPlan } = await import("../../src/approval/decide.ts");
    const { systemClock } = await import("../../src/clock.ts");
    const { createLogger } = await import("../../src/log.ts");
    const child = {
      id: "sw-mx2i7lz1-000001",
      host: "gpu-1",
      step: "prepare",
      planHash: "p1",
      approval: { requestedAt: "2026-12-07T10:00:00.000Z", expiresAt: "2099-01-01T00:00:00.000Z" },
      rollout: { id: "ro-mx2i7lz1-9b03ee", wave: 1 },
      requester: "U0ALICE01",
    } as unknown as SwapRecord;
    let decided = 0;
    const result = await decideOnPlan(
      { swapId: child.id, planHash: "p1", user: "U0BOB0001", approved: true, via: "api" },
      {
        store: {
          swaps: { get: async () => child },
          approvals: {
            decide: async () => {
              decided += 1;
              return { recorded: true };
            },
          },
          rollouts: { get: async () => undefined },
        } as never,
        isApprover: async () => true,
        allowSelfApproval: () => false,
        wake: async () => undefined,
        reportSoon: async () => undefined,
        tell: async () => undefined,
        log: createLogger({ level: "silent" }),
        clock: systemClock,
      },
    );
    expect(result).toMatchObject({ ok: false, code: "IN_ROLLOUT" });
    expect(result.ok === false && result.text).toContain("rollout `ro-mx2i7lz1-9b03ee`");
    expect(decided).toBe(0);
  });
});
