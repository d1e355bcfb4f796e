import { BENCH_WEIGHT_SCALE, CHANNEL, SEED_BOX_FREE_DISK_BYTES, startBench, USERS } from "./bench.ts";
import { startClientStream } from "./client-stream.ts";
import { makeModel } from "./hub/index.ts";
import { renderConversation, type SlackMessage } from "./slack/index.ts";

const QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4";
/** A copy of it whose weights answer NaN on gpu-5 (its sanity check fails, and the parked old model wakes). */
const QWEN_NAN = "nvidia/Qwen3.5-397B-A17B-NVFP4-nan";
/** gpu-3's new model: small enough (≈ 8 GB) to load on the 4 GPUs its old model leaves idle. */
const QWEN_8B = "Qwen/Qwen3-8B-FP8";
/** A second commit of it (the same files: a new revision), which gpu-6 loads into its running engine. */
const QWEN_8B_V2 = `${QWEN_8B}/tree/v2`;

/**
 * `npm run demo`: the real bot against the bench (real Redis and sshd, simulated Slack, Hub and GPU
 * hosts), playing a conversation — help, status of a healthy and a broken host, a swap that succeeds and
 * one whose new model answers NaN and is rolled back — then printing the channel as Slack shows it.
 * The Hub serves the model's 19 shards at 1/BENCH_WEIGHT_SCALE of their size and the bot is told so
 * (bench.weightScale): its plans show the real 223 GB model's figures on the seeds' 7 TB, 8-GPU host.
 */
export async function runDemo(): Promise<number> {
  const color = process.stdout.isTTY === true;
  const say = (line: string) => process.stdout.write(`${line}\n`);
  say(
    "modelswap demo: starting the bench (redis-server, sshd, haproxy, Slack emulator, Hub, eleven GPU hosts)…",
  );
  const bench = await startBench({
    connectTimeoutSeconds: 3,
    // gpu-3's blue/green swap keeps its old model loaded 5 s after the flip (300 s by default)
    // a swap may set its context length from Slack (--set context-length=…): swaps.settable
    swaps: {
      pollSeconds: 0.5,
      cardUpdateSeconds: 2,
      baseline: "probe",
      flipBackSeconds: 5,
      settable: ["context-length"],
      // units start parkable (SGLang's memory saver, vLLM's sleep mode): gpu-5's cold swap parks its old one
      sleepMode: true,
    },
    weightScale: BENCH_WEIGHT_SCALE,
    // prod-1..4 serve one model together: a rollout swaps them in waves, prod-1 the canary (docs/rollouts.md)
    groups: {
      prod: { hosts: "prod-[1-4]", canary: 1, waves: [50, 100], maxUnavailable: 2, throughputMargin: 50 },
    },
    // the monitor checks every 2 s here (30 s by default), so h200's crash is alerted within seconds
    health: { intervalSeconds: 2, failureThreshold: 2 },
    hosts: [
      {
        name: "gpu-1",
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
        // clients reach gpu-1 through HAProxy (docs/front-door.md): its swap holds them instead of failing
        frontDoor: { holdSeconds: 300 },
      },
      {
        name: "gpu-2",
        gpus: "8x-rtx-pro-6000-blackwell",
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
        serving: { preset: "qwen3-fp8-dense" },
        // this host's copy of the new model answers NaN: the sanity gate must catch it
        faults: { sglang: { models: { "Qwen3.5-397B": { mode: "nan" } } } },
        waitHealthy: true,
      },
      {
        name: "gpu-3",
        gpus: "8x-rtx-pro-6000-blackwell",
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
        // its model serves on 4 of the 8 GPUs, and HAProxy has a standby slot: the swap is blue/green
        serving: { preset: "llama-bf16-small", tp: 4 },
        frontDoor: { holdSeconds: 300, standby: true },
        waitHealthy: true,
      },
      {
        name: "gpu-4",
        gpus: "8x-rtx-pro-6000-blackwell",
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
        serving: { preset: "qwen3-fp8-dense" },
        // SGLang serves it, and it has vLLM too (hosts[].engines.vllm): swapped to vLLM and back
        vllm: "also",
        waitHealthy: true,
      },
      {
        name: "gpu-5",
        gpus: "8x-rtx-pro-6000-blackwell",
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
        serving: { preset: "qwen3-fp8-dense" },
        // a front door with a standby slot, and a copy of the new model that answers NaN: its second swap
        // fails and rolls back to the old model parked in host RAM (swaps.sleepMode)
        frontDoor: { holdSeconds: 300, standby: true },
        faults: { sglang: { models: { "NVFP4-nan": { mode: "nan" } } } },
        waitHealthy: true,
      },
      {
        name: "gpu-6",
        gpus: "h200-1gpu",
        serving: { preset: "llama-bf16-small" },
        // its second swap is a new revision of the model its first put there: loaded in place
        // (swaps.inPlace), the same process serving on, behind the front door's hold
        frontDoor: { holdSeconds: 300 },
        waitHealthy: true,
      },
      ...["prod-1", "prod-2", "prod-3", "prod-4"].map((name) => ({
        name,
        gpus: "8x-b200" as const,
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
        serving: { preset: "qwen3-fp8-dense" as const },
        waitHealthy: true,
      })),
      {
        name: "h200",
        gpus: "h200-1gpu",
        serving: { preset: "llama-bf16-small" },
        faults: { sglang: "crash-on-start" },
      },
    ],
  });
  try {
    bench.hub.addModel(makeModel("qwen3.5-moe-nvfp4", { scale: BENCH_WEIGHT_SCALE }));
    bench.hub.addModel(
      makeModel("qwen3.5-moe-nvfp4", { id: QWEN_NAN, gated: false, scale: BENCH_WEIGHT_SCALE }),
    );
    bench.hub.addModel(
      makeModel("qwen3-fp8-dense", { scale: BENCH_WEIGHT_SCALE, revisions: { v2: "b7".repeat(20) } }),
    );
    await bench.startBot();
    say(`bench ready in ${bench.dir}; the bot's log is ${bench.dir}/bot.log`);
    say("Slack's real rate limits are enforced by the emulator.\n");

    const command = async (name: string, user: string, text: string) => {
      const result = await bench.slack.command(user, text, { channel: CHANNEL });
      say(`  @${name}: /llm ${text}  → HTTP ${result.status}, acked in ${Math.round(result.ackMs)} ms`);
      return result;
    };
    const newMessage = async (before: number, what: string, test: (m: SlackMessage) => boolean) =>
      await bench.slack.waitFor(() => bench.slack.messages(CHANNEL).slice(before).find(test), {
        timeoutMs: 60_000,
        what,
      });

    await command("alice", USERS.alice, "help");
    for (const host of ["gpu-1", "h200"]) {
      const before = bench.slack.messages(CHANNEL).length;
      await command("alice", USERS.alice, `status ${host} --share`);
      await newMessage(before, `the status of ${host}`, (m) => m.text.includes(`${host}:`));
    }
    await command("mallory", USERS.mallory, `swap ${QWEN} --host gpu-1`);

    for (const [host, model, options = ""] of [
      ["gpu-1", QWEN],
      ["gpu-2", QWEN],
      // gpu-3: with a context length of the swap's own (--set, within swaps.settable): the plan says so
      ["gpu-3", QWEN_8B, " --set context-length=32768"],
      // gpu-4: from SGLang to vLLM (its v0.18.0 tag, built with the commit's precompiled kernels), and back
      ["gpu-4", QWEN_8B, " --engine vllm --engine-ref v0.18.0"],
      ["gpu-4", QWEN, " --engine sglang"],
      // gpu-5: a cold swap that starts a parkable unit, then one whose new model fails: the old one wakes
      ["gpu-5", QWEN],
      ["gpu-5", QWEN_NAN],
      // gpu-6: Qwen3-8B-FP8 cold, then its v2 loaded into the running engine (update_weights_from_disk)
      ["gpu-6", QWEN_8B],
      ["gpu-6", QWEN_8B_V2],
    ] as const) {
      const door = bench.host(host).frontDoor;
      // production traffic: a request every 200 ms through the host's front door while it is swapped
      const clients = door === undefined ? undefined : startClientStream(door.url, { everyMs: 200 });
      if (door !== undefined)
        say(`  (clients send a request every 200 ms through ${host}'s front door, ${door.url})`);
      const before = bench.slack.messages(CHANNEL).length;
      await command("alice", USERS.alice, `swap https://huggingface.co/${model} --host ${host}${options}`);
      const card = await newMessage(before, `the card of the swap on ${host}`, (m) =>
        m.text.includes(`→ ${host}`),
      );
      const plan = await bench.slack.waitFor(
        () =>
          bench.slack.thread(CHANNEL, card.ts).find((m) => JSON.stringify(m.blocks).includes("swap_approve")),
        { timeoutMs: 60_000, what: "the plan" },
      );
      say(`  @bob reacts ✅ on the plan for ${host}`);
      await bench.slack.react(USERS.bob, CHANNEL, plan.ts, "white_check_mark");
      const done = await bench.slack.waitFor(
        () => {
          const now = bench.slack.message(CHANNEL, card.ts);
          return now !== undefined && /Swapped|Rolled back|Failed/.test(now.text) ? now : undefined;
        },
        { timeoutMs: 120_000, what: `the swap on ${host} to finish` },
      );
      say(`  → ${done.text}`);
      if (clients !== undefined) {
        const seen = await clients.stop();
        const how =
          host === "gpu-3"
            ? "blue/green: the new model loaded beside the old one, and the front door flipped"
            : model === QWEN_NAN
              ? "held by the front door while the new model failed and the parked old one woke"
              : model === QWEN_8B_V2
                ? "held by the front door while the running engine loaded the new revision in place"
                : "held by the front door while the new model loaded";
        say(
          `  → the clients: ${seen.answered} requests, ${seen.failed} failed, the longest waited ${(seen.maxMs / 1000).toFixed(1)} s (${how})`,
        );
      }
    }

    // A rollout: prod-1..4 to the new model behind one approval, the canary first; then one whose canary
    // answers NaN: it rolls itself back and the rollout halts before any other host is touched.
    for (const [model, expect] of [
      [QWEN, /Rolled out/],
      [QWEN_8B, /Halted/],
    ] as const) {
      if (model === QWEN_8B)
        await bench.host("prod-1").sim.setFault("sglang", { models: { "Qwen3-8B": { mode: "nan" } } });
      const before = bench.slack.messages(CHANNEL).length;
      await command("alice", USERS.alice, `swap ${model} --group prod`);
      const card = await newMessage(before, "the rollout's card", (m) => m.text.startsWith("Rollout:"));
      const plan = await bench.slack.waitFor(
        () =>
          bench.slack.thread(CHANNEL, card.ts).find((m) => JSON.stringify(m.blocks).includes("swap_approve")),
        { timeoutMs: 120_000, what: "the rollout's plan" },
      );
      say("  @bob clicks Approve on the rollout's plan");
      const id = /`(ro-[a-z0-9-]+)`/.exec(JSON.stringify(card.blocks))?.[1];
      await bench.slack.clickButton(USERS.bob, CHANNEL, plan.ts, "swap_approve", id);
      const done = await bench.slack.waitFor(
        () => {
          const now = bench.slack.message(CHANNEL, card.ts);
          return now !== undefined && expect.test(JSON.stringify(now.blocks)) ? now : undefined;
        },
        { timeoutMs: 240_000, what: `the rollout to match ${expect}` },
      );
      say(`  → ${done.text.split("\n")[0]}`);
    }

    // The health monitor alerted on h200 by itself; an operator fixes the engine and restarts the unit.
    await bench.slack.waitFor(() => bench.slack.messages(CHANNEL).find((m) => m.text.startsWith("🚨 h200")), {
      timeoutMs: 60_000,
      what: "the health alert for h200",
    });
    const h200 = bench.host("h200");
    say(`  (the monitor alerted on h200; someone fixes it: systemctl reset-failed + start ${h200.unit})`);
    await h200.sim.clearFaults();
    await h200.sim.systemctl("reset-failed", h200.unit);
    await h200.sim.systemctl("start", h200.unit);
    await bench.slack.waitFor(() => bench.slack.messages(CHANNEL).find((m) => m.text.startsWith("✅ h200")), {
      timeoutMs: 60_000,
      what: "the recovery of h200",
    });

    say("\n──────── #llm-ops, as Slack shows it ────────\n");
    say(renderConversation(bench.slack, CHANNEL, { color, width: 110 }));
    say(
      `\nSlack Web API calls: ${bench.slack.calls().length}, answered 429 (rate limited): ${bench.slack.rateLimitedCount()}`,
    );
    return 0;
  } finally {
    await bench.stop();
  }
}

// `npm run demo` runs this file (`tsx testbench/demo.ts`); `modelswap demo` from a checkout imports it
if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await runDemo();
