import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { RolloutDriver } from "../../testbench/rollout-driver.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { runModelswap } from "../support/modelswap-cli.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * A rollout through the operator's second way in: the real `modelswap` command against the real bot's
 * API. One operator requests it (`--group`), another reads it (`show`: a row per host, the plan and its
 * hash) and approves it (`approve`: bound to that hash), and it rolls out; a host's own swap refuses a
 * decision of its own and says how to decide on the rollout; ids that are no swap or rollout are refused
 * with what is accepted.
 */
const TOKENS = {
  alice: "alice-0123456789abcdef0123456789abcdef",
  bob: "bob-fedcba9876543210fedcba9876543210f",
};
const HOSTS = ["gpu-1", "gpu-2"];

let bench: Bench;
let swaps: SwapDriver;
useSwapBench(
  {
    hosts: HOSTS.map((name) => ({
      name,
      gpus: "8x-rtx-pro-6000-blackwell",
      serving: { preset: "qwen3-fp8-dense" },
    })),
    startBot: false,
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

beforeAll(async () => {
  const operators: Record<string, unknown>[] = [];
  const scopes = { alice: ["read", "request"], bob: ["read", "approve"] };
  for (const [name, token] of Object.entries(TOKENS)) {
    const file = join(bench.dir, `token-${name}`);
    await writeFile(file, `${token}\n`, { mode: 0o600 });
    operators.push({ name, tokenFile: file, scopes: scopes[name as keyof typeof TOKENS] });
  }
  // biome-ignore lint/suspicious/noExplicitAny: the bench's YAML, edited as a person would
  await bench.editConfig((config: any) => {
    config.operators = operators;
    // the sims' tok/s follow the machine's load (test files share its cores): the gate's arithmetic is
    // test/unit/rollout.test.ts's; here its throughput part is off
    config.groups = { pair: { hosts: "gpu-[1-2]", throughputMargin: 100 } };
  });
  await bench.startBot();
}, 120_000);

async function modelswap(args: string[], as: keyof typeof TOKENS) {
  return await runModelswap(
    args,
    { MODELSWAP_API_URL: `http://127.0.0.1:${bench.env.PORT}`, MODELSWAP_OPERATOR_TOKEN: TOKENS[as] },
    120_000,
  );
}

describe("a rollout from the modelswap command", () => {
  it("is requested by one operator, shown and approved by another, and rolls out", async () => {
    const model = addSimModel(bench, "ops-rollout");
    const asked = await modelswap(["swap", model, "--group", "pair"], "alice");
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stdout).toContain("Rollout queued");
    const id = /rollout `?(ro-[a-z0-9]+-[a-f0-9]{6})/.exec(asked.stdout)?.[1];
    expect(id, asked.stdout).toBeDefined();

    // once every host has planned, `show` prints the rollout, a row per host and the plan to approve
    const shown = await until(
      async () => {
        const out = await modelswap(["show", id!], "bob");
        return out.stdout.includes("waiting for a decision") ? out : undefined;
      },
      { what: "the rollout's plan waiting for a decision", timeoutMs: 90_000, intervalMs: 1000 },
    );
    expect(shown.stdout).toContain(`rollout ${id}: ${model}@main → 2 hosts`);
    expect(shown.stdout).toMatch(/gpu-1 +canary +sw-\S+ +prepare/);
    expect(shown.stdout).toMatch(/gpu-2 +2 +sw-\S+ +prepare/);
    expect(shown.stdout).toContain(`modelswap approve ${id}`);
    expect(shown.stdout).toContain("Rollout plan:");
    const hash = /plan: ([0-9a-f]{16})/.exec(shown.stdout)?.[1];
    expect(hash).toBeDefined();

    // a host's own swap is decided with its rollout, never on its own
    const record = await (await swaps.store()).rollouts.get(id!);
    const child = record!.hosts[1]!.swapId;
    const direct = await modelswap(["approve", child], "bob");
    expect(direct.code).not.toBe(0);
    expect(direct.stderr).toContain(`is one host of rollout \`${id}\``);
    expect(direct.stderr).toContain("modelswap approve <rollout id>");

    const approved = await modelswap(["approve", id!], "bob");
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain(`✅ Approved rollout ${id} (plan ${hash})`);
    const rollouts = new RolloutDriver(bench, swaps);
    await until(async () => (await rollouts.record(id!)).outcome, {
      what: "the rollout's outcome",
      timeoutMs: 180_000,
    });
    const done = await rollouts.record(id!);
    expect(done.outcome, done.reason).toBe("succeeded");
    const after = await modelswap(["show", id!, "--json"], "bob");
    const body = JSON.parse(after.stdout);
    expect(body.rollout.decision).toMatchObject({ approved: true, via: "api" });
    expect(body.hosts.map((h: { outcome: string }) => h.outcome)).toEqual(["succeeded", "succeeded"]);
    expect(body.hosts[1].files).toMatchObject({ state: "copied", from: "gpu-1" });
  }, 300_000);

  it("refuses what is no swap or rollout id, a rollout that does not exist, and hosts it does not know", async () => {
    const bad = await modelswap(["show", "ro-nonsense"], "bob");
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("not a swap or rollout id");
    expect(bad.stderr).toContain("rollout ids like ro-");
    const missing = await modelswap(["show", "ro-mx2i7lz1-000000"], "bob");
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("there is no rollout ro-mx2i7lz1-000000");
    const unknownGroup = await modelswap(["swap", "org/model", "--group", "nope"], "alice");
    expect(unknownGroup.code).not.toBe(0);
    expect(unknownGroup.stderr).toContain("pair"); // the groups there are
    const unknownHost = await modelswap(["swap", "org/model", "--hosts", "gpu-[1-3]"], "alice");
    expect(unknownHost.code).not.toBe(0);
    expect(unknownHost.stderr).toContain("gpu-3");
  });
});
