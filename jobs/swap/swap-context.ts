import { type AuditEvent, type AuditKind, type AuditLog, SYSTEM_ACTOR } from "../../src/audit/audit-log.ts";
import type { HostConfig } from "../../src/config/file-schema.ts";
import type { Config } from "../../src/config/load-config.ts";
import { CodedError } from "../../src/errors.ts";
import type { HostRegistry } from "../../src/host/host-registry.ts";
import { type ShellCommand, sh } from "../../src/host/shell-quote.ts";
import type { ExecOptions, ExecResult, HostTransport } from "../../src/host/transport.ts";
import type { HubClient } from "../../src/hub/hub-client.ts";
import type { Logger } from "../../src/log.ts";
import type { Recipe } from "../../src/plan/recipes.ts";
import { codeBlock, message, type SlackMessage, section } from "../../src/reporter/message.ts";
import type { SlackPoster } from "../../src/reporter/slack-poster.ts";
import { renderSwapCard } from "../../src/reporter/swap-card.ts";
import type { StageName, StageState, SwapRecord } from "../../src/swap/swap-record.ts";
import type { SwapStore } from "../../src/swap/swap-store.ts";

/** Everything the swap pipeline needs, built once by the composition root. */
export interface SwapDeps {
  config: Config;
  store: SwapStore;
  hosts: HostRegistry;
  hub: HubClient;
  poster: SlackPoster;
  /** The audit stream: stage outcomes and the swap's outcome are written to it. */
  audit: AuditLog;
  log: Logger;
  /** The recipe table; the default unless a test plans with another. */
  recipes?: readonly Recipe[];
  /** Aborted when this process is stopping: a swap parks at its next safe point for another worker. */
  stopping?: AbortSignal;
}

/**
 * What a stage gets: the swap's record, its host, and capabilities bound to them. Stages never touch
 * Slack or ssh2 directly.
 */
export interface StageContext {
  record: SwapRecord;
  host: HostConfig;
  deps: SwapDeps;
  log: Logger;
  transport: HostTransport;
  exec(command: ShellCommand, options?: ExecOptions): Promise<ExecResult>;
  /** exec that throws HOST_COMMAND_FAILED (with the output's last line) on a non-zero exit. */
  must(command: ShellCommand, what: string, options?: ExecOptions): Promise<ExecResult>;
  /** Runs a privileged command: prefixed with `sudo -n` on hosts configured with `sudo: true`. */
  privileged(command: ShellCommand): ShellCommand;
  /** Sets a stage's state; a stage that ends (done or failed) is written to the audit stream at the next save. */
  stage(name: StageName, state: StageState["state"], detail?: string): void;
  /** Queues an event of this swap for the audit stream; written, in order, at the next save. */
  audit(kind: AuditKind, detail: string, who?: string): void;
  /**
   * A message in the swap's thread, optionally followed by log lines in a code block (kept to what fits).
   * A message Slack refuses is logged, never allowed to fail the swap.
   */
  say(msg: SlackMessage | string, options?: { broadcast?: boolean; log?: readonly string[] }): Promise<void>;
  /** Edits the card in place; throttled unless forced. */
  updateCard(force?: boolean): Promise<void>;
  save(): Promise<void>;
  now(): Date;
}

/**
 * `guard` runs before every save: it throws when this advance no longer holds the swap's lease, so a late
 * process never overwrites what the one that took over has written.
 */
export function createStageContext(
  record: SwapRecord,
  deps: SwapDeps,
  guard: () => Promise<void> = async () => undefined,
): StageContext {
  const host = deps.hosts.config(record.host);
  const transport = deps.hosts.transport(record.host);
  const log = deps.log.child({ swap: record.id, host: record.host });
  let lastCard = record.lastCardUpdate ? Date.parse(record.lastCardUpdate) : 0;
  let dirty = true;
  // Stage outcomes wait here for the next save: written before the record, so a crash in between repeats
  // an audit event (the step runs again) rather than losing one.
  const audited: AuditEvent[] = [];
  const ctx: StageContext = {
    record,
    host,
    deps,
    log,
    transport,
    exec: (command, options) => transport.exec(command, options),
    async must(command, what, options) {
      const result = await transport.exec(command, options);
      if (result.code !== 0) {
        const said = (result.stderr.trim() || result.stdout.trim()).split("\n").at(-1) ?? "";
        throw new CodedError(
          "HOST_COMMAND_FAILED",
          `${what} failed on ${host.name} (exit ${result.code ?? result.signal}): ${said}`,
          "the swap's thread has the output; fix the cause on the host and start the swap again",
        );
      }
      return result;
    },
    privileged: (command) => (host.sudo ? sh`sudo -n ${command}` : command),
    stage(name, state, detail) {
      const current = record.stages[name];
      const at = new Date().toISOString();
      if (current.state !== state) {
        dirty = true;
        if (state === "running") current.startedAt ??= at;
        if (state === "done" || state === "failed" || state === "skipped") current.finishedAt = at;
      }
      if (detail !== undefined && detail !== current.detail) dirty = true;
      const ended = current.state !== state && (state === "done" || state === "failed");
      current.state = state;
      if (detail !== undefined) current.detail = detail;
      if (ended) {
        audited.push({
          at,
          kind: "stage",
          who: SYSTEM_ACTOR,
          host: record.host,
          swap: record.id,
          stage: name,
          detail: `${name} ${state}${current.detail === undefined ? "" : `: ${current.detail}`}`,
        });
      }
    },
    audit(kind, detail, who = SYSTEM_ACTOR) {
      audited.push({ at: new Date().toISOString(), kind, who, host: record.host, swap: record.id, detail });
    },
    async say(msg, options) {
      if (record.cardTs === undefined) return;
      let m = typeof msg === "string" ? message(msg, [section(msg)]) : msg;
      if (options?.log !== undefined && options.log.length > 0) {
        m = message(m.text, [...m.blocks, section(codeBlock(options.log))]);
      }
      try {
        await deps.poster.post(record.channel, m, {
          threadTs: record.cardTs,
          broadcast: options?.broadcast === true,
        });
      } catch (error) {
        log.warn({ err: (error as Error).message }, "could not post to the swap's thread");
      }
    },
    async updateCard(force = false) {
      const card = renderSwapCard(record);
      if (record.cardTs === undefined) {
        record.cardTs = await deps.poster.post(record.channel, card);
        lastCard = Date.now();
        dirty = false;
        // Kept at once: a worker that dies later in this step must not leave a second card behind.
        await ctx.save();
        return;
      }
      const due = Date.now() - lastCard >= deps.config.file.swaps.cardUpdateSeconds * 1000;
      if (!dirty || (!force && !due)) return;
      await deps.poster.update(record.channel, record.cardTs, card);
      lastCard = Date.now();
      record.lastCardUpdate = new Date(lastCard).toISOString();
      dirty = false;
    },
    async save() {
      await guard();
      while (audited.length > 0) {
        const event = audited[0]!;
        await deps.audit.record(event);
        audited.shift();
      }
      await deps.store.save(record);
    },
    now: () => new Date(),
  };
  return ctx;
}
