import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { type Bench, CHANNEL, startBench, USERS } from "../testbench/bench.ts";
import { freePort } from "../testbench/free-port.ts";
import { makeModel } from "../testbench/hub/index.ts";
import { waitForPort } from "../testbench/wait-for-port.ts";
import { spawnBot, stopBot } from "./bot-process.ts";
import type { Progress, SectionResult } from "./section.ts";
import { percentile, round } from "./stats.ts";

export interface AckOptions {
  /** Measured requests to each app (the bot and the baseline). */
  requests: number;
  /** Requests to each before measuring (JIT, connections, caches), not counted. */
  warmup: number;
}

export interface AckFigures {
  requests: number;
  p50_ms: number;
  p99_ms: number;
  baseline_p50_ms: number;
  baseline_p99_ms: number;
  p99_ratio: number;
}

const HOST = "gpu-1";
const MODEL = "sim-org/ack-bench-model";

/**
 * The request mix: status of one host and of the fleet (each enqueues a status job), a swap refused
 * because the host is busy (the lock and the running swap's record are read), and a dry run (saved,
 * audited, enqueued). No request starts a real swap.
 */
const MIX = [
  `status ${HOST}`,
  `swap ${MODEL} --host ${HOST}`,
  "status",
  `swap ${MODEL} --host ${HOST} --dry-run`,
];

/**
 * Ack latency: signed slash commands through Bolt's HTTP receiver, time to the HTTP response, for the bot
 * (`modelswap bot`, a child process) and for a bare Bolt app that only acks (another child process),
 * alternately, one request in flight: both see the same generator, the same moments and the same noise.
 */
export async function benchAck(options: AckOptions, progress: Progress): Promise<SectionResult<AckFigures>> {
  const bench = await startBench({ logTo: "silent", hosts: [{ name: HOST }] });
  let baseline: ChildProcess | undefined;
  try {
    bench.hub.addModel(makeModel("llama-bf16-small", { id: MODEL, gated: false }));
    // The bot role alone: the worker's remote work would run on the simulated hosts, i.e. on these
    // same two cores, and measure the simulator rather than the ack.
    const bot = await spawnBot(bench, { role: "bot" });
    const botUrl = `http://127.0.0.1:${bot.port}/slack/events`;
    const baselinePort = await freePort();
    baseline = startBaseline(bench, baselinePort);
    await waitForPort(baselinePort, "the bare Bolt app", 30_000);
    const baselineUrl = `http://127.0.0.1:${baselinePort}/slack/events`;

    // One real swap holds the host (queued, no worker takes it): every later swap of it is refused as busy.
    bench.slack.setBotEndpoint(botUrl);
    const first = await bench.slack.command(USERS.alice, `swap ${MODEL} --host ${HOST}`, {
      channel: CHANNEL,
    });
    if (!/Swap queued/.test(first.ackResponse?.text ?? ""))
      throw new Error(`bench: the first swap was not queued`);

    const send = async (url: string, i: number): Promise<number> => {
      bench.slack.setBotEndpoint(url);
      const result = await bench.slack.command(USERS.alice, MIX[i % MIX.length]!, { channel: CHANNEL });
      if (result.status !== 200)
        throw new Error(`bench: ${url} answered ${result.status} to "${MIX[i % MIX.length]}"`);
      return result.ackMs;
    };
    progress(`warming up (${options.warmup} requests each)`);
    for (let i = 0; i < options.warmup; i++) {
      await send(botUrl, i);
      await send(baselineUrl, i);
    }
    progress(`${options.requests} requests each, alternating between the bot and the bare Bolt app`);
    const botMs: number[] = [];
    const baseMs: number[] = [];
    for (let i = 0; i < options.requests; i++) {
      // alternate who goes first, so neither always follows the other's garbage
      if (i % 2 === 0) {
        botMs.push(await send(botUrl, i));
        baseMs.push(await send(baselineUrl, i));
      } else {
        baseMs.push(await send(baselineUrl, i));
        botMs.push(await send(botUrl, i));
      }
    }
    await stopBot(bot);
    const refused = bench.slack.ephemerals(CHANNEL, USERS.alice).filter((m) => /is busy/.test(m.text)).length;
    if (refused === 0) throw new Error("bench: no swap was refused as busy; the mix is not what it claims");
    const p99 = percentile(botMs, 99);
    const baseP99 = percentile(baseMs, 99);
    return {
      figures: {
        requests: options.requests,
        p50_ms: round(percentile(botMs, 50)),
        p99_ms: round(p99),
        baseline_p50_ms: round(percentile(baseMs, 50)),
        baseline_p99_ms: round(baseP99),
        p99_ratio: round(p99 / baseP99),
      },
      details: [
        `ack: max ${round(Math.max(...botMs))} ms (baseline ${round(Math.max(...baseMs))} ms); ${refused} swaps refused as busy`,
      ],
    };
  } finally {
    baseline?.kill("SIGKILL");
    await bench.stop();
  }
}

function startBaseline(bench: Bench, port: number): ChildProcess {
  const script = fileURLToPath(new URL("./bare-bolt-app.ts", import.meta.url));
  return spawn(process.execPath, ["--import", "tsx", script], {
    env: {
      ...process.env,
      PORT: String(port),
      SLACK_SIGNING_SECRET: bench.signingSecret,
      SLACK_BOT_TOKEN: bench.botToken,
      SLACK_API_URL: bench.env.SLACK_API_URL,
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
}
