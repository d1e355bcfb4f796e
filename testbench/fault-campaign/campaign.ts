import { type Bench, type BenchHostSpec, CHANNEL, QUICK_BENCH, startBench, USERS } from "../bench.ts";
import { benchFrontDoor, slotStates } from "../front-door-watch.ts";
import type { SimGpuHost } from "../gpu-host/index.ts";
import { addSimModel, SwapDriver } from "../swap-driver.ts";
import { until } from "../until.ts";
import { type CheckInput, judge, servedBy, servedText, type Verdict } from "./checker.ts";
import { BotProcesses, type FaultEvent, SharedFaults, sleep, strike } from "./faults.ts";
import {
  ask,
  cardOutcome,
  clientUrl,
  finalLineClaim,
  finalLineOf,
  ledgerRow,
  liveUnits,
  lookAtHost,
  settle,
} from "./observe.ts";
import {
  campaignSchedules,
  describeSchedule,
  FAULT_NAMES,
  type Fault,
  MODES,
  type Mode,
  type Point,
  replayCommand,
  type Schedule,
} from "./schedule.ts";

/*
 * The randomized fault campaign (issue 27 §6; FoundationDB's simulation testing and Jepsen are the
 * anchors): one bench with a few hosts of each mode, the real bot as child processes (one Slack-facing
 * `modelswap bot`, two workers), and a seeded list of schedules, each a swap on a free host of its mode
 * with one fault struck at one of its steps. After the swap's last message the checker (checker.ts)
 * compares what the bot said with what the host serves. Hosts of different modes run side by side;
 * every schedule has a deadline, and the campaign a budget.
 */

export interface CampaignOptions {
  /** The campaign's seed (fast-check's): the same seed gives the same schedules. */
  seed: number;
  runs: number;
  /** Only these schedules of the seed's campaign (fast-check's `path`: their index). */
  paths?: readonly number[];
  /** Hosts per mode: how many schedules of one mode run at once (default 1: three at a time). */
  hostsPerMode?: number;
  /** Worker processes (default 2: one can be stopped while the other takes its swaps over). */
  workers?: number;
  /** A schedule's bound from its request to its last message (default 150 s). */
  deadlineSeconds?: number;
  /** No schedule starts after this many seconds from the campaign's start (default: no budget). */
  budgetSeconds?: number;
  progress?: (line: string) => void;
}

export interface ScheduleResult {
  path: number;
  schedule: Schedule;
  host: string;
  swapId?: string;
  newModel?: string;
  oldModel?: string;
  /** The mode the plan chose (its Clients line), when it differs from the schedule's. */
  plannedAs?: Mode;
  /** When the fault struck, the step the swap was at then, and what was done. */
  struckAt?: number;
  struckStep?: string;
  struck?: string;
  /** When the swap was requested and when its last message came (or the schedule gave up). */
  startedAt?: number;
  endedAt?: number;
  /** Faults other schedules struck on shared parts (workers, sshd, Redis, Slack) while this swap ran. */
  alsoStruck?: string[];
  /** The bot's answer to the `/llm swap` that did not say it was queued, when it was queued all the same. */
  answeredFirst?: string;
  /** What the bot answered a second `/llm swap` of the host while this swap ran (it must refuse). */
  secondSwap?: "refused" | "queued" | "unknown";
  /** The swap's last message (its text) and the ledger's outcome. */
  finalLine?: string;
  ledger?: string;
  verdict?: Verdict;
  /** What the host needed before this schedule could run (the previous one left it so), if anything. */
  repairedBefore?: string;
  /** The schedule could not be played (the bench itself failed): not a finding about the bot. */
  error?: string;
  elapsedMs: number;
  replay: string;
}

export interface CampaignReport {
  seed: number;
  runs: number;
  results: ScheduleResult[];
  lies: number;
  outagesByBot: number;
  unfinished: number;
  stale: number;
  invariantBreaks: number;
  errors: number;
  notRun: number;
  wallMs: number;
  byMode: Record<Mode, number>;
  byFault: Record<Fault, number>;
  /** The second `/llm swap` asked while each swap ran: refused (as it must be), queued, or unknown. */
  secondSwaps: { refused: number; queued: number; unknown: number };
  faultLog: FaultEvent[];
}

/** The simulated engine's timings: a load of a second, quick tokens (the whole swap takes ~15 s). */
export const CAMPAIGN_ENGINE = { loadSeconds: 1, warmupMs: 50, msPerToken: 0.5, ttftMs: 1 };

/** The bot's `swaps:` settings: quick takeovers (lock 5 s), a short flip-back window. */
export const CAMPAIGN_SWAPS = {
  pollSeconds: 0.3,
  cardUpdateSeconds: 1,
  lockSeconds: 5,
  stalledCheckSeconds: 1,
  healthTimeoutSeconds: 30,
  hostRetrySeconds: 20,
  flipBackSeconds: 4,
};

function hostSpec(mode: Mode, name: string): BenchHostSpec {
  const base: BenchHostSpec = {
    name,
    gpus: "8x-rtx-pro-6000-blackwell",
    serving: { preset: "qwen3-fp8-dense" },
    faults: { sglang: CAMPAIGN_ENGINE },
    waitHealthy: true,
  };
  if (mode === "door") return { ...base, frontDoor: { holdSeconds: 30, drainSeconds: 5 } };
  if (mode === "bluegreen")
    return {
      ...base,
      serving: { preset: "qwen3-fp8-dense", tp: 4 },
      frontDoor: { holdSeconds: 30, drainSeconds: 5, standby: true },
    };
  return base;
}

interface World {
  bench: Bench;
  swaps: SwapDriver;
  processes: BotProcesses;
  shared: SharedFaults;
  options: CampaignOptions;
  /** Hosts taken out of the campaign (a swap that never ended holds them, or no repair helped). */
  quarantined: Set<string>;
}

export async function runCampaign(options: CampaignOptions): Promise<CampaignReport> {
  const started = Date.now();
  const progress = options.progress ?? (() => undefined);
  const planned = campaignSchedules(options.seed, options.runs, options.paths);
  const perMode = options.hostsPerMode ?? 1;
  const wanted = MODES.filter((m) => planned.some((p) => p.schedule.mode === m));
  const hosts = wanted.flatMap((mode) =>
    Array.from({ length: perMode }, (_, i) => ({ mode, name: `${mode}-${i + 1}` })),
  );
  const bench = await startBench({
    ...QUICK_BENCH,
    logTo: "silent",
    swaps: CAMPAIGN_SWAPS,
    connectTimeoutSeconds: 2,
    hosts: hosts.map((h) => hostSpec(h.mode, h.name)),
  });
  const swaps = new SwapDriver(bench, { postWithinMs: 60_000 });
  const processes = new BotProcesses(bench, options.workers ?? 2);
  const shared = new SharedFaults(bench);
  const world: World = { bench, swaps, processes, shared, options, quarantined: new Set() };
  const results: ScheduleResult[] = [];
  let notRun = 0;
  try {
    await processes.start();
    progress(
      `seed ${options.seed}: ${planned.length} schedules on ${hosts.length} hosts (${hosts.map((h) => h.name).join(", ")})`,
    );
    const queues = new Map<Mode, typeof planned>(
      MODES.map((m) => [m, planned.filter((p) => p.schedule.mode === m)]),
    );
    await Promise.all(
      hosts.map(async ({ mode, name }) => {
        const queue = queues.get(mode)!;
        for (;;) {
          const next = queue.shift();
          if (next === undefined) return;
          const overBudget =
            options.budgetSeconds !== undefined && Date.now() - started > options.budgetSeconds * 1000;
          if (overBudget || world.quarantined.has(name)) {
            notRun += 1;
            continue;
          }
          const result = await runSchedule(world, name, next.path, next.schedule);
          results.push(result);
          progress(resultLine(result));
        }
      }),
    );
  } finally {
    processes.thawAll();
    await shared.healAll().catch(() => undefined);
    await swaps.close();
    await bench.stop();
  }
  results.sort((a, b) => a.path - b.path);
  const sharedFaults = new Set(["worker-stop", "worker-kill", "ssh-drop", "slack-refuse", "redis-restart"]);
  for (const r of results) {
    if (r.startedAt === undefined) continue;
    const from = r.startedAt;
    const to = r.endedAt ?? from;
    const others = shared.log.filter((e) => e.path !== r.path && e.at >= from && e.at <= to);
    const struckShared = others.filter((e) =>
      results.some((o) => o.path === e.path && sharedFaults.has(o.schedule.fault)),
    );
    if (struckShared.length > 0) r.alsoStruck = struckShared.map((e) => `#${e.path}: ${e.what}`);
  }
  const judged = results.filter((r) => r.verdict !== undefined);
  const count = <K extends string>(keys: readonly K[], of: (r: ScheduleResult) => K) =>
    Object.fromEntries(keys.map((k) => [k, results.filter((r) => of(r) === k).length])) as Record<K, number>;
  return {
    seed: options.seed,
    runs: planned.length,
    results,
    lies: judged.filter((r) => r.verdict!.lies.length > 0).length,
    outagesByBot: judged.filter((r) => r.verdict!.outageByBot).length,
    unfinished: judged.filter((r) => r.verdict!.unfinished).length,
    stale: judged.filter((r) => r.verdict!.stale.length > 0).length,
    invariantBreaks: judged.filter((r) => r.verdict!.invariants.length > 0).length,
    errors: results.filter((r) => r.error !== undefined).length,
    notRun,
    wallMs: Date.now() - started,
    byMode: count(MODES, (r) => r.schedule.mode),
    byFault: count(FAULT_NAMES, (r) => r.schedule.fault),
    secondSwaps: {
      refused: results.filter((r) => r.secondSwap === "refused").length,
      queued: results.filter((r) => r.secondSwap === "queued").length,
      unknown: results.filter((r) => r.secondSwap === "unknown").length,
    },
    faultLog: shared.log,
  };
}

/** One line per schedule, for the progress and the report. */
export function resultLine(r: ScheduleResult): string {
  const head = `#${r.path} ${r.host} ${describeSchedule(r.schedule)}`;
  if (r.error !== undefined) return `${head}: not played (${r.error})`;
  const v = r.verdict;
  if (v === undefined) return `${head}: no verdict`;
  const flags = [
    v.lies.length > 0 ? `LIE ×${v.lies.length}` : "",
    v.outageByBot ? "OUTAGE BY THE BOT" : "",
    v.unfinished ? "UNFINISHED" : "",
    v.invariants.length > 0 ? `invariant: ${v.invariants.join("; ")}` : "",
    v.strayUnits.length > 0 ? `units left running: ${v.strayUnits.join(", ")}` : "",
    r.secondSwap !== undefined && r.secondSwap !== "refused" ? `second /llm swap: ${r.secondSwap}` : "",
  ].filter(Boolean);
  const said = r.finalLine === undefined ? "no final line" : r.finalLine.slice(0, 90).replace(/\s+/g, " ");
  return `${head} (struck at ${r.struckStep ?? "—"}): “${said}” · ${servedText(v.served)}${flags.length > 0 ? ` · ${flags.join(" · ")}` : ""} [${(r.elapsedMs / 1000).toFixed(0)} s]`;
}

// ------------------------------------------------------------------------------------------ a schedule

async function runSchedule(
  world: World,
  host: string,
  path: number,
  schedule: Schedule,
): Promise<ScheduleResult> {
  const { bench, swaps, options } = world;
  const t0 = Date.now();
  const deadline = t0 + (options.deadlineSeconds ?? 150) * 1000;
  const result: ScheduleResult = {
    path,
    schedule,
    host,
    elapsedMs: 0,
    replay: replayCommand(options.seed, path),
  };
  const sim = bench.host(host).sim;
  const holds: string[] = [];
  let healed: Promise<void> = Promise.resolve();
  try {
    const before = await ensureServing(world, host);
    if (before.repaired !== undefined) result.repairedBefore = before.repaired;
    result.oldModel = before.model;
    const newModel = addSimModel(bench, `camp-r${path}-m`);
    result.newModel = newModel;
    const door = bench.host(host).frontDoor !== undefined ? watchReadySlots(bench, host) : undefined;
    result.startedAt = Date.now();
    const { ts: cardTs, answeredFirst } = await requestSwap(world, newModel, host);
    if (answeredFirst !== undefined) result.answeredFirst = answeredFirst;
    const swapId = swaps.swapId(cardTs);
    result.swapId = swapId;
    const plan = JSON.stringify(await swaps.plan(cardTs));
    const plannedAs: Mode = /blue\/green on spare GPUs/.test(plan)
      ? "bluegreen"
      : /cold swap behind the front door/.test(plan)
        ? "door"
        : "cold";
    if (plannedAs !== schedule.mode) result.plannedAs = plannedAs;
    const ended = async () =>
      finalLineOf(bench, cardTs) !== undefined ||
      (await swaps.record(swapId).catch(() => undefined))?.outcome !== undefined;
    // the switch is reached by holding its `systemctl enable --now` (set before the approval lets it run)
    if (schedule.point === "switch") {
      await sim.hold("systemctl", " enable --now");
      holds.push("systemctl");
    }
    await approveSwap(world, cardTs, swapId);
    const reached = await reach(world, host, swapId, schedule.point, plannedAs, ended, holds, deadline);
    const ctx = {
      bench,
      swaps,
      processes: world.processes,
      shared: world.shared,
      host,
      path,
      swapId,
      oldUnit: before.unit,
      oldModel: before.model,
      newModel,
      engine: CAMPAIGN_ENGINE,
    };
    if (reached) {
      // a fault on the new unit at the switch falls just after it starts: the held start goes first
      const newUnitFault =
        ["unit-kill", "unit-crash-loop", "nan"].includes(schedule.fault) && schedule.target === "new";
      if (newUnitFault && schedule.point === "switch") await releaseAll(sim, holds);
      result.struckStep = (await swaps.record(swapId).catch(() => undefined))?.step;
      result.struckAt = Date.now();
      const struck = await strike(schedule, ctx);
      world.shared.note(path, host, struck.what);
      result.struck = struck.what;
      healed = struck.healed;
    }
    // one swap per host: a second request now must be refused
    const secondSwap = reached ? await askSecondSwap(world, host, path, swapId) : undefined;
    result.secondSwap = secondSwap?.answer;
    await releaseAll(sim, holds);
    // the swap's end: its last message, broadcast from the thread
    let line = await until(() => finalLineOf(bench, cardTs), {
      what: "the final line",
      timeoutMs: Math.max(1000, deadline - Date.now()),
      intervalMs: 200,
    }).catch(() => undefined);
    await Promise.race([healed, sleep(30_000)]);
    if (line === undefined) line = await cancelStuck(world, host, swapId, cardTs);
    result.endedAt = Date.now();
    const claim = line === undefined ? undefined : finalLineClaim(line, before.model);
    result.finalLine = claim?.text;
    const samples = await settle(bench, host, claim?.serves ?? { kind: "unknown" });
    const asked = claim === undefined ? undefined : await ledgerRow(bench, swaps, host, newModel);
    const ledger = asked?.row;
    result.ledger =
      asked === undefined ? undefined : `${asked.row.outcome} ${asked.row.model} (from ${asked.via})`;
    const seen = (await door?.stop()) ?? [];
    // the card is edited after the thread's events: after a Slack outage, or a worker killed beside it, it
    // catches up within the reporter's backoff (at most 30 s). Until then it may show the rollback under way
    // (a stage ❌ and its reason: "failed"), which is not its outcome: what counts is what it comes to say,
    // and a card that never comes to say what the final line says is caught when the wait runs out.
    const card =
      line === undefined
        ? cardOutcome(bench, cardTs)
        : await until(
            () => {
              const o = cardOutcome(bench, cardTs);
              return o === claim?.outcome && o;
            },
            {
              what: "the card's outcome",
              timeoutMs: 40_000,
              intervalMs: 250,
            },
          ).catch(() => cardOutcome(bench, cardTs));
    result.verdict = judge({
      schedule,
      newModel,
      oldModel: before.model,
      struckAt: result.struckAt,
      finalLine: claim,
      card,
      ledger,
      samples,
      withoutReadySlot: seen,
      cards: swaps.cardsOf(swapId).length,
      secondSwap,
      ...(result.answeredFirst === undefined ? {} : { requestAnswered: result.answeredFirst }),
    });
  } catch (error) {
    result.error = error instanceof Error ? error.message.split("\n")[0] : String(error);
    // a swap the schedule could not follow is ended, so that it does not hold the host
    if (result.swapId !== undefined) await endAbandoned(world, host, result.swapId);
  } finally {
    await releaseAll(sim, holds).catch(() => undefined);
    await Promise.race([healed.catch(() => undefined), sleep(30_000)]);
    // the model faults end with the schedule; what they broke is repaired before the host's next one
    await sim.setFault("sglang", CAMPAIGN_ENGINE).catch(() => undefined);
    result.elapsedMs = Date.now() - t0;
  }
  return result;
}

/**
 * `/llm swap`, asked again while the bot answers that its queue is away (another schedule restarts Redis).
 * A host still held by an earlier swap (one the campaign gave up on) is freed with `/llm cancel` first. A
 * request the bot answered as not queued (or too late: Slack shows the user `operation_timeout`) that it
 * queued all the same — the next request finds the host busy with this very model — is followed, and
 * what it answered is kept (`answeredFirst`): the checker's concern. A request answered as not queued and
 * queued by a later try is no such case.
 */
async function requestSwap(
  world: World,
  model: string,
  host: string,
): Promise<{ ts: string; answeredFirst?: string }> {
  const { bench, swaps } = world;
  const end = Date.now() + 90_000;
  let cancelled = false;
  const answers: string[] = [];
  for (;;) {
    const ack = await bench.slack.command(USERS.alice, `swap ${model} --host ${host}`, { channel: CHANNEL });
    const text = ack.ackResponse?.text ?? "";
    const queued = /^🔄 Swap queued.*\(swap `(sw-[a-z0-9-]+)`\)/.exec(text)?.[1];
    const busy = /is busy: swap `(sw-[a-z0-9-]+)` \((.+?)\)|locked by swap `(sw-[a-z0-9-]+)`/.exec(text);
    const holder = busy?.[1] ?? busy?.[3];
    // queued now; or busy with our own model: an earlier request, answered as not queued, was queued after all
    const ours = busy?.[2] === model && holder !== undefined;
    const id = ack.status === 200 && queued !== undefined ? queued : ours ? holder : undefined;
    if (id !== undefined) {
      const card = await bench.slack.waitFor(() => swaps.cardsOf(id)[0], {
        what: `the card of swap ${id}`,
        timeoutMs: 60_000,
      });
      // which of the earlier answers was the request that queued it is not known: all are said
      return {
        ts: card.ts,
        ...(ours && answers.length > 0 ? { answeredFirst: answers.join("; then ") } : {}),
      };
    }
    const answered = `${ack.timedOut ? `no answer within Slack's 3 s (operation_timeout), ` : ""}HTTP ${ack.status}: ${text || ack.networkError || "(empty)"}`;
    if (holder === undefined) answers.push(answered);
    if (Date.now() > end) throw new Error(`/llm swap ${model} --host ${host} was not queued: ${answered}`);
    if (holder !== undefined && !cancelled) {
      // an earlier swap the campaign gave up on still holds the host
      cancelled = true;
      await bench.slack.command(USERS.alice, `cancel ${holder}`, { channel: CHANNEL }).catch(() => undefined);
    } else if (
      holder === undefined &&
      ack.status === 200 &&
      !ack.timedOut &&
      !/QUEUE_UNAVAILABLE|unavailable/i.test(text)
    )
      throw new Error(`/llm swap ${model} --host ${host} was not queued: ${answered}`);
    await sleep(1000);
  }
}

/**
 * `/llm swap` of the host while its swap runs, as a second user would try: the bot must refuse it (the
 * host is busy). A second swap it queued anyway is cancelled at once (the invariant's break is reported).
 */
async function askSecondSwap(
  world: World,
  host: string,
  path: number,
  swapId: string,
): Promise<NonNullable<CheckInput["secondSwap"]>> {
  const { bench, swaps } = world;
  const model = addSimModel(bench, `camp-r${path}-second`);
  const ack = await bench.slack
    .command(USERS.alice, `swap ${model} --host ${host}`, { channel: CHANNEL })
    .catch((error: Error) => ({ status: 0, ackResponse: { text: error.message } }));
  const answeredAt = Date.now();
  const text = ack.ackResponse?.text ?? "";
  const queued = /\(swap `(sw-[a-z0-9-]+)`\)/.exec(text)?.[1];
  if (/Swap queued/.test(text) && queued !== undefined) {
    await bench.slack.command(USERS.alice, `cancel ${queued}`, { channel: CHANNEL }).catch(() => undefined);
    // the first swap may have ended just before (its end is saved with the host's release)
    const first = await swaps.record(swapId).catch(() => undefined);
    const endedBefore = first?.finishedAt !== undefined && Date.parse(first.finishedAt) <= answeredAt;
    return endedBefore
      ? { answer: "unknown", text: `${text} (the first swap had ended)` }
      : { answer: "queued", text };
  }
  return { answer: /is busy|is locked by/.test(text) ? "refused" : "unknown", text };
}

/**
 * Bob's ✅ on the plan; then, until a decision is recorded, a click on its Approve button. A reaction the
 * bot could not take (Redis away) is answered with an error, Slack would retry it only a minute later,
 * and a second ✅ from the same user is no new event; a click is.
 */
async function approveSwap(world: World, cardTs: string, swapId: string): Promise<void> {
  const { swaps, bench } = world;
  const end = Date.now() + 90_000;
  for (let attempt = 0; ; attempt++) {
    if (attempt === 0) await swaps.approve(cardTs).catch(() => undefined);
    else {
      const plan = await swaps.plan(cardTs).catch(() => undefined);
      if (plan !== undefined)
        await bench.slack.clickButton(USERS.bob, CHANNEL, plan.ts, "swap_approve").catch(() => undefined);
    }
    const decided = await until(() => swaps.decision(swapId).catch(() => undefined), {
      what: `a decision on ${swapId}`,
      timeoutMs: 5000,
      intervalMs: 100,
    }).catch(() => undefined);
    if (decided !== undefined) return;
    if (Date.now() > end) throw new Error(`no decision was recorded on ${swapId}'s plan in 90 s`);
  }
}

/**
 * Waits until the swap is at `point` (its record's step), holding the command the step runs where the
 * step is too short to be caught by looking (the sanity check's `curl … /generate`, the release's
 * `socat`). False when the swap ended first, or the deadline came.
 */
async function reach(
  world: World,
  host: string,
  swapId: string,
  point: Point,
  mode: Mode,
  ended: () => Promise<boolean>,
  holds: string[],
  deadline: number,
): Promise<boolean> {
  const { swaps, bench } = world;
  const sim = bench.host(host).sim;
  const atStep = (steps: readonly string[]) =>
    until(
      async () => {
        const record = await swaps.record(swapId).catch(() => undefined);
        if (record?.outcome !== undefined) return "ended";
        return record !== undefined && steps.includes(record.step) ? "reached" : undefined;
      },
      { what: `step ${steps.join("/")}`, timeoutMs: Math.max(1000, deadline - Date.now()), intervalMs: 40 },
    ).catch(() => "late" as const);
  const held = async (command: string) => {
    for (;;) {
      if (
        await sim.waitHeld(command, 500).then(
          () => true,
          () => false,
        )
      )
        return true;
      if ((await ended()) || Date.now() > deadline) return false;
    }
  };
  switch (point) {
    case "switch":
      return await held("systemctl");
    case "health":
    case "benchmark":
    case "retire":
      return (await atStep([point])) === "reached";
    case "sanity": {
      if ((await atStep(["health", "sanity"])) !== "reached") return false;
      await sim.hold("curl", "/generate ");
      holds.push("curl");
      return await held("curl");
    }
    case "release": {
      // the step before the release: nothing else steers the front door until the release does
      const before = mode === "bluegreen" ? ["benchmark"] : ["sanity"];
      if ((await atStep(before)) !== "reached") return false;
      await sim.hold("socat");
      holds.push("socat");
      return await held("socat");
    }
  }
}

async function releaseAll(sim: SimGpuHost, holds: string[]): Promise<void> {
  for (const command of holds.splice(0)) await sim.release(command);
}

/** A swap past its deadline: cancelled as a user would; its final line, if it comes within a minute. */
async function cancelStuck(world: World, host: string, swapId: string, cardTs: string) {
  const { bench } = world;
  await bench.slack.command(USERS.alice, `cancel ${swapId}`, { channel: CHANNEL }).catch(() => undefined);
  const line = await until(() => finalLineOf(bench, cardTs), {
    what: "the final line after a cancel",
    timeoutMs: 60_000,
    intervalMs: 500,
  }).catch(() => undefined);
  if (line === undefined) world.quarantined.add(host);
  return line;
}

/** Ends a swap the schedule gave up on (`/llm cancel`), or leaves its host out of the campaign. */
async function endAbandoned(world: World, host: string, swapId: string): Promise<void> {
  const { bench, swaps } = world;
  const ended = async () => (await swaps.record(swapId).catch(() => undefined))?.outcome !== undefined;
  if (await ended()) return;
  await bench.slack.command(USERS.alice, `cancel ${swapId}`, { channel: CHANNEL }).catch(() => undefined);
  const done = await until(ended, { what: `${swapId} to end`, timeoutMs: 60_000, intervalMs: 500 }).catch(
    () => false,
  );
  if (!done) world.quarantined.add(host);
}

/** The front door's slot states looked at every 150 ms; the looks where no slot was ready. */
function watchReadySlots(bench: Bench, host: string): { stop(): Promise<Record<string, string>[]> } {
  const empty: Record<string, string>[] = [];
  let watching = true;
  const looking = (async () => {
    while (watching) {
      const states = await slotStates(bench, host).catch(() => undefined);
      if (states !== undefined && !Object.values(states).includes("ready")) empty.push(states);
      await sleep(150);
    }
  })();
  return {
    async stop() {
      watching = false;
      await looking;
      return empty;
    },
  };
}

// ------------------------------------------------------------------------------------------ repairs

/**
 * The host before a schedule: it must serve one sane model from one unit, its front door on that unit.
 * What an earlier schedule left otherwise is repaired as an operator would (the unit the bot believes
 * serves is started, every other one stopped, the front door pointed at it), and said.
 */
async function ensureServing(
  world: World,
  host: string,
): Promise<{ model: string; unit: string; repaired?: string }> {
  const { bench } = world;
  const look = await lookAtHost(bench, host);
  const served = servedBy(look);
  const active = look.units.filter((u) => u.activeState === "active");
  const slots = look.slots;
  const slotsOk =
    slots === undefined ||
    (slots.hold !== "ready" && Object.entries(slots).filter(([, s]) => s === "ready").length === 1);
  if (served.kind === "model" && active.length === 1 && look.units.length === 1 && slotsOk)
    return { model: served.model, unit: active[0]!.unit };
  const why = `${servedText(served)}; units ${look.units.map((u) => `${u.unit} ${u.activeState}/${u.subState}`).join(", ") || "none"}${slots === undefined ? "" : `; slots ${JSON.stringify(slots)}`}`;
  const fixed = await repair(world, host);
  return { ...fixed, repaired: why };
}

async function repair(world: World, host: string): Promise<{ model: string; unit: string }> {
  const { bench, swaps } = world;
  const h = bench.host(host);
  const sim = h.sim;
  const serving = await (await swaps.store()).hosts.serving(host);
  const unit = serving?.unit ?? h.unit;
  const port = serving?.port ?? h.servingPort;
  await sim.setFault("sglang", CAMPAIGN_ENGINE);
  for (const u of await liveUnits(bench, host))
    if (u.unit !== unit) await sim.systemctl("disable", "--now", u.unit);
  await sim.systemctl("reset-failed", unit);
  await sim.systemctl("enable", unit);
  await sim.systemctl("restart", unit);
  await until(
    async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.status === 200,
    { what: `${host}: ${unit} healthy on port ${port} after a repair`, timeoutMs: 30_000, intervalMs: 200 },
  ).catch((error: Error) => {
    world.quarantined.add(host);
    throw error;
  });
  if (h.frontDoor !== undefined) {
    const door = benchFrontDoor(bench, host);
    const servers = await door.servers();
    const slot = servers.find((s) => s.name !== "hold" && s.port === port);
    if (slot === undefined) throw new Error(`${host}: no front door slot points at port ${port}`);
    await door.setState(slot.name, "ready");
    for (const s of servers)
      if (s.name !== slot.name && s.state !== "maint") await door.setState(s.name, "maint");
  }
  const answer = await ask(clientUrl(bench, host), 5000);
  if (answer.status !== 200 || answer.model === undefined) {
    world.quarantined.add(host);
    throw new Error(`${host}: still nothing serves after a repair (${answer.status} ${answer.error ?? ""})`);
  }
  return { model: answer.model, unit };
}
