import type { Bench, ChildBot } from "../bench.ts";
import type { SwapDriver } from "../swap-driver.ts";
import { until } from "../until.ts";
import { lastingMs, type Schedule } from "./schedule.ts";

/*
 * The fault injectors. A fault strikes once (at the schedule's point) and, when it lasts, heals in the
 * background: SSH comes back, Slack answers again, Redis restarts, a stopped worker continues. Faults on
 * shared parts (the one sshd, Redis, Slack, the workers) are coordinated across schedules that run side
 * by side, so one schedule's heal never ends another's outage early. Every strike and heal is logged
 * with its time: the campaign's history of faults, as Jepsen keeps its nemesis's.
 */

export interface FaultEvent {
  at: number;
  path: number;
  host: string;
  what: string;
}

/** The bot's processes: one Slack-facing `modelswap bot` and the workers that run swaps. */
export class BotProcesses {
  bot: ChildBot | undefined;
  workers: ChildBot[] = [];
  private readonly stopped = new Set<number>();
  private spawning: Promise<void> = Promise.resolve();

  constructor(
    private readonly bench: Bench,
    private readonly count: number,
  ) {}

  async start(): Promise<void> {
    this.bot = await this.bench.spawnBot({ role: "bot", logLevel: "info" });
    for (let i = 0; i < this.count; i++) await this.spawnWorker();
  }

  /** The worker process with this pid, when it is one of ours and alive. */
  worker(pid: number): ChildBot | undefined {
    return this.workers.find((w) => w.pid === pid);
  }

  async spawnWorker(): Promise<void> {
    const next = this.spawning.then(async () => {
      this.workers.push(await this.bench.spawnBot({ role: "worker", logLevel: "info" }));
    });
    this.spawning = next.catch(() => undefined);
    await next;
  }

  /** SIGKILL (a crash: nothing cleaned up), then a new worker in its place. */
  async kill(pid: number): Promise<void> {
    const worker = this.worker(pid);
    if (worker === undefined) return;
    this.workers = this.workers.filter((w) => w !== worker);
    this.stopped.delete(pid);
    await worker.kill("SIGKILL");
    await this.spawnWorker();
  }

  /** SIGSTOP: the process is there, holds its locks and connections, and does nothing. */
  freeze(pid: number): boolean {
    if (this.worker(pid) === undefined || this.stopped.has(pid)) return false;
    process.kill(pid, "SIGSTOP");
    this.stopped.add(pid);
    return true;
  }

  thaw(pid: number): void {
    if (!this.stopped.delete(pid)) return;
    try {
      process.kill(pid, "SIGCONT");
    } catch {
      // killed meanwhile by another schedule
    }
  }

  /** Every frozen worker continues (the end of a campaign). */
  thawAll(): void {
    for (const pid of [...this.stopped]) this.thaw(pid);
  }
}

/** Shared parts taken down by several schedules at once come back only when the last one heals. */
export class SharedFaults {
  private sshDown = 0;
  private redisChain: Promise<void> = Promise.resolve();
  readonly log: FaultEvent[] = [];

  constructor(private readonly bench: Bench) {}

  note(path: number, host: string, what: string): number {
    const at = Date.now();
    this.log.push({ at, path, host, what });
    return at;
  }

  async sshCut(): Promise<void> {
    await this.bench.sshd.dropConnections();
  }

  async sshDownFor(ms: number): Promise<void> {
    this.sshDown += 1;
    if (this.sshDown === 1) await this.bench.sshd.cut();
    await sleep(ms);
    this.sshDown -= 1;
    if (this.sshDown === 0) await this.bench.sshd.start();
  }

  /**
   * redis-server stopped (or SIGKILLed), away for `ms`, started again; restarts queue one after another.
   * `down` settles once it is down, `healed` once it runs again.
   */
  redisRestart(how: "stop" | "kill", ms: number): { down: Promise<void>; healed: Promise<void> } {
    let wentDown: () => void = () => undefined;
    const down = new Promise<void>((resolve) => {
      wentDown = resolve;
    });
    const healed = this.redisChain.then(async () => {
      try {
        await (how === "stop" ? this.bench.redis.stop() : this.bench.redis.kill());
      } finally {
        wentDown();
      }
      await sleep(ms);
      await this.bench.redis.start();
    });
    this.redisChain = healed.catch(() => undefined);
    return { down, healed };
  }

  slackRefuse(kind: string, ms: number): void {
    if (kind === "503") this.bench.slack.failFor("*", "service_unavailable", { ms, status: 503 });
    else this.bench.slack.failFor("*", "internal_error", { ms });
  }

  /** Everything back: sshd listening, Slack answering (the end of a campaign). */
  async healAll(): Promise<void> {
    this.bench.slack.endOutage();
    await this.redisChain;
    this.sshDown = 0;
    await this.bench.sshd.start();
  }
}

/** What a strike needs to know about the swap it hits. */
export interface StrikeContext {
  bench: Bench;
  swaps: SwapDriver;
  processes: BotProcesses;
  shared: SharedFaults;
  host: string;
  path: number;
  swapId: string;
  /** The unit that served before the swap, and its model's repo (what clients got). */
  oldUnit: string;
  oldModel: string;
  newModel: string;
  /** The engine's timings every fault switch of the host keeps (the `sglang` key is replaced whole). */
  engine: Record<string, unknown>;
}

/** The unit the swap installs (from its plan). */
async function newUnitOf(ctx: StrikeContext): Promise<string | undefined> {
  return (await ctx.swaps.record(ctx.swapId).catch(() => undefined))?.plan?.unitName;
}

/** The last part of a repo id: how the simulated engine's `models` fault finds a model by its path. */
function pathPart(repo: string): string {
  return repo.split("/").at(-1) ?? repo;
}

/** SIGKILLs a unit's main process, waiting up to `waitMs` for it to have one; the pid killed, or 0. */
async function killUnit(ctx: StrikeContext, unit: string, waitMs: number): Promise<number> {
  const sim = ctx.bench.host(ctx.host).sim;
  const pid = await until(
    async () => {
      const state = await sim.unitState(unit);
      return state.mainPid > 0 ? state.mainPid : undefined;
    },
    { what: `a process of ${unit}`, timeoutMs: waitMs, intervalMs: 100 },
  ).catch(() => 0);
  if (pid > 0) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      return 0;
    }
  }
  return pid;
}

/**
 * Strikes the schedule's fault now; resolves once the fault is in place, with a promise that settles
 * when it has healed (at once for faults that do not last) and what was done, for the log.
 */
export async function strike(
  schedule: Schedule,
  ctx: StrikeContext,
): Promise<{ what: string; healed: Promise<void> }> {
  const sim = ctx.bench.host(ctx.host).sim;
  const done = Promise.resolve();
  switch (schedule.fault) {
    case "unit-kill":
    case "unit-crash-loop": {
      const unit = schedule.target === "new" ? await newUnitOf(ctx) : ctx.oldUnit;
      if (unit === undefined) return { what: "no new unit yet: nothing to kill", healed: done };
      const model = schedule.target === "new" ? ctx.newModel : ctx.oldModel;
      if (schedule.fault === "unit-crash-loop")
        await sim.setFault("sglang", {
          ...ctx.engine,
          models: { [pathPart(model)]: { mode: "crash-on-start" } },
        });
      // the new unit may be about to start (the switch's hold was just let go): give it a moment
      const pid = await killUnit(ctx, unit, schedule.target === "new" ? 5000 : 500);
      const crash = schedule.fault === "unit-crash-loop" ? `${model} set to crash on start; ` : "";
      return {
        what: `${crash}${pid > 0 ? `SIGKILL ${unit} (pid ${pid})` : `${unit} had no process to kill`}`,
        healed: done,
      };
    }
    case "nan":
      await sim.setFault("sglang", { ...ctx.engine, models: { [pathPart(ctx.newModel)]: { mode: "nan" } } });
      return { what: `${ctx.newModel} answers NaN from now on`, healed: done };
    case "worker-stop":
    case "worker-kill": {
      const taker = await ctx.swaps.processedBy(ctx.swapId).catch(() => undefined);
      let pid = Number(taker?.split(":").at(-1) ?? 0);
      if (ctx.processes.worker(pid) === undefined) {
        const live = ctx.processes.workers;
        pid = live[schedule.seed % Math.max(1, live.length)]?.pid ?? 0;
      }
      if (pid === 0) return { what: "no worker to hit", healed: done };
      if (schedule.fault === "worker-kill") {
        const healed = ctx.processes.kill(pid);
        return { what: `SIGKILL worker ${pid}; a new one started`, healed };
      }
      if (!ctx.processes.freeze(pid)) return { what: `worker ${pid} was already stopped`, healed: done };
      const healed = (async () => {
        // SIGCONT once another worker has taken the swap over (or it ended), bounded
        const since = Date.now();
        await until(
          async () => {
            const by = await ctx.swaps.processedBy(ctx.swapId).catch(() => undefined);
            const state = await ctx.swaps.jobState(ctx.swapId).catch(() => undefined);
            return (by !== undefined && !by.endsWith(`:${pid}`)) || state === "completed";
          },
          { what: "another worker to take the swap", timeoutMs: 20_000, intervalMs: 200 },
        ).catch(() => undefined);
        // a frozen worker left a while longer: its locks have lapsed, its late wake-up is the point
        await sleep(Math.max(0, 1000 - (Date.now() - since)));
        ctx.processes.thaw(pid);
        ctx.shared.note(ctx.path, ctx.host, `SIGCONT worker ${pid}`);
      })();
      return { what: `SIGSTOP worker ${pid}`, healed };
    }
    case "ssh-drop": {
      if (schedule.target === "cut") {
        await ctx.shared.sshCut();
        return { what: "every SSH connection cut", healed: done };
      }
      const healed = ctx.shared.sshDownFor(schedule.durationMs).then(() => {
        ctx.shared.note(ctx.path, ctx.host, "sshd back (if no other schedule holds it down)");
      });
      return { what: `sshd down and every connection cut for ${secs(schedule.durationMs)}`, healed };
    }
    case "slack-refuse":
      ctx.shared.slackRefuse(schedule.target, schedule.durationMs);
      return {
        what: `Slack refuses every call (${schedule.target}) for ${secs(schedule.durationMs)}`,
        healed: sleep(schedule.durationMs),
      };
    case "redis-restart": {
      const away = lastingMs(schedule) ?? 1000;
      const restart = ctx.shared.redisRestart(schedule.target as "stop" | "kill", away);
      await restart.down;
      const healed = restart.healed.then(() => {
        ctx.shared.note(ctx.path, ctx.host, "redis-server started again");
      });
      return {
        what: `redis-server ${schedule.target === "kill" ? "SIGKILLed" : "stopped"}, away ${secs(away)}`,
        healed,
      };
    }
  }
}

function secs(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
