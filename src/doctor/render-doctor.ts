import type { DoctorRow } from "./doctor-row.ts";

const MARK = { pass: "✔", warn: "!", fail: "✖" } as const;
const COLOUR = { pass: "\u001b[32m", warn: "\u001b[33m", fail: "\u001b[31m" } as const;
const RESET = "\u001b[0m";

/**
 * The doctor's table, for a person in a terminal: one block per target, a row per check (mark, check,
 * what it saw), and under a problem its code and fix; then one summary line. Colour only when asked
 * (stdout is a terminal and NO_COLOR is not set).
 */
export function renderDoctor(rows: readonly DoctorRow[], options: { colour: boolean }): string {
  const width = Math.max(...rows.map((r) => r.check.length)) + 2;
  const out: string[] = [];
  let target: string | undefined;
  for (const row of rows) {
    if (row.target !== target) {
      if (target !== undefined) out.push("");
      target = row.target;
      out.push(row.target);
    }
    const mark = options.colour ? `${COLOUR[row.status]}${MARK[row.status]}${RESET}` : MARK[row.status];
    out.push(`  ${mark} ${row.check.padEnd(width)}${row.saw}`);
    if (row.code !== undefined) out.push(`    ${" ".repeat(width)}${row.code} · fix: ${row.fix ?? ""}`);
  }
  out.push("", summaryLine(rows));
  return out.join("\n");
}

/** "✔ 24 checks passed", "✔ 24 checks passed, 1 warning: …" or "✖ 3 problems: gpu-1 sudo (HOST_SUDO_DENIED), …". */
export function summaryLine(rows: readonly DoctorRow[]): string {
  const named = (r: DoctorRow) => `${r.target.replace(/^host /, "")} ${r.check} (${r.code})`;
  const failed = rows.filter((r) => r.status === "fail");
  const warned = rows.filter((r) => r.status === "warn");
  const warnings =
    warned.length === 0
      ? ""
      : `${failed.length === 0 ? ", " : "; "}${warned.length} warning${warned.length === 1 ? "" : "s"}: ${warned.map(named).join(", ")}`;
  if (failed.length === 0) return `✔ ${rows.length} checks passed${warnings}`;
  return `✖ ${failed.length} problem${failed.length === 1 ? "" : "s"}: ${failed.map(named).join(", ")}${warnings}`;
}
