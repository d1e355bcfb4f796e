import { isDeepStrictEqual } from "node:util";
import type { FileConfig, Principals } from "../config/file-schema.ts";

/**
 * The settings a running process reads once, at start, and so cannot take from a reload: the value in
 * use is kept, and the reload says a restart is needed for it (the rest of the reload applies).
 */
export const RESTART_ONLY: readonly string[] = [
  // where every card, alert and answer goes; a swap in flight keeps its own channel regardless
  "slack.channel",
  // the swap worker's BullMQ options, fixed when the worker is made
  "swaps.lockSeconds",
  "swaps.stalledCheckSeconds",
  // the store's retention and the audit stream's length, fixed when the store is made
  "records.finishedDays",
  "records.dryRunHours",
  "audit.maxEntries",
];

/** Who was added to and removed from a list of Slack users and groups (their ids). */
export interface PrincipalChanges {
  added: string[];
  removed: string[];
}

/**
 * What a reload changes, by name only — hosts, Slack ids and setting paths, never a value — so it can
 * go to the log and the audit stream as it is.
 */
export interface ConfigChanges {
  hosts: { added: string[]; removed: string[]; changed: { name: string; settings: string[] }[] };
  requesters: PrincipalChanges;
  approvers: PrincipalChanges;
  /** Every other setting whose value changed, by path (`health.intervalSeconds`, `recipes.overrides`). */
  settings: string[];
  /** Restart-only settings the file changed: the running value is kept (RESTART_ONLY). */
  needsRestart: string[];
}

/**
 * The config a reload puts in place — the new file, but with the restart-only settings as they run now —
 * and what changes from the running one.
 */
export function planReload(
  running: FileConfig,
  read: FileConfig,
): { file: FileConfig; changes: ConfigChanges } {
  const file = structuredClone(read);
  const needsRestart: string[] = [];
  for (const path of RESTART_ONLY) {
    const [section, key] = path.split(".") as [keyof FileConfig, string];
    const was = (running[section] as Record<string, unknown>)[key];
    if (isDeepStrictEqual(was, (read[section] as Record<string, unknown>)[key])) continue;
    (file[section] as Record<string, unknown>)[key] = structuredClone(was);
    needsRestart.push(path);
  }
  return { file, changes: { ...diffConfig(running, file), needsRestart } };
}

/** Whether a reload changes anything in use (restart-only settings aside). */
export function changesAnything(changes: ConfigChanges): boolean {
  const { hosts, requesters, approvers, settings } = changes;
  return (
    hosts.added.length + hosts.removed.length + hosts.changed.length > 0 ||
    requesters.added.length + requesters.removed.length > 0 ||
    approvers.added.length + approvers.removed.length > 0 ||
    settings.length > 0
  );
}

/** One line for people: what a reload changed, by name. */
export function describeChanges(changes: ConfigChanges): string {
  const parts: string[] = [];
  const list = (label: string, names: readonly string[]) => {
    if (names.length > 0) parts.push(`${label}: ${names.join(", ")}`);
  };
  list("hosts added", changes.hosts.added);
  list("hosts removed", changes.hosts.removed);
  list(
    "hosts changed",
    changes.hosts.changed.map((h) => `${h.name} (${h.settings.join(", ")})`),
  );
  list("approvers added", changes.approvers.added);
  list("approvers removed", changes.approvers.removed);
  list("requesters added", changes.requesters.added);
  list("requesters removed", changes.requesters.removed);
  list("settings changed", changes.settings);
  list("needs a restart (the running value is kept)", changes.needsRestart);
  return parts.length === 0 ? "nothing changed" : parts.join("; ");
}

function diffConfig(before: FileConfig, after: FileConfig): Omit<ConfigChanges, "needsRestart"> {
  const settings: string[] = [];
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (key === "hosts" || key === "requesters" || key === "approvers") continue;
    settings.push(...changedPaths(before[key as keyof FileConfig], after[key as keyof FileConfig], key));
  }
  return {
    hosts: diffHosts(before.hosts, after.hosts),
    requesters: diffPrincipals(before.requesters, after.requesters),
    approvers: diffPrincipals(before.approvers, after.approvers),
    settings,
  };
}

function diffHosts(before: FileConfig["hosts"], after: FileConfig["hosts"]): ConfigChanges["hosts"] {
  const old = new Map(before.map((h) => [h.name, h]));
  const now = new Map(after.map((h) => [h.name, h]));
  const changed: ConfigChanges["hosts"]["changed"] = [];
  for (const [name, host] of now) {
    const was = old.get(name);
    if (was === undefined) continue;
    const settings = changedPaths(was, host, "");
    if (settings.length > 0) changed.push({ name, settings });
  }
  return {
    added: [...now.keys()].filter((name) => !old.has(name)),
    removed: [...old.keys()].filter((name) => !now.has(name)),
    changed,
  };
}

function diffPrincipals(before: Principals, after: Principals): PrincipalChanges {
  const was = [...before.users, ...before.groups];
  const now = [...after.users, ...after.groups];
  return {
    added: now.filter((id) => !was.includes(id)),
    removed: was.filter((id) => !now.includes(id)),
  };
}

/** The paths under `path` whose values differ: plain objects are walked, anything else is compared whole. */
function changedPaths(before: unknown, after: unknown, path: string): string[] {
  if (isDeepStrictEqual(before, after)) return [];
  if (!isPlainObject(before) || !isPlainObject(after)) return [path];
  const at = (key: string) => (path === "" ? key : `${path}.${key}`);
  return [...new Set([...Object.keys(before), ...Object.keys(after)])].flatMap((key) =>
    changedPaths(before[key], after[key], at(key)),
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
