import { CodedError } from "../errors.ts";
import type { HostTransport } from "../host/transport.ts";
import { readFreeDiskBytes } from "../plan/read-host-facts.ts";
import {
  type DeleteOutcome,
  deleteDirsCommand,
  deleteUnitsCommand,
  parseDeleteOutcomes,
} from "./delete-commands.ts";
import { readHostDisk } from "./host-disk.ts";
import { OURS_MARK, type RetentionPlan, type RetentionRules, retentionPlan } from "./retention-plan.ts";

type Exec = Pick<HostTransport, "hostName" | "exec">;

export interface GcTarget {
  modelsDir: string;
  unitDir: string;
  sudo: boolean;
  rules: RetentionRules;
}

/** What a gc of one host found, did, and measured. */
export interface GcReport {
  host: string;
  dryRun: boolean;
  plan: RetentionPlan;
  /** df at the models directory before. */
  freeBefore: number;
  /** df there after the deletes (absent in a dry run). */
  freeAfter?: number;
  /** Each path's outcome (none in a dry run). */
  outcomes: DeleteOutcome[];
}

/** Deleting a model of hundreds of GB takes a while on a slow disk: the limit of one delete command. */
const DELETE_TIMEOUT_MS = 30 * 60_000;

/**
 * Reads the host's disk, decides (src/retention/retention-plan.ts) and, unless `dryRun`, deletes what may
 * go through `fenced` (a transport whose every command runs under a fence: the swap's, or a gc's own
 * lease's): old unit files first (so the directories only they named are free to go), then directories.
 * What it freed is df's after minus df's before, as the host measures it.
 */
export async function collectGarbage(
  reader: Exec,
  fenced: Exec | undefined,
  target: GcTarget,
  dryRun: boolean,
): Promise<GcReport> {
  const roots = { modelsDir: target.modelsDir, unitDir: target.unitDir };
  const disk = await readHostDisk(reader, roots);
  const plan = retentionPlan(disk, target.rules);
  const report: GcReport = { host: reader.hostName, dryRun, plan, freeBefore: disk.freeBytes, outcomes: [] };
  if (dryRun || plan.remove.length === 0) return report;
  if (fenced === undefined) throw new Error("a gc that deletes needs a fenced transport");
  const units = plan.remove.filter((v) => v.item.kind === "unit").map((v) => v.item.name);
  if (units.length > 0) {
    const result = await fenced.exec(deleteUnitsCommand(target.unitDir, units, target.sudo, OURS_MARK), {
      timeoutMs: DELETE_TIMEOUT_MS,
    });
    refuseFailure(reader.hostName, result, "unit files");
    report.outcomes.push(...parseDeleteOutcomes(result.stdout));
  }
  const dirs = plan.remove.filter((v) => v.item.kind !== "unit").map((v) => v.item.path);
  if (dirs.length > 0) {
    const result = await fenced.exec(deleteDirsCommand(target.modelsDir, target.unitDir, dirs), {
      timeoutMs: DELETE_TIMEOUT_MS,
    });
    refuseFailure(reader.hostName, result, "directories");
    report.outcomes.push(...parseDeleteOutcomes(result.stdout));
  }
  report.freeAfter = await readFreeDiskBytes(reader, target.modelsDir);
  return report;
}

function refuseFailure(host: string, result: { code: number | null; stderr: string }, what: string): void {
  if (result.code === 0) return;
  throw new CodedError(
    "GC_DELETE_FAILED",
    `${host} could not delete old ${what}: ${(result.stderr.trim() || `exit ${result.code}`).slice(0, 300)}`,
    "check that the bot's user may write the models directory (and, for unit files, the unit directory or its sudo rules: docs/operations.md)",
  );
}

/** The bytes a report says were freed: df's, after minus before (0 in a dry run). */
export function freedBytes(report: GcReport): number {
  return report.freeAfter === undefined ? 0 : Math.max(0, report.freeAfter - report.freeBefore);
}
