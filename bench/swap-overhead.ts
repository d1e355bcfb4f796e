import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { HubClient } from "../src/hub/hub-client.ts";
import { createLogger } from "../src/log.ts";
import { modelDirFor } from "../src/plan/model-dir.ts";
import type { SwapRecord } from "../src/swap/swap-record.ts";
import { type Bench, startBench } from "../testbench/bench.ts";
import { makeModel } from "../testbench/hub/index.ts";
import { SwapDriver } from "../testbench/swap-driver.ts";
import { spawnBot, stopBot } from "./bot-process.ts";
import { journalTime, shimCalls, taskSpan } from "./host-timings.ts";
import { benchSpeed, type Progress, type SectionResult, type Speed, servingHost } from "./section.ts";
import { SCRIPT_STEPS, sequentialScript } from "./sequential-script.ts";
import { round } from "./stats.ts";

const run = promisify(execFile);

export interface SwapOptions {
  /** The weights' download time, set with the Hub's throttle. */
  downloadSeconds: number;
  /** The engine build (its first `import sglang`), set with the host's python import fault. */
  buildSeconds: number;
  /** The model's load time in the engine, set with the simulated SGLang's loadSeconds. */
  loadSeconds: number;
  speed: Speed;
}

export interface SwapFigures {
  wall_s: number;
  critical_path_s: number;
  overhead_ratio: number;
  sequential_script_s: number;
  vs_script_ratio: number;
}

const HOST = "gpu-1";
const MODEL = "sim-org/bench-swap-a";
/** The script's model: the same files and commit, another name (so it downloads afresh into its own directory). */
const SCRIPT_MODEL = "sim-org/bench-swap-b";
const SHA = "5a5b5c5d5e5f60616263646566676869707172a1";
const WEIGHT_BYTES = 16 * 1024 * 1024;

/**
 * One swap on the bench with fixed stage durations, approved at once, timed from the `/llm swap` to the
 * card saying Swapped. Its baselines, in the same run: the ideal critical path (download ∥ build, then
 * switch, load, sanity, benchmark) measured from the host's own records of this very swap, and the same
 * stage commands run one after another over SSH by a plain bash script.
 */
export async function benchSwap(
  options: SwapOptions,
  progress: Progress,
): Promise<SectionResult<SwapFigures>> {
  const bench = await startBench({
    ...benchSpeed(options.speed),
    logTo: "silent",
    swaps: options.speed.swaps,
    hosts: [servingHost(HOST, options.speed)],
  });
  const driver = new SwapDriver(bench);
  try {
    const model = bench.hub.addModel(
      makeModel("llama-bf16-small", { id: MODEL, gated: false, weightBytes: WEIGHT_BYTES, sha: SHA }),
    );
    bench.hub.addModel(
      makeModel("llama-bf16-small", { id: SCRIPT_MODEL, gated: false, weightBytes: WEIGHT_BYTES, sha: SHA }),
    );
    const { sim } = bench.host(HOST);
    bench.hub.setThrottle(Math.round((model.totalBytes ?? WEIGHT_BYTES) / options.downloadSeconds));
    await sim.setFault("import", { seconds: options.buildSeconds });
    await sim.setFault("sglang", { ...options.speed.engine, loadSeconds: options.loadSeconds });

    const bot = await spawnBot(bench);
    progress("the bot's swap, approved as soon as its plan is posted");
    const sent = Date.now();
    const card = await driver.request(MODEL, HOST);
    const swapId = driver.swapId(card.ts);
    await driver.approve(card.ts);
    await driver.outcome(card.ts, /Swapped/, 600_000);
    const wallMs = Date.now() - sent;
    await stopBot(bot);
    const record = await driver.record(swapId);
    if (record?.outcome !== "succeeded") throw new Error(`bench: the swap ended ${record?.outcome}`);
    const path = await criticalPath(bench, record, sent);

    progress("the same stage commands, one after another, from a bash script over SSH");
    const script = await runSequentialScript(bench, record);
    const wall = wallMs / 1000;
    return {
      figures: {
        wall_s: round(wall),
        critical_path_s: round(path.seconds),
        overhead_ratio: round(wall / path.seconds, 3),
        sequential_script_s: round(script.seconds),
        vs_script_ratio: round(wall / script.seconds, 3),
      },
      details: [
        `swap: critical path ${path.detail}`,
        `swap: beyond it ${path.overhead}`,
        `swap: script ${script.detail}`,
      ],
    };
  } finally {
    await driver.close();
    await bench.stop();
  }
}

/**
 * The ideal: the longer of download and build (each from its task's own start and exit files), then
 * from the switch's daemon-reload to the new server's "fired up" line in its journal (switch and load),
 * then the sanity and benchmark stages as long as the bot's record says they ran.
 */
async function criticalPath(
  bench: Bench,
  record: SwapRecord,
  sent: number,
  readyLine: RegExp = /fired up and ready to roll/,
) {
  const { sim } = bench.host(HOST);
  const unit = record.plan!.unitName;
  const download = await taskSpan(sim, record.id, "download");
  const build = await taskSpan(sim, record.id, "build");
  const reload = (await shimCalls(sim, "systemctl")).filter((c) => c.argv[0] === "daemon-reload").at(-1)!.at;
  const started = await journalTime(sim, unit, /^Started /);
  const ready = await journalTime(sim, unit, readyLine);
  const stage = (name: "sanity" | "benchmark") =>
    (Date.parse(record.stages[name].finishedAt!) - Date.parse(record.stages[name].startedAt!)) / 1000;
  const tasks = Math.max(download.seconds, build.seconds);
  const switchSeconds = (started - reload) / 1000;
  const loadSeconds = (ready - started) / 1000;
  const seconds = tasks + switchSeconds + loadSeconds + stage("sanity") + stage("benchmark");
  const s = (n: number) => `${round(n, 1)} s`;
  const tasksEnd = Math.max(download.end, build.end);
  return {
    seconds,
    detail: `${s(seconds)} = max(download ${s(download.seconds)}, build ${s(build.seconds)}) + switch ${s(switchSeconds)} + load ${s(loadSeconds)} + sanity ${s(stage("sanity"))} + benchmark ${s(stage("benchmark"))}`,
    overhead: [
      `request to download start ${s((Math.min(download.start, build.start) - sent) / 1000)} (resolve, preflight, plan)`,
      `tasks done to switch ${s((reload - tasksEnd) / 1000)}`,
      `ready to sanity ${s((Date.parse(record.stages.sanity.startedAt!) - ready) / 1000)}`,
      `benchmark to Swapped ${s((Date.parse(record.finishedAt ?? record.stages.benchmark.finishedAt!) - Date.parse(record.stages.benchmark.finishedAt!)) / 1000)}`,
    ].join(", "),
  };
}

/**
 * The sequential baseline on the same host, right after the bot's swap: the script model (same files,
 * another name) downloaded into its own directory, the engine built again, a switch from the bot's new
 * unit to the script's, then health, sanity and benchmark — the bot's unit text, renamed.
 */
async function runSequentialScript(bench: Bench, record: SwapRecord) {
  const host = (await bench.config()).file.hosts.find((h) => h.name === HOST)!;
  const { sim } = bench.host(HOST);
  const hub = new HubClient({ endpoint: bench.hub.url, log: createLogger({ level: "silent" }) });
  const model = await hub.resolve({ repo: SCRIPT_MODEL, revision: "main" });
  const plan = record.plan!;
  const engine = plan.engine!;
  const modelDir = modelDirFor(host.modelsDir, SCRIPT_MODEL, model.sha);
  const workDir = `${host.modelsDir}/.bench-script`;
  const buildDir = `${workDir}/engine`;
  const rename = (text: string) =>
    text
      .replaceAll(engine.buildDir, buildDir)
      .replaceAll(plan.modelDir, modelDir)
      .replaceAll(MODEL, SCRIPT_MODEL)
      .replaceAll("bench-swap-a", "bench-swap-b");
  const unitName = rename(plan.unitName);
  if (unitName === plan.unitName) throw new Error(`bench: cannot name the script's unit (${plan.unitName})`);
  const timesFile = join(bench.dir, "sequential-times.txt");
  const script = sequentialScript({
    ssh: { user: host.ssh!.user, port: host.ssh!.port, privateKeyPath: host.ssh!.privateKeyPath },
    timesFile,
    model,
    modelDir,
    workDir,
    engine: {
      buildDir,
      venv: host.venv,
      upstream: engine.upstream,
      fetchRef: engine.fullRef ?? engine.commit,
      commit: engine.commit,
      patches: host.enginePatches,
    },
    unit: { dir: host.unitDir, old: plan.unitName, name: unitName, text: rename(plan.unitText) },
    servingPort: host.servingPort,
  });
  const path = join(bench.dir, "sequential-swap.sh");
  await writeFile(path, script, { mode: 0o755 });
  const started = Date.now();
  await run("bash", [path], { maxBuffer: 64 * 1024 * 1024, timeout: 600_000 });
  const seconds = (Date.now() - started) / 1000;
  const state = await sim.unitState(unitName);
  if (state.activeState !== "active")
    throw new Error(`bench: the script's ${unitName} is ${state.activeState}`);
  const marks = (await readFile(timesFile, "utf8"))
    .trim()
    .split("\n")
    .map((line) => line.split(" "))
    .map(([step = "", at = "0"]) => ({ step, at: Number(at) }));
  const steps = SCRIPT_STEPS.map((step, i) => `${step} ${round(marks[i + 1]!.at - marks[i]!.at, 1)} s`);
  return { seconds, detail: `${round(seconds, 1)} s = ${steps.join(" + ")}` };
}

export interface VllmSwapFigures {
  wall_s: number;
  critical_path_s: number;
  overhead_ratio: number;
}

/**
 * The same swap served by vLLM (issue #15): a host whose engine is vLLM, its build (pip --target of the
 * v0.18.0 checkout with precompiled kernels) as long as SGLang's, and its load as long; the critical
 * path as for SGLang, with vLLM's "Application startup complete." as the moment it serves. No script
 * baseline: the sequential script is SGLang's stage commands.
 */
export async function benchVllmSwap(
  options: SwapOptions,
  progress: Progress,
): Promise<SectionResult<VllmSwapFigures>> {
  const speed = options.speed.engine as { msPerToken?: number; ttftMs?: number };
  const vllm = {
    loadSeconds: options.loadSeconds,
    ...(speed.msPerToken === undefined ? {} : { msPerToken: speed.msPerToken }),
    ...(speed.ttftMs === undefined ? {} : { ttftMs: speed.ttftMs }),
  };
  const bench = await startBench({
    ...benchSpeed(options.speed),
    logTo: "silent",
    swaps: options.speed.swaps,
    hosts: [servingHost(HOST, options.speed, { vllm: "only" })],
  });
  const driver = new SwapDriver(bench);
  try {
    const model = bench.hub.addModel(
      makeModel("llama-bf16-small", { id: MODEL, gated: false, weightBytes: WEIGHT_BYTES, sha: SHA }),
    );
    const { sim } = bench.host(HOST);
    bench.hub.setThrottle(Math.round((model.totalBytes ?? WEIGHT_BYTES) / options.downloadSeconds));
    await sim.setFault("pip", { seconds: options.buildSeconds });
    await sim.setFault("vllm", vllm);
    const bot = await spawnBot(bench);
    progress("the bot's vLLM swap, approved as soon as its plan is posted");
    const sent = Date.now();
    const card = await driver.request(`${MODEL} --engine-ref v0.18.0`, HOST);
    const swapId = driver.swapId(card.ts);
    await driver.approve(card.ts);
    await driver.outcome(card.ts, /Swapped/, 600_000);
    const wallMs = Date.now() - sent;
    await stopBot(bot);
    const record = await driver.record(swapId);
    if (record?.outcome !== "succeeded") throw new Error(`bench: the vLLM swap ended ${record?.outcome}`);
    if (record.plan?.engineKind !== "vllm") throw new Error("bench: the swap was not served by vLLM");
    const path = await criticalPath(bench, record, sent, /Application startup complete\./);
    const wall = wallMs / 1000;
    return {
      figures: {
        wall_s: round(wall),
        critical_path_s: round(path.seconds),
        overhead_ratio: round(wall / path.seconds, 3),
      },
      details: [`vllm: critical path ${path.detail}`, `vllm: beyond it ${path.overhead}`],
    };
  } finally {
    await driver.close();
    await bench.stop();
  }
}
