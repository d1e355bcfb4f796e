/** systemctl list-units / list-unit-files, and the unit names they (and `status`) range over. */
import { readdirSync } from "node:fs";
import { sandboxPaths } from "./sandbox.mjs";
import { listUnitFiles, normalizeUnitName, observedUnitState, resolveUnit, unitFileState } from "./units.mjs";

function globToRegExp(glob) {
  const escaped = glob
    .replace(/[.+^${}()|\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${escaped}$`);
}

function matchesPatterns(name, patterns) {
  if (patterns.length === 0) return true;
  return patterns.some((p) => globToRegExp(p).test(name) || globToRegExp(normalizeUnitName(p)).test(name));
}

export function knownUnits(ctx) {
  const { root } = ctx;
  const names = new Set(listUnitFiles(root));
  for (const f of readdirSyncSafe(sandboxPaths(root).unitsStateDir)) {
    if (f.endsWith(".service.json")) names.add(f.slice(0, -5));
  }
  return [...names].sort();
}

function readdirSyncSafe(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function columns(rows) {
  const widths = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i])))
      .join(" ")
      .trimEnd(),
  );
}

function typeFilterOk(ctx) {
  const { opts } = ctx;
  return opts.types.length === 0 || opts.types.includes("service");
}

export function listUnits(ctx, patterns) {
  const { root, opts, out } = ctx;
  const rows = [];
  const failedFlags = [];
  if (typeFilterOk(ctx)) {
    for (const name of knownUnits(ctx)) {
      if (!matchesPatterns(name, patterns)) continue;
      const { unit } = resolveUnit(root, name, { recordFirstLoad: false });
      const st = observedUnitState(root, name);
      const load = unit === null ? "not-found" : "loaded";
      if (!opts.all && st.activeState === "inactive") continue;
      if (
        opts.states.length > 0 &&
        !opts.states.includes(st.activeState) &&
        !opts.states.includes(st.subState)
      )
        continue;
      rows.push([name, load, st.activeState, st.subState, unit?.description || name]);
      failedFlags.push(st.activeState === "failed" || load === "not-found");
    }
  }
  const header = ["UNIT", "LOAD", "ACTIVE", "SUB", "DESCRIPTION"];
  const table = columns(opts.legend ? [header, ...rows] : rows);
  const lines = table.map((line, idx) => {
    if (opts.plain) return line;
    const dataIdx = opts.legend ? idx - 1 : idx;
    return `${dataIdx >= 0 && failedFlags[dataIdx] ? "●" : " "} ${line}`;
  });
  if (lines.length > 0) out(`${lines.join("\n")}\n`);
  if (opts.legend) {
    out("\nLOAD   = Reflects whether the unit definition was properly loaded.\n");
    out("ACTIVE = The high-level unit activation state, i.e. generalization of SUB.\n");
    out("SUB    = The low-level unit activation state, values depend on unit type.\n");
    out(`\n${rows.length} loaded units listed.`);
    out(
      opts.all
        ? "\nTo show all installed unit files use 'systemctl list-unit-files'.\n"
        : " Pass --all to see loaded but inactive units, too.\nTo show all installed unit files use 'systemctl list-unit-files'.\n",
    );
  }
  return 0;
}

export function listUnitFilesCmd(ctx, patterns) {
  const { root, opts, out } = ctx;
  const rows = [];
  if (typeFilterOk(ctx)) {
    for (const name of listUnitFiles(root)) {
      if (!matchesPatterns(name, patterns)) continue;
      const { unit } = resolveUnit(root, name, { recordFirstLoad: false });
      const state = unitFileState(root, name, unit);
      if (opts.states.length > 0 && !opts.states.includes(state)) continue;
      rows.push([name, state, state === "static" ? "-" : "enabled"]);
    }
  }
  const table = columns(opts.legend ? [["UNIT FILE", "STATE", "PRESET"], ...rows] : rows);
  if (table.length > 0) out(`${table.join("\n")}\n`);
  if (opts.legend) out(`\n${rows.length} unit files listed.\n`);
  return 0;
}
