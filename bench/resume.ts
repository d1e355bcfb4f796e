import { startBench } from "../testbench/bench.ts";
import { makeModel } from "../testbench/hub/index.ts";
import { SwapDriver } from "../testbench/swap-driver.ts";
import { until } from "../testbench/until.ts";
import { spawnBot, stopBot } from "./bot-process.ts";
import { shimCalls } from "./host-timings.ts";
import { benchSpeed, type Progress, type SectionResult, type Speed, servingHost } from "./section.ts";
import { round } from "./stats.ts";

export interface ResumeOptions {
  /** How long the whole download takes (the Hub's throttle); the worker dies about halfway. */
  downloadSeconds: number;
  speed: Speed;
}

export interface ResumeFigures {
  bytes_total: number;
  bytes_refetched: number;
}

const HOST = "gpu-1";
const MODEL = "sim-org/resume-bench-model";
const WEIGHT_BYTES = 16 * 1024 * 1024;

/**
 * Resume: the real `modelswap start` is SIGKILLed while its swap's download is about half done (the
 * Hub's own count of bytes sent says when), a new process is started, and the swap finishes. The Hub
 * counts every byte it sent for the model: anything beyond the model's size was fetched twice.
 */
export async function benchResume(
  options: ResumeOptions,
  progress: Progress,
): Promise<SectionResult<ResumeFigures>> {
  const bench = await startBench({
    ...benchSpeed(options.speed),
    logTo: "silent",
    // a killed worker's step is taken over within seconds, as the fault tests do
    swaps: { ...options.speed.swaps, lockSeconds: 5, stalledCheckSeconds: 1 },
    hosts: [servingHost(HOST, options.speed)],
  });
  const driver = new SwapDriver(bench);
  try {
    const model = bench.hub.addModel(
      makeModel("llama-bf16-small", { id: MODEL, gated: false, weightBytes: WEIGHT_BYTES }),
    );
    const total = model.totalBytes ?? WEIGHT_BYTES;
    bench.hub.setThrottle(Math.round(total / options.downloadSeconds));
    const first = await spawnBot(bench);
    const card = await driver.request(MODEL, HOST);
    const sim = bench.host(HOST).sim;
    await until(() => bench.hub.bytesServed(MODEL) >= total / 2 || undefined, {
      what: "half of the download",
      timeoutMs: 120_000,
      intervalMs: 10,
    });
    await first.kill("SIGKILL");
    progress(
      `worker killed with ${round((bench.hub.bytesServed(MODEL) / total) * 100, 0)} % of the bytes sent; restarting it`,
    );
    const second = await spawnBot(bench);
    await driver.approve(card.ts);
    await driver.outcome(card.ts, /Swapped/, 300_000);
    await stopBot(second);
    // What the download fetched: file bodies sent since the first `hf download` started (the resolve
    // step's own read of config.json, before it, is not part of the download).
    const hf = (await shimCalls(sim, "hf")).filter((c) => c.argv[0] === "download");
    const since = Math.min(...hf.map((c) => c.at));
    const served = bench.hub
      .requests()
      .filter((r) => r.repo === MODEL && r.method === "GET" && r.kind === "resolve" && r.startedAt >= since)
      .reduce((n, r) => n + r.bytesSent, 0);
    return {
      figures: { bytes_total: total, bytes_refetched: Math.max(0, served - total) },
      details: [`resume: the download got ${served} bytes from the Hub for a ${total}-byte model`],
    };
  } finally {
    await driver.close();
    await bench.stop();
  }
}
