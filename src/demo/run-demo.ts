import { CHANNEL, startBench, USERS } from "../../testbench/bench.ts";
import { renderConversation } from "../../testbench/slack/index.ts";

/**
 * `npm run demo`: the real bot against the bench (real Redis and sshd, simulated Slack, Hub and GPU
 * hosts), playing a short conversation, then printing the channel as Slack would show it.
 */
export async function runDemo(): Promise<number> {
  const color = process.stdout.isTTY === true;
  const say = (line: string) => process.stdout.write(`${line}\n`);
  say("modelswap demo: starting the bench (redis-server, sshd, Slack emulator, Hub, two GPU hosts)…");
  const bench = await startBench({
    connectTimeoutSeconds: 3,
    hosts: [
      { name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      {
        name: "h200",
        gpus: "h200-1gpu",
        serving: { preset: "llama-bf16-small" },
        faults: { sglang: "crash-on-start" },
      },
    ],
  });
  try {
    bench.slack.setRateLimits({ scale: 10 });
    await bench.startBot();
    say(`bench ready in ${bench.dir}; the bot's log is ${bench.dir}/bot.log\n`);

    const conversation: [string, string, string][] = [
      ["alice", USERS.alice, "help"],
      ["alice", USERS.alice, "status gpu-1"],
      ["alice", USERS.alice, "status h200"],
      ["mallory", USERS.mallory, "status gpu-1"],
      ["alice", USERS.alice, "status gpu-7"],
    ];
    for (const [name, user, text] of conversation) {
      const before = bench.slack.messages(CHANNEL).length;
      const result = await bench.slack.command(user, text, { channel: CHANNEL });
      say(`  @${name}: /llm ${text}  → HTTP ${result.status}, acked in ${Math.round(result.ackMs)} ms`);
      if (result.ackResponse?.text?.startsWith("⏳")) {
        await bench.slack.waitFor(() => bench.slack.messages(CHANNEL).length > before, {
          timeoutMs: 30_000,
          what: `the answer to /llm ${text}`,
        });
      }
    }
    say("\n──────── #llm-ops, as Slack shows it ────────\n");
    say(renderConversation(bench.slack, CHANNEL, { color, width: 100 }));
    say(
      `\nSlack Web API calls: ${bench.slack.calls().length}, rate-limited: ${bench.slack.rateLimitedCount()}`,
    );
    return 0;
  } finally {
    await bench.stop();
  }
}
