import { SYSTEM_ACTOR } from "../audit/audit-event.ts";
import type { FileConfig, HostConfig } from "../config/file-schema.ts";
import type { LiveConfig } from "../config/live-config.ts";
import { type ConfigProblem, formatProblems, type ReadFor, readConfigFile } from "../config/load-config.ts";
import { describeError } from "../errors.ts";
import type { DeferredHost, HolderOf, HostRegistry } from "../host/host-registry.ts";
import type { Logger } from "../log.ts";
import type { AccessControl } from "../slack/access-control.ts";
import type { AuditLog } from "../store/audit-log.ts";
import type { ConfigNote, ConfigNotes } from "../store/config-notes.ts";
import { type ConfigChanges, changesAnything, describeChanges, planReload } from "./config-changes.ts";

/** What made a process read its config file again. */
export type ReloadTrigger =
  | { kind: "start" }
  | { kind: "signal" }
  | { kind: "file" }
  | { kind: "note"; from: string };

export type ReloadResult =
  | { kind: "unchanged" }
  | { kind: "refused"; problems: ConfigProblem[] }
  | { kind: "applied"; changes: ConfigChanges; deferred: DeferredHost[] };

export interface ReloaderDeps {
  live: LiveConfig;
  /** As at start: a process that runs no worker does not need the hosts' SSH keys. */
  readFor: ReadFor;
  /** Who this process is, in the log, the audit stream and its notes: `<role>@<machine>:<pid>`. */
  process: string;
  hosts: HostRegistry<HostConfig>;
  /** The swap that holds a host (the store's host lock): such a host keeps its settings until it ends. */
  holderOf: HolderOf;
  /** The bot role's access control: who may request and approve. */
  access?: Pick<AccessControl, "update">;
  /** The worker role's health monitor: its schedules follow the hosts and `health:`. */
  monitor?: { reconfigure(): Promise<void> };
  audit?: Pick<AuditLog, "record">;
  /** Tells the other processes which file this one has loaded (store/config-notes.ts). */
  notes?: Pick<ConfigNotes, "publish">;
  log: Logger;
}

/**
 * Reads the config file again and puts it in place when it is valid, for one process: validated by the
 * same loader and schema as at start (a bad file changes nothing and the log says why, as `modelswap config
 * check` would); the restart-only settings keep their running value (config-changes.ts); every change,
 * and every refusal, is written to the audit stream by name, never by value. Reloads run one at a time.
 */
export class ConfigReloader {
  private last: Promise<unknown> = Promise.resolve();
  /** The sha256 of the bytes last read, valid or not, and of those in use. */
  private seen: string | undefined;
  private inUse: string | undefined;
  /** Pairs of differing files already warned about (`theirs:ours`). */
  private readonly warned = new Set<string>();
  private readonly log: Logger;

  constructor(private readonly deps: ReloaderDeps) {
    this.log = deps.log.child({ name: "config" });
    deps.hosts.onSettled((applied) => this.settled(applied));
  }

  /**
   * Reads the file and applies it if it is valid. A watch or a note that finds the same bytes as the last
   * read does nothing more; SIGHUP always reads, validates and says what it found.
   */
  reload(trigger: ReloadTrigger): Promise<ReloadResult> {
    const next = this.last.then(() => this.reloadNow(trigger));
    this.last = next.catch(() => undefined);
    return next;
  }

  /**
   * Another process has loaded a config file: when it is not this one's, this one reads its own again.
   * Resolves once that is done (and said); it never rejects.
   */
  async heard(note: ConfigNote): Promise<void> {
    if (note.process === this.deps.process || note.sha256 === this.inUse) return;
    await this.reload({ kind: "note", from: note.process })
      .then(() => {
        if (this.seen === note.sha256 || this.warned.has(`${note.sha256}:${this.seen}`)) return;
        this.warned.add(`${note.sha256}:${this.seen}`);
        this.log.warn(
          {
            code: "CONFIG_DIFFERS",
            process: this.deps.process,
            from: note.process,
            theirs: short(note.sha256),
            ours: short(this.seen),
          },
          `${note.process} runs a config file that differs from this process's ${this.deps.live.current().path}: every process that shares a Redis must run the same config file (copy it, or point MODELSWAP_CONFIG at one file)`,
        );
      })
      .catch((error: unknown) =>
        this.log.warn(
          { err: describeError(error) },
          `could not read the config file again after ${note.process}'s note`,
        ),
      );
  }

  private async reloadNow(trigger: ReloadTrigger): Promise<ReloadResult> {
    const { live, readFor, process } = this.deps;
    const before = live.current();
    const read = await readConfigFile(before.path, readFor);
    if (trigger.kind !== "signal" && read.sha256 !== undefined && read.sha256 === this.seen)
      return { kind: "unchanged" };
    this.seen = read.sha256;
    const why = triggerWords(trigger);
    const fields = { process, trigger: trigger.kind, sha256: short(read.sha256) };
    if (read.file === undefined) {
      const { problems } = read;
      this.log.error(
        {
          ...fields,
          code: "CONFIG_INVALID",
          problems: problems.map((p) => ({ setting: p.path, what: p.what, fix: p.fix })),
          fix: "correct each setting as shown (`modelswap config check` lists the same problems); the file is read again when it is saved, or on SIGHUP",
        },
        `config not reloaded (${why}): ${before.path} has ${problems.length} problem(s); the config in use is unchanged:\n${formatProblems(problems)}`,
      );
      this.record(
        `config not reloaded (${why}): ${problems.length} problem(s): ${problems.map((p) => `${p.path}: ${p.what}`).join("; ")}; the config in use is unchanged`,
      );
      return { kind: "refused", problems };
    }
    const first = this.inUse === undefined;
    this.inUse = read.sha256;
    const { file, changes } = planReload(before.file, read.file);
    if (!changesAnything(changes) && changes.needsRestart.length === 0) {
      if (!first)
        this.log.info(
          { ...fields, code: "CONFIG_UNCHANGED" },
          `config file read (${why}): it holds the config in use, nothing to change`,
        );
      if (trigger.kind !== "note") this.note();
      return { kind: "applied", changes, deferred: [] };
    }
    live.replace({ ...before, file });
    const deferred = await this.apply(file, changes);
    const summary = [describeChanges(changes), ...deferred.map(waitsWords)].join("; ");
    this.log.info(
      { ...fields, code: "CONFIG_RELOADED", changes, waiting: deferred },
      `config reloaded (${why}): ${summary}`,
    );
    if (changes.needsRestart.length > 0)
      this.log.warn(
        { ...fields, code: "CONFIG_RESTART_NEEDED", settings: changes.needsRestart },
        `config: ${changes.needsRestart.join(", ")} changed in the file, but ${changes.needsRestart.length === 1 ? "is" : "are"} read only at start: this process keeps the value it runs with; restart it for the new one`,
      );
    this.record(`config reloaded (${why}), file sha256 ${short(read.sha256)}: ${summary}`);
    if (trigger.kind !== "note") this.note();
    return { kind: "applied", changes, deferred };
  }

  /** Hands the new settings to the parts that hold state of their own: hosts, access, the monitor's schedules. */
  private async apply(file: FileConfig, changes: ConfigChanges): Promise<DeferredHost[]> {
    const { hosts, holderOf, access } = this.deps;
    const hostsChanged =
      changes.hosts.added.length + changes.hosts.removed.length + changes.hosts.changed.length > 0;
    const deferred = hostsChanged ? await hosts.update(file.hosts, holderOf) : [];
    access?.update(file.requesters, file.approvers, {
      groupStalenessMs: file.access.groupStalenessMinutes * 60_000,
    });
    // in the background: Redis being away holds up no reload (each reconfigure reads the config as it is then)
    if (hostsChanged || changes.settings.some((s) => s.startsWith("health."))) void this.reconfigureMonitor();
    return deferred;
  }

  private settled(applied: DeferredHost[]): void {
    for (const { host, swap } of applied)
      this.log.info(
        { process: this.deps.process, code: "CONFIG_HOST_SETTLED", host, swap },
        `config: ${host}'s reloaded settings are in use now${swap === undefined ? "" : ` (swap ${swap} has ended)`}`,
      );
    void this.reconfigureMonitor();
  }

  private async reconfigureMonitor(): Promise<void> {
    await this.deps.monitor
      ?.reconfigure()
      .catch((error: unknown) =>
        this.log.error(
          { process: this.deps.process, err: describeError(error) },
          "could not bring the health monitor's schedules to the reloaded config; the next reload (or restart) tries again",
        ),
      );
  }

  /** Written in the background: a Redis that is away holds up neither this reload nor the next. */
  private record(detail: string): void {
    void this.deps.audit
      ?.record({ kind: "config", who: SYSTEM_ACTOR, process: this.deps.process, detail })
      .catch((error: unknown) =>
        this.log.warn({ err: describeError(error) }, "could not write the config reload to the audit stream"),
      );
  }

  private note(): void {
    if (this.inUse === undefined) return;
    void this.deps.notes
      ?.publish({ sha256: this.inUse, process: this.deps.process })
      .catch((error: unknown) =>
        this.log.debug({ err: describeError(error) }, "could not tell the other processes about the config"),
      );
  }
}

function triggerWords(trigger: ReloadTrigger): string {
  switch (trigger.kind) {
    case "start":
      return "read again at start";
    case "signal":
      return "SIGHUP";
    case "file":
      return "the file changed";
    case "note":
      return `${trigger.from} loaded a file this process had not read`;
  }
}

function waitsWords({ host, swap }: DeferredHost): string {
  return swap === undefined
    ? `${host} keeps its settings until its swaps can be checked (Redis did not answer)`
    : `${host} keeps the settings its running swap ${swap} started with until that swap ends`;
}

/** The first 12 hex digits of a sha256: enough to tell files apart in a log line. */
function short(sha256: string | undefined): string | undefined {
  return sha256?.slice(0, 12);
}
