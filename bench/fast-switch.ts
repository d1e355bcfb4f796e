import { clientImpact, secondsBetween } from "../src/swap/client-impact.ts";
import type { SwapRecord } from "../src/swap/swap-record.ts";
import { BENCH_WEIGHT_SCALE, type Bench, SEED_BOX_FREE_DISK_BYTES, startBench } from "../testbench/bench.ts";
import { type ClientStreamReport, startClientStream } from "../testbench/client-stream.ts";
import { makeModel } from "../testbench/hub/index.ts";
import { SwapDriver } from "../testbench/swap-driver.ts";
import { spawnBot, stopBot } from "./bot-process.ts";
import { benchSpeed, type Progress, type SectionResult, type Speed, servingHost } from "./section.ts";
import { round } from "./stats.ts";

/*
 * Issue #31's fast switching, measured: each figure against the same swap done the old way in the same
 * run: the parked rollback (swaps.sleepMode with SGLang's memory saver) and the cache-warm re-swap (the
 * units' compile caches, src/plan/engine-caches.ts) and the in-place revision update (swaps.inPlace:
 * SGLang's update_weights_from_disk into the running engine).
 */

export interface FastOptions {
  /**
   * The cold start of the model on the parked, reload and revision hosts (the sim's loadSeconds): what a
   * reload rollback pays again and what a cold swap holds clients for. The full run uses the source's own
   * (vLLM's blog: Qwen3-235B-A22B-FP8 at tp 4, 97.7 s cold, woken in 5.5 s), so the bot's own seconds weigh
   * what they would on a real host; compressed to 10 s, they were a tenth of the baseline by themselves.
   */
  coldStartSeconds: number;
  /** The warm host's weight load (its JIT is JIT_SHARE_OF_WEIGHT_LOAD times that when its caches are cold). */
  loadSeconds: number;
  /** A new client request every this many ms, through each host's front door. */
  everyMs: number;
  speed: Speed;
}

export interface FastFigures {
  /** The old unit parked, the new model fails: from the rollback's start to the held requests' release. */
  parked: { failed: number; rollback_s: number; wake_s: number };
  /** The same failed swap, the old unit stopped (no standby slot to park beside): a reload rollback. */
  reload: { failed: number; rollback_s: number };
  /** parked.rollback_s / reload.rollback_s (target ≤ 0.1). */
  rollback_ratio: number;
  /**
   * A model's load (its unit's start to healthy, the record's) the first time on a host, its kernels
   * compiled cold, and again after a swap away and back, its compile caches kept: warm_load_s / first_load_s
   * (target ≤ 0.5).
   */
  warm: { first_load_s: number; warm_load_s: number; ratio: number };
  /**
   * A new revision of the served model behind the front door: the longest a client request was held when
   * it was loaded in place, against the same model's cold swap onto the host (its first), in the same run;
   * in_place_s / cold_s (target ≤ 0.1), and the client requests that failed in the in-place one.
   */
  revision: { cold_s: number; in_place_s: number; ratio: number; failed: number };
}

/**
 * The kernels' JIT compile and warm-up against the weights' read at start, for the bench's model (NVFP4 on
 * sm_120 under SGLang): 210 s against 18 s of weight I/O, as served by hand on an 8× RTX PRO 6000 host
 * (src/plan/downtime.ts, DESIGN.md §1). What a kept compile cache saves is that part; the sim pays it as
 * `jitSeconds` when the unit's TRITON_CACHE_DIR holds no kernels (sglang-server-loading.mjs).
 */
const JIT_SHARE_OF_WEIGHT_LOAD = 210 / 18;

/**
 * The resume's cost against a cold start, from the one source that measures both for the same model:
 * vLLM's blog (2025-10-26, its chart data), Qwen3-235B-A22B-FP8 at tp 4, woken in 5.3–5.7 s against a
 * 97.7 s cold start. SGLang's resume from its CPU backup is of the same kind (weights back over PCIe:
 * 4.85 s on 8×H100, torch_memory_saver PR #86); no SGLang cold start of the same model is published.
 */
const RESUME_SHARE_OF_COLD_START = 5.5 / 97.7;

/**
 * The front doors' hold bound: a failed cold swap holds new requests through two cold starts (the new model's,
 * then the old one's reload), over 200 s at the 97.7 s cold start; 300 s failed one request of 2,048 in the
 * first full run at that scale (the machine loaded); docs/front-door.md: the plan warns when a load may outlast it.
 */
const HOLD_SECONDS = 600;

/** Checkpoints of the real 223 GB model: none fits beside another on the GPUs, so each swap is cold. */
const MODELS = {
  first: "bench-fast/Qwen3.5-397B-A17B-NVFP4",
  nan: "bench-fast/Qwen3.5-397B-A17B-NVFP4-nan",
  /** The model the warm host swaps away to and back from (FP8: no JIT of the capture's kind, a plain load). */
  away: "bench-fast/Qwen3-32B-FP8",
  /** The revision host's model: its main revision swapped in cold, then `v2` (the same files) in place. */
  revision: "bench-fast/Qwen3-32B-FP8-rev",
} as const;

/** The commits of MODELS.revision's main and v2. */
const REVISIONS = { main: "f6".repeat(20), v2: "a7".repeat(20) };

/**
 * Two hosts behind a real HAProxy, swaps.sleepMode on: `parked` has a standby slot (the old unit is parked
 * beside the new one), `reload` has none (the old unit is stopped, as a cold swap always did). On each,
 * a first swap starts a parkable unit; then a new model that answers NaN is swapped in under a client
 * stream and rolled back. The rollback's time is the record's, from its start to the front door's release
 * of the held requests to the old unit; the clients count failures.
 */
export async function benchFast(
  options: FastOptions,
  progress: Progress,
): Promise<SectionResult<FastFigures>> {
  const engineAt = (loadSeconds: number) => ({
    ...options.speed.engine,
    loadSeconds,
    resumeMs: Math.round(loadSeconds * 1000 * RESUME_SHARE_OF_COLD_START),
  });
  const engine = engineAt(options.coldStartSeconds);
  const warmEngine = engineAt(options.loadSeconds);
  // the seeds' units start at the warm host's speed (the bench waits 30 s for them); every unit a swap
  // starts on the other hosts at the cold start (set below)
  const speed = { ...options.speed, engine: warmEngine };
  const bench = await startBench({
    ...benchSpeed(options.speed),
    logTo: "silent",
    swaps: { ...options.speed.swaps, sleepMode: true },
    weightScale: BENCH_WEIGHT_SCALE,
    hosts: [
      servingHost("parked", speed, {
        frontDoor: { holdSeconds: HOLD_SECONDS, standby: true },
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
      }),
      servingHost("reload", speed, {
        frontDoor: { holdSeconds: HOLD_SECONDS },
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
      }),
      servingHost("warm", speed, { diskFreeBytes: SEED_BOX_FREE_DISK_BYTES }),
      servingHost("revision", speed, {
        frontDoor: { holdSeconds: HOLD_SECONDS },
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
      }),
    ],
  });
  for (const id of [MODELS.first, MODELS.nan])
    bench.hub.addModel(makeModel("qwen3.5-moe-nvfp4", { id, gated: false, scale: BENCH_WEIGHT_SCALE }));
  bench.hub.addModel(
    makeModel("qwen3-fp8-dense", { id: MODELS.away, gated: false, scale: BENCH_WEIGHT_SCALE }),
  );
  bench.hub.addModel(
    makeModel("qwen3-fp8-dense", {
      id: MODELS.revision,
      gated: false,
      scale: BENCH_WEIGHT_SCALE,
      revisions: REVISIONS,
    }),
  );
  for (const host of ["parked", "reload", "revision"]) await bench.host(host).sim.setFault("sglang", engine);
  const jitSeconds = round(options.loadSeconds * JIT_SHARE_OF_WEIGHT_LOAD, 1);
  await bench
    .host("warm")
    .sim.setFault("sglang", { ...warmEngine, jitSeconds, models: { "Qwen3-32B-FP8": { jitSeconds: 0 } } });
  const driver = new SwapDriver(bench);
  try {
    const bot = await spawnBot(bench);
    // a unit started parkable on each host (the seed's predates sleepMode)
    await Promise.all(["parked", "reload"].map((host) => swapOn(driver, MODELS.first, host, /Swapped/)));
    for (const host of ["parked", "reload"])
      await bench.host(host).sim.setFault("sglang", { ...engine, models: { "NVFP4-nan": { mode: "nan" } } });
    const parked = await failedSwap(bench, driver, "parked", options.everyMs);
    progress(
      `parked: rolled back in ${parked.rollbackS} s (woken in ${parked.wakeS} s), ${parked.clients.failed} requests failed`,
    );
    const reload = await failedSwap(bench, driver, "reload", options.everyMs);
    progress(`reload: rolled back in ${reload.rollbackS} s, ${reload.clients.failed} requests failed`);
    const firstLoad = loadSeconds(await driver.record(await swapOn(driver, MODELS.first, "warm", /Swapped/)));
    await swapOn(driver, MODELS.away, "warm", /Swapped/);
    const warmLoad = loadSeconds(await driver.record(await swapOn(driver, MODELS.first, "warm", /Swapped/)));
    progress(`warm: ${MODELS.first} loaded in ${firstLoad} s the first time, ${warmLoad} s back again`);
    const revision = await revisionSwaps(bench, driver, options.everyMs);
    progress(
      `revision: held ${revision.in_place_s} s in place against ${revision.cold_s} s cold, ${revision.failed} requests failed`,
    );
    await stopBot(bot);
    const figures: FastFigures = {
      parked: { failed: parked.clients.failed, rollback_s: parked.rollbackS, wake_s: parked.wakeS },
      reload: { failed: reload.clients.failed, rollback_s: reload.rollbackS },
      rollback_ratio: round(parked.rollbackS / reload.rollbackS, 3),
      warm: { first_load_s: firstLoad, warm_load_s: warmLoad, ratio: round(warmLoad / firstLoad, 3) },
      revision,
    };
    return {
      figures,
      details: [
        `fast: a cold start of ${options.coldStartSeconds} s and a resume of ${engine.resumeMs} ms (${round(RESUME_SHARE_OF_COLD_START, 3)} of it: vLLM's blog, 235B FP8 woken in 5.5 s of a 97.7 s cold start); a request every ${options.everyMs} ms through each front door: parked ${parked.clients.answered} answered, reload ${reload.clients.answered}`,
        `fast: the warm host's kernels JIT-compile in ${jitSeconds} s when its compile caches are cold (${round(JIT_SHARE_OF_WEIGHT_LOAD, 1)} × the load: NVFP4 on sm_120, 210 s against 18 s of weight I/O)`,
      ],
    };
  } finally {
    await driver.close();
    await bench.stop();
  }
}

async function swapOn(driver: SwapDriver, model: string, host: string, outcome: RegExp): Promise<string> {
  const card = await driver.request(model, host);
  await driver.approve(card.ts);
  await driver.outcome(card.ts, outcome, 600_000);
  return driver.swapId(card.ts);
}

/** The NaN model swapped in under a client stream and rolled back: the rollback's time and the clients' account. */
async function failedSwap(
  bench: Bench,
  driver: SwapDriver,
  host: string,
  everyMs: number,
): Promise<{ rollbackS: number; wakeS: number; clients: ClientStreamReport }> {
  const clients = startClientStream(bench.host(host).frontDoor!.url, { everyMs, timeoutMs: 600_000 });
  const id = await swapOn(driver, MODELS.nan, host, /Rolled back/);
  // a second of traffic on the old model again, then the stream's account
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const report = await clients.stop();
  const record = await driver.record(id);
  return {
    rollbackS: rollbackSeconds(record, host),
    wakeS: record?.switch?.parked?.wakeSeconds ?? 0,
    clients: report,
  };
}

/**
 * MODELS.revision's main swapped in cold (from the seed's model), then its v2 loaded in place under a client
 * stream: the longest each held a request (the record's front-door hold to release, the card's figure).
 */
async function revisionSwaps(
  bench: Bench,
  driver: SwapDriver,
  everyMs: number,
): Promise<FastFigures["revision"]> {
  const cold = await driver.record(await swapOn(driver, MODELS.revision, "revision", /Swapped/));
  const clients = startClientStream(bench.host("revision").frontDoor!.url, { everyMs, timeoutMs: 600_000 });
  const next = await driver.record(await swapOn(driver, `${MODELS.revision}@v2`, "revision", /Swapped/));
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const report = await clients.stop();
  if (next?.switch?.inPlace?.at === undefined)
    throw new Error(
      `the swap to ${MODELS.revision}@v2 was not loaded in place (${next?.plan?.clients?.inPlace?.why})`,
    );
  const [coldS, inPlaceS] = [cold, next].map((r) => round(clientImpact(r!)?.gapSeconds ?? Number.NaN, 2));
  return {
    cold_s: coldS!,
    in_place_s: inPlaceS!,
    ratio: round(inPlaceS! / coldS!, 3),
    failed: report.failed,
  };
}

/** A swap's load: its new unit's start to healthy, the phase its thread's clients line reports. */
function loadSeconds(record: SwapRecord | undefined): number {
  const seconds = record === undefined ? undefined : clientImpact(record)?.phases.load;
  if (seconds === undefined) throw new Error(`swap ${record?.id} has no start or healthy time`);
  return round(seconds, 2);
}

function rollbackSeconds(record: SwapRecord | undefined, host: string): number {
  const began = record?.rollbackStartedAt;
  const released = record?.frontDoor?.releasedAt;
  if (began === undefined || released === undefined)
    throw new Error(
      `the swap on ${host} has no rollback start or front-door release (outcome ${record?.outcome})`,
    );
  if ((host === "parked") !== (record?.switch?.parked?.sane === true))
    throw new Error(
      `the swap on ${host} ${host === "parked" ? "did not wake a parked unit" : "parked its old unit"}`,
    );
  return round(secondsBetween(began, released)!, 2);
}
