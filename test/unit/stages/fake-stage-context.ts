import { RunningSwap } from "../../../jobs/swap/swap-state.ts";
import type { Clock } from "../../../src/clock.ts";
import { fileSchema, type HostConfig } from "../../../src/config/file-schema.ts";
import { sglangEngine } from "../../../src/engine/sglang/sglang-engine.ts";
import { shuttingDown } from "../../../src/errors.ts";
import type { DetachedStatus } from "../../../src/host/detached-task.ts";
import type { ShellCommand } from "../../../src/host/shell-quote.ts";
import { commandFailed, type ExecOptions, type ExecResult } from "../../../src/host/transport.ts";
import type { ModelInfo, ModelRef } from "../../../src/hub/types.ts";
import { createLogger } from "../../../src/log.ts";
import { catalogueRecipes } from "../../../src/plan/catalogue.ts";
import type { SwapPlan } from "../../../src/plan/types.ts";
import type { AuditEvent } from "../../../src/store/audit-log.ts";
import type { LastBenchmark, ServingState } from "../../../src/store/host-state.ts";
import { changeCommand } from "../../../src/swap/change-command.ts";
import type { StageContext, StageSettings } from "../../../src/swap/stage-context.ts";
import type { StoredSwapEvent } from "../../../src/swap/swap-events.ts";
import type { Decision, SwapRecord } from "../../../src/swap/swap-record.ts";
import { aRecord } from "../../support/records.ts";

/**
 * A plain fake of what a stage gets (src/swap/stage-context.ts), for unit tests of the stages: a record
 * held in memory, a host whose commands answer what the test scripted, a clock the test moves (a sleep
 * moves it), and the events, audit entries and checkpoints the stage produced. No Redis, no SSH, no Slack.
 */

/** A command's answer: its output and exit status (0 unless said), or a thrown error. */
export type Answer = Partial<ExecResult> | Error;
type Responder = (command: string, options: ExecOptions | undefined) => Answer;

export class FakeHost {
  /** Every command run, in order (its text as the shell would get it), with its stdin. */
  readonly commands: { text: string; stdin?: string }[] = [];
  /** Detached tasks started: directory → the script and the secrets it was given (the latest start). */
  readonly started = new Map<string, { script: string; secrets: Record<string, string> }>();
  /** Every start, in order (a task started twice in one directory is here twice). */
  readonly starts: { dir: string; script: string; secrets: Record<string, string> }[] = [];
  readonly stopped: string[] = [];
  /** What taskStatus answers per task directory (default: missing until started, then running). */
  readonly status = new Map<string, DetachedStatus>();
  /** Small files a task wrote (readTaskFile). */
  readonly files = new Map<string, string>();
  private readonly responders: { pattern: RegExp; answer: Responder }[] = [];

  /** Commands matching `pattern` answer this (the latest rule that matches wins). */
  on(pattern: RegExp, answer: Answer | Responder): this {
    this.responders.unshift({
      pattern,
      answer: typeof answer === "function" && !(answer instanceof Error) ? answer : () => answer,
    });
    return this;
  }

  ran(pattern: RegExp): string[] {
    return this.commands.map((c) => c.text).filter((text) => pattern.test(text));
  }

  exec(command: ShellCommand, options?: ExecOptions): ExecResult {
    this.commands.push({
      text: command.text,
      ...(options?.stdin === undefined ? {} : { stdin: options.stdin }),
    });
    const answer =
      this.responders.find((r) => r.pattern.test(command.text))?.answer(command.text, options) ?? {};
    if (answer instanceof Error) throw answer;
    return { code: 0, signal: null, stdout: "", stderr: "", durationMs: 1, ...answer };
  }
}

export class FakeClock implements Clock {
  constructor(public time = Date.parse("2026-12-01T12:00:00.000Z")) {}
  now(): number {
    return this.time;
  }
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw shuttingDown();
    this.time += ms;
    await Promise.resolve();
  }
}

export interface FakeOptions {
  record?: Partial<SwapRecord>;
  host?: Partial<HostConfig>;
  settings?: Partial<StageSettings>;
  /** What the Hub resolves to (or the error it throws). */
  hub?: ModelInfo | Error;
  serving?: ServingState;
  lastBenchmark?: LastBenchmark;
  earlierPlans?: Record<string, SwapPlan>;
  decisions?: Record<string, Decision>;
  cancel?: { by: string; at: string };
}

export interface Fake {
  ctx: StageContext;
  swap: RunningSwap;
  host: FakeHost;
  clock: FakeClock;
  abort: AbortController;
  /** Everything emitted so far (saved or not). */
  events(): StoredSwapEvent[];
  audit(): AuditEvent[];
  /** How often the stage asked for a checkpoint. */
  checkpoints(): number;
  /** The Hub look-ups made. */
  resolved: ModelRef[];
  decisions: Record<string, Decision>;
  cancel: { request?: { by: string; at: string } };
}

/** The host section of a minimal valid config, with the test's fields. */
export function hostConfig(over: Partial<HostConfig> = {}): HostConfig {
  const file = fileSchema.parse({
    slack: { channel: "C0LLMOPS01" },
    requesters: { users: ["U0ALICE001"] },
    approvers: { users: ["U0BOB00001"] },
    hosts: [
      {
        name: "gpu-1",
        local: true,
        modelsDir: "/srv/models",
        engineSourceDir: "/srv/sglang",
        venv: "/srv/venv",
        currentUnit: "sglang-old.service",
      },
    ],
  });
  return { ...file.hosts[0]!, ...over };
}

export function fakeContext(options: FakeOptions = {}): Fake {
  const clock = new FakeClock();
  const record = aRecord({ createdAt: new Date(clock.now()).toISOString(), ...options.record });
  const saved: { events: StoredSwapEvent[]; audit: AuditEvent[]; checkpoints: number } = {
    events: [],
    audit: [],
    checkpoints: 0,
  };
  const swap: RunningSwap = new RunningSwap(record, clock, async () => {
    saved.checkpoints += 1;
    const pending = swap.drain();
    saved.events.push(...pending.events);
    saved.audit.push(...pending.audit);
  });
  const host = new FakeHost();
  const config = hostConfig(options.host);
  const abort = new AbortController();
  const resolved: ModelRef[] = [];
  const decisions = { ...options.decisions };
  const cancel: { request?: { by: string; at: string } } =
    options.cancel === undefined ? {} : { request: options.cancel };
  const ctx: StageContext = {
    swap,
    host: {
      name: config.name,
      config,
      exec: async (command, opts) => host.exec(command, opts),
      async must(command, what, opts) {
        const result = host.exec(command, opts);
        if (result.code !== 0) throw commandFailed(config.name, what, result);
        return result;
      },
      async tryChange(command, opts = {}) {
        const { privileged, ...exec } = opts;
        return host.exec(changeCommand(command, privileged === true, config.sudo), exec);
      },
      async change(command, what, opts) {
        const result = await this.tryChange(command, opts);
        if (result.code !== 0) throw commandFailed(config.name, what, result);
        return result;
      },
      async startTask(dir, script, secrets) {
        host.started.set(dir, { script: script.text, secrets: { ...secrets } });
        if (!host.status.has(dir))
          host.status.set(dir, { state: "running", exitCode: undefined, logTail: [] });
      },
      async taskStatus(dir) {
        return host.status.get(dir) ?? { state: "missing", exitCode: undefined, logTail: [] };
      },
      async stopTask(dir) {
        host.stopped.push(dir);
      },
      async readTaskFile(path) {
        return host.files.get(path);
      },
    },
    hub: {
      async resolve(ref) {
        resolved.push(ref);
        if (options.hub === undefined) throw new Error("the fake Hub has no model");
        if (options.hub instanceof Error) throw options.hub;
        return options.hub;
      },
    },
    ledger: {
      serving: async () => options.serving,
      lastBenchmark: async () => options.lastBenchmark,
      planOf: async (id) => options.earlierPlans?.[id],
    },
    gate: {
      decision: async (planHash) => decisions[planHash],
      cancelRequest: async () => cancel.request,
    },
    recipes: catalogueRecipes(),
    engine: sglangEngine,
    previousEngine: sglangEngine,
    settings: {
      pollSeconds: 1,
      downloadRetries: 3,
      sanityTimeoutSeconds: 120,
      benchmarkTimeoutSeconds: 900,
      healthTimeoutSeconds: undefined,
      approvalTtlMinutes: 240,
      downloadSecrets: {},
      engine: { allowedRefs: { branches: ["*"], tags: ["*"] }, unlistedRefs: "refuse" },
      hub: { allowPullRequests: false, remoteCodeOrgs: [] },
      recipeOverrides: [],
      weightScale: 1,
      baseline: "off",
      flipBackSeconds: 300,
      sharedBenchmark: "after-flip",
      restartAtFullMemory: false,
      sleepMode: false,
      inPlace: true,
      ...options.settings,
    },
    emit: (event) => swap.emit(event),
    clock,
    signal: abort.signal,
    log: createLogger({ level: "silent" }),
  };
  return {
    ctx,
    swap,
    host,
    clock,
    abort,
    // what was saved at checkpoints, then what is still pending
    events: () => [...saved.events, ...peek(swap).events],
    audit: () => [...saved.audit, ...peek(swap).audit],
    checkpoints: () => saved.checkpoints,
    resolved,
    decisions,
    cancel,
  };
}

/** What the swap has queued since its last checkpoint, without taking it. */
function peek(swap: RunningSwap): { events: StoredSwapEvent[]; audit: AuditEvent[] } {
  const pending = swap.drain();
  swap.restore(pending);
  return pending;
}
