import { engineOfExecStart } from "../engine/engines.ts";
import type { ModelSummary } from "../hub/types.ts";
import { execStartWords } from "../plan/read-host-facts.ts";
import type { ClientPlan, FlagChoice, HostFacts, ModelFacts, PlanCheck, SwapPlan } from "../plan/types.ts";
import { unifiedDiff } from "../plan/unit-diff.ts";

export interface RollbackPlanInput {
  swapId: string;
  host: HostFacts;
  hostConfig: { modelsDir: string; venv: string; unitDir: string };
  /** The unit to go back to, as it is on the host. */
  target: { name: string; path: string; text: string; modelDirExists: boolean };
  /** The plan of the swap that once installed the target unit, when there was one. */
  earlier: SwapPlan | undefined;
  /** How clients see it, and the front door's check when the host has one. */
  clients?: ClientPlan;
  frontDoorCheck?: PlanCheck;
}

/**
 * The plan of a rollback: the unit that served before goes back as it is on the host — same file, same
 * flags, same model files — so there is nothing to download or build. Its checks are that the unit and
 * the model files it names are still there.
 */
export function rollbackPlan(input: RollbackPlanInput): SwapPlan {
  const { target, host, earlier } = input;
  const words = execStartWords(target.text);
  const engine = engineOfExecStart(words);
  const flags = flagsOf(words);
  const modelDir = engine.modelDirOf(words) ?? "";
  const served = flags.find((f) => f.setting === "served-model-name")?.value;
  const checks: PlanCheck[] = [
    {
      id: "unit",
      ok: target.text.trim() !== "",
      detail:
        target.text.trim() !== ""
          ? `${target.name} is still installed (${target.path})`
          : `${target.name} is gone from the host`,
      ...(target.text.trim() === ""
        ? { fix: "the old unit file was removed; swap to the old model by name instead" }
        : {}),
    },
    {
      id: "model-files",
      ok: target.modelDirExists,
      detail: target.modelDirExists
        ? `its model files are in ${modelDir}`
        : `its model files are missing (${modelDir || "the unit names no model directory"})`,
      ...(target.modelDirExists
        ? {}
        : { fix: "the files were deleted; swap to the old model by name, which downloads it again" }),
    },
    ...(input.frontDoorCheck === undefined ? [] : [input.frontDoorCheck]),
  ];
  const model: ModelSummary = earlier?.model ?? {
    repo: served ?? target.name,
    revision: "installed",
    sha: "",
    files: [],
    totalBytes: 0,
    weightBytes: 0,
    gated: false,
  };
  const facts: ModelFacts = earlier?.facts ?? {
    family: "as installed",
    architecture: "",
    quantization: "unknown",
    attentionHeads: 0,
    kvHeads: 0,
    layers: 0,
    hiddenSize: 0,
    headDim: 0,
    maxContext: 0,
    weightBytes: 0,
    needsRemoteCode: false,
  };
  const tp = Number(
    flags.find((f) => ["tp-size", "tp", "tensor-parallel-size"].includes(f.setting))?.value ??
      earlier?.tp ??
      1,
  );
  return {
    model,
    facts,
    host,
    engineKind: engine.kind,
    recipe: earlier?.recipe ?? "as installed",
    tp,
    tpReason: "as the unit has it",
    flags,
    checks,
    ok: checks.every((c) => c.ok),
    modelDir: earlier?.modelDir ?? modelDir,
    unitName: target.name,
    unitText: target.text,
    unitDiff: unifiedDiff(host.currentUnit.text, target.text, host.currentUnit.name, target.name),
    expectedDowntimeSeconds: earlier?.expectedDowntimeSeconds ?? 120,
    // the earlier plan's figures and what they assumed (on the bench, the real model's)
    ...(earlier?.downtimeBasis === undefined ? {} : { downtimeBasis: earlier.downtimeBasis }),
    ...(earlier?.weightScale === undefined ? {} : { weightScale: earlier.weightScale }),
    healthTimeoutSeconds: earlier?.healthTimeoutSeconds ?? 900,
    ...(input.clients === undefined ? {} : { clients: input.clients }),
    swapId: input.swapId,
    venv: earlier?.venv ?? input.hostConfig.venv,
    unitDir: input.hostConfig.unitDir,
    unitPath: target.path,
    notes: [
      `Rollback: \`${target.name}\` goes back exactly as it is installed; nothing is downloaded or built.`,
    ],
  };
}

/** `--name value` pairs (and bare `--switch`es) of an ExecStart, as the plan shows flags. */
function flagsOf(words: readonly string[]): FlagChoice[] {
  const flags: FlagChoice[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (!word.startsWith("--")) continue;
    const next = words[i + 1];
    const value = next !== undefined && !next.startsWith("--") ? next : undefined;
    if (value !== undefined) i++;
    flags.push({ setting: word.slice(2), flag: word, value, reason: "as in the installed unit" });
  }
  return flags;
}
