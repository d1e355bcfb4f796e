import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { duration } from "../../src/format-duration.ts";
import { catalogueRecipes } from "../../src/plan/catalogue.ts";
import type { CatalogueRecipe } from "../../src/plan/catalogue-schema.ts";
import { type Bench, CHANNEL, QUICK_BENCH, startBench, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { SwapDriver } from "../../testbench/swap-driver.ts";

/**
 * `/llm swap` end to end on the bench: signed slash commands and reactions into the real bot, real
 * BullMQ on a real Redis, real SSH into simulated GPU hosts whose systemd runs real processes, a
 * simulated SGLang that reproduces the NaN failure of NVFP4 on SM120 without the FlashInfer backends.
 */
const QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4";
const LLAMA = "sim-org/open-llama-1B";
let bench: Bench;
let swaps: SwapDriver;

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    swaps: { pollSeconds: 0.2, cardUpdateSeconds: 1, healthTimeoutSeconds: 8 },
    // short enough for the expiry test; every other test decides within a second of the plan
    approvals: { ttlMinutes: 0.25 },
    hosts: [
      { name: "bw-ok", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "bw-nan", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "bw-crash", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "bw-hang", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "bw-gate", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "h200", gpus: "h200-1gpu", serving: { preset: "llama-bf16-small" } },
      { name: "bw-old", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "bw-flaky", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "bw-doomed", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
    ],
  });
  bench.hub.addModel(makeModel("qwen3.5-moe-nvfp4"));
  bench.hub.addModel(makeModel("llama-bf16-small", { id: LLAMA, gated: false }));
  bench.hub.addModel(makeModel("llama-bf16-small", { id: "meta-llama/Llama-Gated-1B", gated: "manual" }));
  await bench.startBot();
  swaps = new SwapDriver(bench);
}, 180_000);

afterAll(async () => {
  await swaps?.close();
  await bench?.stop();
});

const MUTATING = /^(start|stop|restart|enable|disable|daemon-reload)$/;

describe("/llm swap", () => {
  it("swaps an NVFP4 Qwen3.5 MoE onto 8× sm_120 with the recipe's backends: switch, health, sanity, benchmark", async () => {
    const host = bench.host("bw-ok");
    const oldUnit = host.unit;
    const swap = await swaps.request(`https://huggingface.co/${QWEN}`, "bw-ok");
    const plan = await swaps.plan(swap.ts);
    const planText = JSON.stringify(plan.blocks);
    expect(planText).toContain("flashinfer_cutlass");
    expect(planText).toContain("flashinfer_cudnn");
    expect(planText).toContain("modelopt_fp4");
    expect(planText).toContain("qwen3_coder");
    // no bench.weightScale on this bench: the sizes the Hub serves, said plainly, and no bench line
    expect(planText).not.toContain("bench.weightScale");
    expect(planText).toMatch(/\*Size\*\\n6\.\d MB \(\d+ files\)"/);
    await bench.slack.react(USERS.bob, CHANNEL, plan.ts, "white_check_mark");
    const done = await swaps.outcome(swap.ts, /Swapped/);
    expect(done.text).toContain(`${QWEN}@`);
    expect(JSON.stringify(done.blocks)).toMatch(
      /Download — 6\.\d MB verified in [\d.]+ (?:s|min|h|d)(?: \d+ (?:s|min|h))?/,
    );
    expect(JSON.stringify(done.blocks)).not.toContain("bench scale");
    expect(JSON.stringify(done.blocks)).toMatch(/downtime \d+/);

    const newUnit = (await host.sim.systemctl("list-unit-files", "--type=service", "--no-legend")).stdout;
    const unitName = /sglang-nvidia-qwen3[-.a-z0-9]*\.service/.exec(newUnit)?.[0];
    expect(unitName).toBeDefined();
    const fresh = await host.sim.unitState(unitName!);
    expect(fresh).toMatchObject({ activeState: "active", unitFileState: "enabled" });
    const old = await host.sim.unitState(oldUnit);
    expect(old).toMatchObject({ activeState: "inactive", unitFileState: "disabled" });
    // where the start went, as the engine's own lines timed it (the slowest of its 8 ranks)
    const journal = await host.sim.journal(unitName!);
    const weights = Math.max(
      ...[...journal.matchAll(/Load weight end\. elapsed=([\d.]+) s/g)].map((m) => Number(m[1])),
    );
    expect(weights).toBeGreaterThan(0);
    expect(JSON.stringify(done.blocks)).toMatch(
      new RegExp(`Health — healthy [^"]*?its start: weights ${duration(weights)} · CUDA graphs \\d`),
    );
    expect((await swaps.record(swaps.swapId(swap.ts)))?.startup).toMatchObject({ weightsSeconds: weights });

    const thread = swaps.threadText(swap.ts);
    expect(thread).toContain("Download complete");
    expect(thread).toContain("Engine built");
    expect(thread).toMatch(/tok\/s/);
    expect(thread).toContain(`bw-ok now serves ${QWEN}`);
    // the outcome is broadcast to the channel once
    expect(bench.slack.thread(CHANNEL, swap.ts).filter((m) => m.reply_broadcast === true)).toHaveLength(1);

    // status now reports the new model and unit
    const status = await swaps.channelAnswer(USERS.alice, "status bw-ok --share", (m) =>
      m.text.includes("bw-ok:"),
    );
    expect(status.text).toContain("healthy");
    expect(JSON.stringify(status.blocks)).toContain(unitName!);
    // nothing was installed into the venv: the host's CUDA stack is as it was, the unit runs its own build
    expect((await host.sim.calls()).filter((c) => c.cmd === "pip")).toEqual([]);
    expect(host.sim.cudaStack().replaced).toBe(false);
    expect(await readFile(join(host.sim.unitDir, unitName!), "utf8")).toMatch(
      /^Environment=PYTHONPATH=\S+\/\.modelswap\/engines\/sglang-[0-9a-f]{12}-sw-[a-z0-9-]+\/python$/m,
    );
  }, 120_000);

  it("catches NaN output from a healthy server and rolls back to the old service", async () => {
    const host = bench.host("bw-nan");
    await host.sim.setFault("sglang", { models: { "Qwen3.5-397B": { mode: "nan" } } });
    const swap = await swaps.request(`hf://${QWEN}`, "bw-nan");
    const plan = await swaps.plan(swap.ts);
    await bench.slack.clickButton(USERS.bob, CHANNEL, plan.ts, "swap_approve");
    const done = await swaps.outcome(swap.ts, /Rolled back/);
    expect(JSON.stringify(done.blocks)).toMatch(/sanity/i);
    expect(swaps.threadText(swap.ts)).toMatch(/nan/i);
    expect(await host.sim.unitState(host.unit)).toMatchObject({
      activeState: "active",
      unitFileState: "enabled",
    });
    const health = await fetch(`http://127.0.0.1:${host.servingPort}/health`);
    expect(health.status).toBe(200);
  }, 120_000);

  it("rolls back when the new server crashes on start", async () => {
    const host = bench.host("bw-crash");
    await host.sim.setFault("sglang", { models: { "Qwen3.5-397B": { mode: "crash-on-start" } } });
    const swap = await swaps.request(QWEN, "bw-crash");
    await swaps.approve(swap.ts);
    await swaps.outcome(swap.ts, /Rolled back/);
    expect(swaps.threadText(swap.ts)).toContain("Traceback");
    expect(await host.sim.unitState(host.unit)).toMatchObject({ activeState: "active" });
  }, 120_000);

  it("rolls back when the new server never becomes healthy", async () => {
    const host = bench.host("bw-hang");
    await host.sim.setFault("sglang", { models: { "Qwen3.5-397B": { mode: "hang" } } });
    const swap = await swaps.request(QWEN, "bw-hang");
    await swaps.approve(swap.ts);
    await swaps.outcome(swap.ts, /Rolled back/);
    expect(swaps.threadText(swap.ts)).toMatch(/not healthy after [\d.]+ (?:s|min|h|d)(?: \d+ (?:s|min|h))?/);
    expect(await host.sim.unitState(host.unit)).toMatchObject({ activeState: "active" });
  }, 120_000);

  it("refuses an NVFP4 model on an H200 at preflight and touches nothing", async () => {
    const host = bench.host("h200");
    const setup = (await host.sim.calls()).length;
    const swap = await swaps.request(QWEN, "h200");
    const done = await swaps.outcome(swap.ts, /Failed/);
    expect(done.text).toContain("h200");
    const thread = swaps.threadText(swap.ts);
    expect(thread).toMatch(/compute capability/i);
    const calls = (await host.sim.calls()).slice(setup);
    expect(calls.length).toBeGreaterThan(0); // preflight did look
    expect(calls.filter((c) => c.cmd === "systemctl" && MUTATING.test(c.argv[0] ?? ""))).toEqual([]);
    expect(calls.filter((c) => c.cmd === "hf" || c.cmd === "pip")).toEqual([]);
    expect(await host.sim.unitState(host.unit)).toMatchObject({ activeState: "active" });
  }, 60_000);

  it("posts only the plan for a dry run", async () => {
    const host = bench.host("bw-gate");
    const setup = (await host.sim.calls()).length;
    const swap = await swaps.request(`${QWEN} --dry-run`, "bw-gate");
    await swaps.outcome(swap.ts, /Dry run/);
    const thread = bench.slack.thread(CHANNEL, swap.ts);
    expect(thread.some((m) => JSON.stringify(m.blocks).includes("flashinfer_cudnn"))).toBe(true);
    expect(thread.some((m) => JSON.stringify(m.blocks).includes("swap_approve"))).toBe(false);
    const calls = (await host.sim.calls()).slice(setup);
    expect(
      calls.filter((c) => c.cmd === "hf" || (c.cmd === "systemctl" && MUTATING.test(c.argv[0] ?? ""))),
    ).toEqual([]);
  }, 60_000);

  it("refuses a second swap on a busy host, names the running one, and lets a rejection end it", async () => {
    const swap = await swaps.request(LLAMA, "bw-gate");
    const plan = await swaps.plan(swap.ts);
    const busy = await bench.slack.command(USERS.alice, `swap ${QWEN} --host bw-gate`, { channel: CHANNEL });
    expect(busy.ackResponse?.text).toContain("bw-gate is busy");
    expect(busy.ackResponse?.text).toMatch(/swap `sw-[a-z0-9-]+`/);

    // a non-approver cannot decide at all
    await bench.slack.react(USERS.mallory, CHANNEL, plan.ts, "white_check_mark");
    await bench.slack.waitFor(
      () => bench.slack.ephemerals(CHANNEL, USERS.mallory).find((e) => e.text.includes("Only approvers")),
      { what: "the refusal to a non-approver" },
    );
    await bench.slack.react(USERS.bob, CHANNEL, plan.ts, "x");
    const done = await swaps.outcome(swap.ts, /Rejected/);
    expect(JSON.stringify(done.blocks)).toContain(USERS.bob);
    const id = swaps.swapId(swap.ts);
    await swaps.finalLine(swap.ts);

    // the plan no longer offers its buttons: a late click cannot be made at all
    expect(JSON.stringify(bench.slack.message(CHANNEL, plan.ts)?.blocks)).not.toContain("swap_approve");
    await expect(bench.slack.clickButton(USERS.bob, CHANNEL, plan.ts, "swap_approve")).rejects.toThrow(
      /no element with action_id "swap_approve"/,
    );
    // a later ✅ changes nothing: neither bob's (who rejected it) nor another approver's
    const rejected = await swaps.record(id);
    expect(rejected).toMatchObject({ outcome: "rejected", decision: { approved: false, by: USERS.bob } });
    expect(await swaps.jobState(id)).toBe("completed");
    const callsBefore = (await bench.host("bw-gate").sim.calls()).length;
    expect((await bench.slack.react(USERS.bob, CHANNEL, plan.ts, "white_check_mark")).status).toBe(200);
    expect((await bench.slack.react(USERS.dave, CHANNEL, plan.ts, "white_check_mark")).status).toBe(200);
    // each is told, privately, that the swap is over and who rejected it: the sign the bot handled both
    for (const user of [USERS.bob, USERS.dave]) {
      await bench.slack.waitFor(
        () =>
          swaps
            .toldAbout(id, user)
            .find((t) =>
              t.includes(`not waiting for a decision any more: it was rejected by <@${USERS.bob}>`),
            ),
        { what: `the answer to ${user}'s late ✅` },
      );
    }
    expect(swaps.card(swap.ts).text).toContain("Rejected");
    expect(await swaps.record(id)).toEqual(rejected);
    expect(await swaps.decision(id)).toMatchObject({ approved: false, by: USERS.bob });
    // nothing will run for it again: its job is over, and the host was not switched
    expect(await swaps.jobState(id)).toBe("completed");
    const since = (await bench.host("bw-gate").sim.calls()).slice(callsBefore);
    expect(
      since.filter((c) => c.cmd === "systemctl" && /^(start|enable|restart)$/.test(c.argv[0] ?? "")),
    ).toEqual([]);
  }, 60_000);

  it("does not let the requester approve their own swap", async () => {
    const swap = await swaps.request(LLAMA, "bw-gate", { user: USERS.dave });
    const plan = await swaps.plan(swap.ts);
    await bench.slack.react(USERS.dave, CHANNEL, plan.ts, "white_check_mark");
    // the refusal is the last thing the bot does with the ✅: after it, no decision may be recorded
    await bench.slack.waitFor(
      () => bench.slack.ephemerals(CHANNEL, USERS.dave).find((e) => e.text.includes("another approver")),
      { what: "the refusal of a self-approval" },
    );
    const id = swaps.swapId(swap.ts);
    expect(await swaps.decision(id)).toBeUndefined();
    expect((await swaps.record(id))?.decision).toBeUndefined();
    // so bob's ❌ is the decision that stands (had dave's ✅ counted, it would be refused as late)
    await bench.slack.react(USERS.bob, CHANNEL, plan.ts, "x");
    await swaps.outcome(swap.ts, /Rejected/);
    expect(await swaps.decision(id)).toMatchObject({ approved: false, by: USERS.bob });
  }, 60_000);

  it("explains Hub errors: unknown model, gated without a token", async () => {
    const missing = await swaps.request("nobody/no-such-model", "bw-gate");
    await swaps.outcome(missing.ts, /Failed/);
    expect(JSON.stringify(swaps.card(missing.ts).blocks)).toMatch(/not found/i);
    const gated = await swaps.request("meta-llama/Llama-Gated-1B", "bw-gate");
    await swaps.outcome(gated.ts, /Failed/);
    expect(JSON.stringify(swaps.card(gated.ts).blocks)).toMatch(/HF_TOKEN/);
  }, 60_000);

  it("refuses a plan when the host lacks the disk for the download", async () => {
    const host = bench.host("bw-gate");
    await host.sim.setFault("diskFreeBytes", 1_000);
    try {
      const swap = await swaps.request(QWEN, "bw-gate");
      await swaps.outcome(swap.ts, /Failed/);
      // the card can say so before the thread has its lines (a busy channel: the card is an edit, the
      // thread waits its turn at Slack's pace); the final line is the thread's last post
      await swaps.finalLine(swap.ts);
      expect(swaps.threadText(swap.ts)).toMatch(/disk/i);
    } finally {
      await host.sim.setFault("diskFreeBytes", null);
    }
  }, 60_000);

  it("answers bad input with the accepted forms and changes nothing", async () => {
    for (const text of [
      "swap",
      "swap https://evil.example/x/y",
      "swap a/b; reboot",
      "swap a/b --tp lots",
      "swap $(id)/x",
    ]) {
      const ack = await bench.slack.command(USERS.alice, text, { channel: CHANNEL });
      expect(ack.ackResponse?.text).toContain("Accepted model forms");
      expect(ack.ackResponse?.text).toContain("hf://&lt;org&gt;/&lt;name&gt;");
    }
    const mallory = await bench.slack.command(USERS.mallory, `swap ${QWEN} --host bw-gate`, {
      channel: CHANNEL,
    });
    expect(mallory.ackResponse?.text).toContain("Only requesters");
  });

  it("expires a plan nobody decides on, touching nothing and keeping the downloaded files", async () => {
    const host = bench.host("bw-gate");
    const swap = await swaps.request(LLAMA, "bw-gate");
    await swaps.plan(swap.ts);
    const done = await swaps.outcome(swap.ts, /expired/i, 45_000);
    expect(JSON.stringify(done.blocks)).toContain("downloaded files are kept");
    expect(await host.sim.unitState(host.unit)).toMatchObject({ activeState: "active" });
    expect(existsSync(host.sim.modelsDir)).toBe(true);
  }, 60_000);

  it("catches, in the plan, a flag the chosen engine build lacks, and touches nothing", async () => {
    const host = bench.host("bw-old");
    const swap = await swaps.request(`${QWEN} --engine-ref v0.5.2`, "bw-old");
    const done = await swaps.outcome(swap.ts, /Failed/);
    expect(JSON.stringify(done.blocks)).toContain("fp4-gemm-backend");
    expect(swaps.threadText(swap.ts)).toMatch(/--engine-ref/);
    const calls = await host.sim.calls();
    expect(calls.filter((c) => c.cmd === "systemctl" && /^(disable|stop)$/.test(c.argv[0] ?? ""))).toEqual(
      [],
    );
    expect(await host.sim.unitState(host.unit)).toMatchObject({
      activeState: "active",
      unitFileState: "enabled",
    });
  }, 60_000);

  it("restarts a download whose hf process died, without fetching the finished files again", async () => {
    const host = bench.host("bw-flaky");
    const model = bench.hub.getModel(QWEN)!;
    const weightTotal = model.files
      .filter((f) => f.path.endsWith(".safetensors"))
      .reduce((n, f) => n + f.size, 0);
    // every hf process is killed after writing 80 % of the weights' bytes: the shards downloading in
    // parallel, the smallest finishes first and survives; the others start over in the next process
    await host.sim.setFault("hf", { crashAfterBytes: Math.ceil(weightTotal * 0.8), retryDelayMs: 10 });
    const seen = bench.hub.requests().length;
    const swap = await swaps.request(QWEN, "bw-flaky");
    await swaps.approve(swap.ts);
    await swaps.outcome(swap.ts, /Swapped/, 90_000);
    expect(swaps.threadText(swap.ts)).toMatch(/Download attempt 1 ended/);
    // Each restart keeps the finished shards: had any attempt started from scratch, the Hub would have
    // served the weights once per attempt. (A shard in flight when hf died is fetched again: hf 1.33 never
    // resumes another process's partial file — fixtures/gpu-host/hf-download-1.33.md.)
    const attempts = (swaps.threadText(swap.ts).match(/Download attempt \d+ ended/g) ?? []).length + 1;
    expect(attempts).toBeGreaterThan(1);
    const weights = model.files.filter((f) => f.path.endsWith(".safetensors"));
    const weightBytes = weights.reduce((sum, f) => sum + f.size, 0);
    const served = bench.hub
      .requests()
      .slice(seen)
      .filter((r) => r.method === "GET" && r.kind === "resolve" && r.path.endsWith(".safetensors"))
      .reduce((sum, r) => sum + r.bytesSent, 0);
    expect(served).toBeGreaterThanOrEqual(weightBytes);
    expect(served).toBeLessThan(attempts * weightBytes);
  }, 120_000);

  it("says loudly, to the whole channel, when the rollback fails too", async () => {
    const host = bench.host("bw-doomed");
    // the new model answers NaN, and the old one will not come back either
    await host.sim.setFault("sglang", {
      models: { "Qwen3.5-397B": { mode: "nan" }, "Qwen3-8B-FP8": { mode: "crash-on-start" } },
    });
    const swap = await swaps.request(QWEN, "bw-doomed");
    await swaps.approve(swap.ts);
    await swaps.outcome(swap.ts, /Failed/, 90_000);
    const loud = await bench.slack.waitFor(
      () =>
        bench.slack
          .messages(CHANNEL)
          .find((m) => m.text.includes("<!channel>") && m.text.includes("bw-doomed")),
      { what: "the loud message" },
    );
    expect(loud?.text).toContain("serves nothing");
    expect(loud?.text).toContain(host.unit);
  }, 120_000);
  it("with the recipe's SM120 backend flags removed, catches the NaN output and rolls back", async () => {
    // A recipe table that forgot what DESIGN.md §1 learned the hard way.
    const forgetful: CatalogueRecipe[] = catalogueRecipes().map((recipe) => ({
      ...recipe,
      flags: recipe.flags.filter(
        (f) => f.setting !== "moe-runner-backend" && f.setting !== "fp4-gemm-backend",
      ),
    }));
    await bench.stopBots();
    await bench.startBot({ bot: true, worker: true }, { recipes: forgetful });
    const host = bench.host("bw-nan");
    await host.sim.clearFaults();
    const swap = await swaps.request(QWEN, "bw-nan");
    const plan = await swaps.plan(swap.ts);
    expect(JSON.stringify(plan.blocks)).not.toContain("flashinfer_cudnn");
    expect(JSON.stringify((await swaps.planDetails(swap.ts)).blocks)).not.toContain("flashinfer_cudnn");
    await bench.slack.react(USERS.bob, CHANNEL, plan.ts, "white_check_mark");
    await swaps.outcome(swap.ts, /Rolled back/);
    const thread = swaps.threadText(swap.ts);
    expect(thread).toMatch(/nan/i);
    expect(thread).toContain("!!!!");
    expect(await host.sim.unitState(host.unit)).toMatchObject({
      activeState: "active",
      unitFileState: "enabled",
    });
    expect((await fetch(`http://127.0.0.1:${host.servingPort}/health`)).status).toBe(200);
    await bench.stopBots();
    await bench.startBot();
  }, 90_000);
});
