import type { AuditKind } from "../audit/audit-event.ts";
import type { Clock } from "../clock.ts";
import type { HostConfig } from "../config/file-schema.ts";
import type { RetentionConfig } from "../config/retention-schema.ts";
import type { Engine } from "../engine/engine.ts";
import type { EnginePolicy } from "../engine/engine-source.ts";
import { asCodedError, type ErrorCode } from "../errors.ts";
import type { HostFrontDoor } from "../front-door/host-front-door.ts";
import type { DetachedStatus } from "../host/detached-task.ts";
import type { CopyKey, PeerSource } from "../host/peer-copy.ts";
import type { ShellCommand } from "../host/shell-quote.ts";
import type { ExecOptions, ExecResult } from "../host/transport.ts";
import type { ModelInfo, ModelRef } from "../hub/types.ts";
import type { Logger } from "../log.ts";
import type { CatalogueRecipe, CompatibilityRow } from "../plan/catalogue-schema.ts";
import type { RecipeOverride } from "../plan/plan-input.ts";
import type { ModelProfile } from "../plan/profile-schema.ts";
import type { SwapPlan } from "../plan/types.ts";
import type { ChangeCommands } from "./change-command.ts";
import type { LastBenchmark, ServingState } from "./host-serving.ts";
import type { SwapEvent } from "./swap-events.ts";
import type { Decision, StageName, StageState, SwapRecord } from "./swap-record.ts";
import type { DataPatch, SwapTransitions } from "./swap-transitions.ts";

/*
 * What a stage of the swap pipeline gets, and nothing more: its record (read, and changed through
 * methods), the host's capabilities, a few narrow ports to what other parts know (the Hub, what earlier
 * swaps left on the host, the approval gate's decisions), emit(event), a clock, the stop signal and a
 * logger. No Slack, no ssh2, no Redis, no config beyond the settings a stage reads. Stages are plain
 * functions of this context, so a test gives them a fake one (test/unit/stages/).
 */

/** A swap's record as a stage sees it. */
export interface SwapState {
  readonly record: Readonly<SwapRecord>;
  /**
   * Changes the record's data (a nested object is replaced whole; `undefined` removes a field): the plan,
   * the tasks, the numbers. Never its lifecycle, which only `to` moves.
   */
  set(patch: DataPatch): void;
  /** The record's lifecycle (src/swap/swap-transitions.ts): each checks the state it leaves from. */
  readonly to: SwapTransitions;
  /** Sets a stage's state and its one-line detail; a stage that ends (done, failed) is audited. */
  stage(name: StageName, state: StageState["state"], detail?: string): void;
  /** Marks a stage running and saves at once, so the card shows it without waiting for the stage's end. */
  begin(name: StageName, detail: string): Promise<void>;
  /** Queues an audit event, written with the record. */
  audit(kind: AuditKind, detail: string, who?: string): void;
  /**
   * Persists the record and everything emitted and audited so far, now: before a command that must not
   * be repeated (the switch), or right after starting a task a restarted worker must find.
   */
  checkpoint(): Promise<void>;
}

/** Options of a command that changes the host. */
export interface ChangeOptions extends ExecOptions {
  /**
   * As `sudo -n <command>` on a host with `sudo: true` (the unit commands: src/engine/unit-commands.ts),
   * each of several alike (changeCommand).
   */
  privileged?: boolean;
}

/**
 * One host, as the pipeline may use it: commands that read, commands that change it, detached tasks, its
 * front door. Every change runs under the swap's fence (src/host/fence.ts): the host itself refuses it
 * once a later run of the swap, or a later swap, has changed the host, so a worker that lost its lease
 * while paused can never touch the host again. The front door's and the tasks' commands are fenced too.
 */
export interface HostPort {
  readonly name: string;
  /** The host's section of the config (paths, port, units; never a secret). */
  readonly config: Readonly<HostConfig>;
  /** The host's front door (hosts[].frontDoor), or undefined: clients reach the unit's port directly. */
  readonly frontDoor?: HostFrontDoor;
  /** A command that only reads the host (never one that changes it: that is `change`). */
  exec(command: ShellCommand, options?: ExecOptions): Promise<ExecResult>;
  /** exec that throws HOST_COMMAND_FAILED (with the output's last line) on a non-zero exit. */
  must(command: ShellCommand, what: string, options?: ExecOptions): Promise<ExecResult>;
  /**
   * A command that changes the host, under the fence; throws HOST_COMMAND_FAILED on a non-zero exit, and
   * FENCE_STALE or SWAP_SUPERSEDED (this run is over) when the host refused it.
   */
  change(command: ChangeCommands, what: string, options?: ChangeOptions): Promise<ExecResult>;
  /** `change` that returns the result whatever the command's exit status (the fence's refusals still throw). */
  tryChange(command: ChangeCommands, options?: ChangeOptions): Promise<ExecResult>;
  startTask(dir: string, script: ShellCommand, secrets?: Record<string, string>): Promise<void>;
  taskStatus(dir: string): Promise<DetachedStatus>;
  stopTask(dir: string): Promise<void>;
  readTaskFile(path: string): Promise<string | undefined>;
}

export interface HubPort {
  /** Pins a revision to a commit and reads the files, sizes, gating, license and config files. */
  resolve(ref: ModelRef): Promise<ModelInfo>;
}

/** What earlier swaps left on this host. */
export interface LedgerPort {
  serving(): Promise<ServingState | undefined>;
  lastBenchmark(): Promise<LastBenchmark | undefined>;
  /** The plan of an earlier swap, when its record is still kept. */
  planOf(swapId: string): Promise<SwapPlan | undefined>;
}

/** What the approval gate and `/llm cancel` have recorded for this swap. */
export interface GatePort {
  decision(planHash: string): Promise<Decision | undefined>;
  cancelRequest(): Promise<{ by: string; at: string } | undefined>;
}

/** Where a rollout's host gets its files now: a peer it may copy from (taken), a wait, or the Hub. */
export type PeerChoice =
  | { kind: "peer"; source: PeerSource }
  | { kind: "wait"; why: string }
  | { kind: "hub"; why: string };

/**
 * A rollout's host swap and its peers (src/host/peer-copy.ts): where its files come from, and its
 * serving them to the others once it holds them. Only a swap of a rollout has one.
 */
export interface PeerPort {
  readonly rolloutId: string;
  /** The rollout's copy key. */
  key(): Promise<CopyKey>;
  /** Where to get the files now; a peer it returns is taken until `release`. */
  choose(): Promise<PeerChoice>;
  /** This host's copy ended (copied or failed): its source may serve another. */
  release(): Promise<void>;
  /** How peers reach this host, and the addresses its line admits; or why it cannot serve. */
  servingAs(modelDir: string): Promise<{ source: PeerSource; from: string[] } | { why: string }>;
  /** This host serves (its line is on it): peers may copy, and those waiting are woken. */
  serve(source: PeerSource): Promise<void>;
  cannotServe(why: string): Promise<void>;
  /** This host serves no more (its swap ends). */
  unserve(): Promise<void>;
}

/** The config values the stages read. */
export interface StageSettings {
  pollSeconds: number;
  downloadRetries: number;
  sanityTimeoutSeconds: number;
  benchmarkTimeoutSeconds: number;
  /** Overrides the health wait the plan derives from the model's size. */
  healthTimeoutSeconds: number | undefined;
  approvalTtlMinutes: number;
  /** Secrets the download task gets in its environment (HF_TOKEN for gated models). */
  downloadSecrets: Readonly<Record<string, string>>;
  /** Which engine refs may be built, and when (engine.*). */
  engine: EnginePolicy;
  /** hub.allowPullRequests and hub.remoteCodeOrgs. */
  hub: { allowPullRequests: boolean; remoteCodeOrgs: readonly string[] };
  /** swaps.baseline: how a host's first swap measures the outgoing model before its switch. */
  baseline: "probe" | "full" | "off";
  /** swaps.flipBackSeconds: how long a blue/green swap keeps the old unit loaded after the flip. */
  flipBackSeconds: number;
  /** swaps.sharedBenchmark: when blue/green on shared GPUs runs the loaded benchmark. */
  sharedBenchmark: "after-flip" | "reduced";
  /** swaps.restartAtFullMemory: whether blue/green on shared GPUs restarts the new unit at full memory. */
  restartAtFullMemory: boolean;
  /** swaps.sleepMode: vLLM units start parkable, and a cold swap parks a parkable old unit. */
  sleepMode: boolean;
  /** swaps.inPlace: a new revision of the served model loads into the running engine where it fits. */
  inPlace: boolean;
  /** The top-level retention: (src/config/retention-schema.ts); absent in contexts built before it. */
  retention?: RetentionConfig;
  /** recipes.overrides: the config's changes to known recipes. */
  recipeOverrides: readonly RecipeOverride[];
  /** recipes.own: the operator's own recipes, after the shipped catalogue's. */
  ownRecipes?: readonly CatalogueRecipe[];
  /** recipes.compatibility: the operator's own compatibility rows, before the shipped ones. */
  ownCompatibility?: readonly CompatibilityRow[];
  /** models[]: per-model profiles (flags, tp, engine, engine ref). */
  profiles?: readonly ModelProfile[];
  /** bench.weightScale: 1 in production; on the bench, the real weight files are this many times the Hub's. */
  weightScale: number;
}

export interface StageContext {
  readonly swap: SwapState;
  readonly host: HostPort;
  readonly hub: HubPort;
  readonly ledger: LedgerPort;
  readonly gate: GatePort;
  /** A rollout's host swap's peers; undefined for a swap of its own. */
  readonly peers?: PeerPort;
  /** The recipe table when a test injects one; else the plan's engine's own. */
  readonly recipes?: readonly CatalogueRecipe[];
  /**
   * The engine the swap's new unit runs (the plan's; the host's before there is a plan): its health
   * probe, sanity requests, benchmark and fatal lines.
   */
  readonly engine: Engine;
  /** The engine of the unit that served before (the baseline benchmark and a rollback's health ask it). */
  readonly previousEngine: Engine;
  readonly settings: StageSettings;
  /** Tells what happened; the reporter turns it into the thread. Never waits on Slack. */
  emit(event: SwapEvent): void;
  readonly clock: Clock;
  /** Aborted when this process is stopping: a long wait hands its swap over. */
  readonly signal: AbortSignal;
  readonly log: Logger;
}

/**
 * What a step tells the state machine: go on to the next step, wait (the job parks itself and no worker
 * slot is held), or end. `touched: false` means the host was not changed (no rollback needed).
 */
export type StepResult =
  | { next: SwapRecord["step"] }
  | { wait: number }
  /**
   * `fail` is the reason in one line (it is said on the card, and at the end with `code` and `fix`); the
   * full story (log tails, each prompt) is told once, in the thread, by the stage's own event.
   */
  | { fail: string; touched: boolean; code?: ErrorCode; fix?: string }
  | { end: NonNullable<SwapRecord["outcome"]>; reason?: string };

/** A stage's failure from an error: its message as the reason, its code and fix kept for the end. */
export function failedWith(error: unknown, touched: boolean, prefix?: string): StepResult {
  const coded = asCodedError(error);
  return {
    fail: prefix === undefined ? coded.message : `${prefix}: ${coded.message}`,
    code: coded.code,
    fix: coded.fix,
    touched,
  };
}
