/*
 * What a host keeps and what may go, decided from what is on its disk (src/retention/host-disk.ts reads
 * it). Kept, always: the units that serve (and any unit running or enabled), every unit file modelswap did
 * not write, the newest `keep` of modelswap's unit files (with the ones that serve: a rollback goes back to
 * the unit that served before), whatever a kept unit file names (its model directory, its engine build, its
 * compile caches),
 * anything pinned, and model directories and builds written after the newest unit file (a download no
 * swap has switched to yet). Only directories of the names modelswap makes, and its own unit files, ever go.
 */

export type DiskItemKind = "model" | "build" | "cache" | "unit";

export interface DiskItem {
  kind: DiskItemKind;
  /** Absolute, as the host resolved it (realpath of the root, then the entry's name). */
  path: string;
  /** The entry's own name (the last part of the path). */
  name: string;
  /** Bytes on disk (du). */
  bytes: number;
  /** Last modification, seconds since the epoch. */
  mtime: number;
}

export interface UnitFile extends DiskItem {
  kind: "unit";
  /** Its first line is modelswap's ("# Written by modelswap for swap …"). */
  ours: boolean;
  active: boolean;
  enabled: boolean;
  /** Its text (the first 64 KiB): what it names. */
  text: string;
}

export interface HostDisk {
  models: DiskItem[];
  builds: DiskItem[];
  /** The engines' compile caches, one directory per key (src/plan/engine-caches.ts). */
  caches: DiskItem[];
  units: UnitFile[];
  /** Bytes available at the models directory (df). */
  freeBytes: number;
}

export interface RetentionRules {
  keep: number;
  /** Absolute paths or entry names (retention.pinned). */
  pinned: readonly string[];
  /** The units that serve now (the config's and the ledger's). */
  serving: readonly string[];
}

export interface Verdict {
  item: DiskItem;
  why: string;
}

export interface RetentionPlan {
  remove: Verdict[];
  keep: Verdict[];
  /** What the removals free, by du. */
  reclaimableBytes: number;
}

/** The first line modelswap writes into every unit file of its own (src/engine/render-unit.ts). */
export const OURS_MARK = "# Written by modelswap for swap ";

/** What modelswap names the directories it makes (src/plan/model-dir.ts, src/engine/engine-source.ts): nothing else is deleted. */
const MADE = {
  model: /^[A-Za-z0-9._-]+--[A-Za-z0-9._-]+--[0-9a-f]{12}$/,
  build: /^[a-z]+-[0-9a-f]{12}-[A-Za-z0-9-]+(\.partial)?$/,
  cache: /^[a-z]+-[0-9a-f]{12}-sm[0-9]+-[0-9a-f]{12}-[0-9a-f]{8}$/,
} as const;

const newestFirst = (a: DiskItem, b: DiskItem) => b.mtime - a.mtime || a.path.localeCompare(b.path);

/** Whether `text` names `path` or something under it (a path that merely begins with it is not named). */
export function names(text: string, path: string): boolean {
  const escaped = path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`${escaped}(?=[/\\s"'=:;,]|$)`, "m").test(text);
}

export function retentionPlan(disk: HostDisk, rules: RetentionRules): RetentionPlan {
  const keep: Verdict[] = [];
  const remove: Verdict[] = [];
  const pinned = (item: DiskItem) => rules.pinned.includes(item.path) || rules.pinned.includes(item.name);
  const lastN = (items: readonly DiskItem[]) => new Set(items.toSorted(newestFirst).slice(0, rules.keep));
  const latest = `one of the last ${rules.keep} units that served (what a rollback goes back to)`;

  // the units that served last: modelswap's, and the ones that serve (the config's may be the host's own)
  const newestUnits = lastN(disk.units.filter((u) => u.ours || rules.serving.includes(u.name)));
  // a download after the newest unit file (a swap rejected, expired or cancelled since) is kept for the next one
  const lastSwitch = Math.max(0, ...disk.units.filter((u) => u.ours).map((u) => u.mtime));
  const keptUnits: UnitFile[] = [];
  for (const unit of disk.units.toSorted(newestFirst)) {
    const why = !unit.ours
      ? "not written by modelswap"
      : rules.serving.includes(unit.name)
        ? "serves now"
        : unit.active
          ? "running"
          : unit.enabled
            ? "enabled"
            : pinned(unit)
              ? "pinned (retention.pinned)"
              : newestUnits.has(unit)
                ? latest
                : undefined;
    if (why === undefined) {
      remove.push({
        item: unit,
        why: "an old unit file of modelswap's: not running, not enabled, older than the last ones",
      });
    } else {
      keep.push({ item: unit, why });
      keptUnits.push(unit);
    }
  }

  for (const items of [disk.models, disk.builds, disk.caches]) {
    const made = (item: DiskItem) => MADE[item.kind as "model" | "build" | "cache"].test(item.name);
    for (const item of items.toSorted(newestFirst)) {
      const namedBy = keptUnits.find((u) => names(u.text, item.path));
      const why = !made(item)
        ? "not made by modelswap (only model directories named org--name--commit, engine builds and compile caches are ever deleted)"
        : namedBy !== undefined
          ? `named by ${namedBy.name}`
          : pinned(item)
            ? "pinned (retention.pinned)"
            : item.mtime > lastSwitch
              ? "written after the newest unit file (a download no swap has switched to yet)"
              : undefined;
      if (why === undefined)
        remove.push({ item, why: "no unit file left names it, not pinned, older than the newest unit file" });
      else keep.push({ item, why });
    }
  }
  return { keep, remove, reclaimableBytes: remove.reduce((sum, v) => sum + v.item.bytes, 0) };
}
