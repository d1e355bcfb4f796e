import { engineOfExecStart } from "../../src/engine/engines.ts";
import { describeError } from "../../src/errors.ts";
import { type GpuInfo, readGpus } from "../../src/gpu/nvidia-smi.ts";
import { modelName } from "../../src/grammar/model-name.ts";
import { sh } from "../../src/host/shell-quote.ts";
import type { HostTransport } from "../../src/host/transport.ts";
import { execStartFlag, execStartWords } from "../../src/plan/read-host-facts.ts";
import { interestingTail } from "../../src/status/probe-host.ts";

/** What an alert shows beyond the failing check, read from the host when the alert is about to go out. */
export interface IncidentFacts {
  /** The unit's last journal lines (from the last traceback on, else the last 15). */
  journalTail: string[];
  /** Why the journal could not be read, if it could not. */
  journalProblem: string | undefined;
  /** The nvidia-smi snapshot. */
  gpus: GpuInfo[];
  gpuProblem: string | undefined;
  /** The model the unit serves, from its ExecStart (`--served-model-name`, else its model directory). */
  unitModel: string | undefined;
}

/**
 * Reads the journal tail, an nvidia-smi snapshot and the unit's model, concurrently, each bounded by
 * the timeout. Never throws: what cannot be read is reported as such in the alert.
 */
export async function readIncidentFacts(
  transport: HostTransport,
  unit: string,
  timeoutMs: number,
): Promise<IncidentFacts> {
  const [journal, gpus, unitText] = await Promise.allSettled([
    transport.exec(sh`journalctl -u ${unit} -n 120 --no-pager -o cat`, {
      timeoutMs,
      maxOutputBytes: 256 * 1024,
    }),
    readGpus(transport, { timeoutMs }),
    transport.exec(sh`systemctl cat ${unit}`, { timeoutMs, maxOutputBytes: 256 * 1024 }),
  ]);
  const facts: IncidentFacts = {
    journalTail: [],
    journalProblem: undefined,
    gpus: [],
    gpuProblem: undefined,
    unitModel: undefined,
  };
  if (journal.status === "fulfilled") {
    const lines = journal.value.stdout
      .split("\n")
      .filter((line) => line.trim() !== "" && line !== "-- No entries --");
    facts.journalTail = interestingTail(lines);
    if (lines.length === 0) facts.journalProblem = `the journal has no lines for ${unit}`;
  } else {
    facts.journalProblem = describeError(journal.reason);
  }
  if (gpus.status === "fulfilled") {
    facts.gpus = gpus.value;
  } else {
    facts.gpuProblem = describeError(gpus.reason);
  }
  if (unitText.status === "fulfilled" && unitText.value.code === 0) {
    facts.unitModel = modelOfUnit(unitText.value.stdout);
  }
  return facts;
}

/**
 * The model a serving unit names: `--served-model-name`, else the last part of its model directory
 * (its engine's: SGLang's `--model-path`, vLLM's `serve <model>`).
 */
export function modelOfUnit(unitText: string): string | undefined {
  const words = execStartWords(unitText);
  const served = execStartFlag(words, "--served-model-name");
  if (served !== undefined && served !== "") return served;
  const path = engineOfExecStart(words).modelDirOf(words);
  return path === undefined || path === "" ? undefined : modelName(path);
}
