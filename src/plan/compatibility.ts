import { ENGINE_KINDS, ENGINE_NAMES, type EngineKind } from "../engine/engine-kind.ts";
import type { CompatibilityRow } from "./catalogue-schema.ts";
import type { ModelFacts, PlanCheck, Quantization } from "./types.ts";

/*
 * Whether the host's GPUs run the weights' format with an engine, from the catalogue's compatibility
 * table (src/plan/catalogue.yaml: format × compute capability × engine, each row with its source). Only
 * what no row admits is refused, and the refusal says which engine or which GPUs would run it.
 */

export interface ComputeCapability {
  major: number;
  minor: number;
}

const LABEL: Record<Quantization, string> = {
  nvfp4: "NVFP4",
  mxfp4: "MXFP4",
  fp8: "FP8",
  int8: "INT8",
  int4: "INT4",
  bf16: "BF16",
  fp16: "FP16",
  fp32: "FP32",
  unknown: "unknown",
};

export const quantLabel = (q: Quantization): string => LABEL[q];
export const ccLabel = (cc: ComputeCapability): string => `${cc.major}.${cc.minor}`;
export const smLabel = (cc: ComputeCapability): string => `sm_${cc.major}${cc.minor}`;

export function atLeast(cc: ComputeCapability, min: ComputeCapability): boolean {
  return cc.major > min.major || (cc.major === min.major && cc.minor >= min.minor);
}

function parseCc(text: string, upper: boolean): ComputeCapability {
  const [major, minor] = text.split(".") as [string, string];
  return { major: Number(major), minor: minor === "x" ? (upper ? 9 : 0) : Number(minor) };
}

/** Whether cc is in a range of the catalogue: "12.x", ">=8.9", "8.0-8.8" (both ends included), "9.0". */
export function ccIn(range: string, cc: ComputeCapability): boolean {
  if (range.startsWith(">=")) return atLeast(cc, parseCc(range.slice(2), false));
  const [from, to = from] = range.split("-") as [string, string?];
  return atLeast(cc, parseCc(from, false)) && atLeast(parseCc(to!, true), cc);
}

/** A range for people: ">=10.0" → "compute capability 10.0 or newer", "8.0-8.8" → "8.0 to 8.8". */
function describeRange(range: string): string {
  if (range.startsWith(">=")) return `${range.slice(2)} or newer`;
  if (range.endsWith(".x") && !range.includes("-")) return `${range.slice(0, -2)}.*`;
  return range.replace("-", " to ");
}

/** Which GPUs a range of compute capability names, for a fix: "B200/B300 (sm_100), RTX PRO 6000 (sm_120)". */
const GPUS: Array<[ComputeCapability, string]> = [
  [{ major: 8, minor: 0 }, "A100 (sm_80)"],
  [{ major: 8, minor: 9 }, "L40S (sm_89)"],
  [{ major: 9, minor: 0 }, "H100/H200 (sm_90)"],
  [{ major: 10, minor: 0 }, "B200/B300 (sm_100)"],
  [{ major: 12, minor: 0 }, "RTX PRO 6000 Blackwell (sm_120)"],
];

function gpusIn(ranges: readonly string[]): string {
  const names = GPUS.filter(([cc]) => ranges.some((r) => ccIn(r, cc))).map(([, name]) => name);
  return names.length === 0 ? `compute capability ${ranges.map(describeRange).join(", ")}` : names.join(", ");
}

/** The row that admits this format (and method) with this engine on these GPUs, if any. */
export function compatibleRow(
  facts: Pick<ModelFacts, "quantization" | "quant" | "experts">,
  cc: ComputeCapability,
  engine: EngineKind,
  table: readonly CompatibilityRow[],
): CompatibilityRow | undefined {
  return rowsFor(facts, engine, table).find((row) => row.cc.some((r) => ccIn(r, cc)));
}

/** The rows for this format (and method) and engine: a row naming methods applies to those alone. */
function rowsFor(
  facts: Pick<ModelFacts, "quantization" | "quant" | "experts">,
  engine: EngineKind,
  table: readonly CompatibilityRow[],
): CompatibilityRow[] {
  const method = facts.quant?.method;
  const moe = facts.experts !== undefined;
  const rows = table.filter(
    (row) =>
      row.format === facts.quantization &&
      row.engine === engine &&
      (row.moe === undefined || row.moe === moe),
  );
  // a method rows of this format name (for either engine) has its own rows: the general ones do not apply
  const named =
    method !== undefined &&
    table.some((row) => row.format === facts.quantization && row.methods?.includes(method));
  return named
    ? rows.filter((row) => row.methods?.includes(method))
    : rows.filter((row) => row.methods === undefined);
}

/** What the format is, for people: "MXFP4 (…description…)". */
function formatText(facts: Pick<ModelFacts, "quantization" | "quant">): string {
  const label = LABEL[facts.quantization];
  return facts.quant === undefined ? label : `${label} (${facts.quant.description})`;
}

/**
 * The plan's "quantization" check: whether this engine runs the weights' format on these GPUs, how (the
 * row's words), and otherwise which engine the host has (or could have) and which GPUs would run it.
 */
export function quantizationCheck(input: {
  facts: Pick<ModelFacts, "quantization" | "quant" | "experts">;
  cc: ComputeCapability;
  gpuName: string;
  engine: EngineKind;
  /** The engines this host has (its own, and hosts[].engines). */
  hostEngines: readonly EngineKind[];
  table: readonly CompatibilityRow[];
}): PlanCheck & { row?: CompatibilityRow } {
  const { facts, cc, gpuName, engine, table } = input;
  const on = `${gpuName} (compute capability ${ccLabel(cc)})`;
  const name = ENGINE_NAMES[engine];
  // a format modelswap cannot read is refused unless a row names its method (recipes.compatibility)
  if (facts.quantization === "unknown" && compatibleRow(facts, cc, engine, table) === undefined) {
    const q = facts.quant;
    return {
      id: "quantization",
      ok: false,
      detail: `could not tell the weights' format${q === undefined ? " from config.json or hf_quant_config.json" : `: ${q.description} (${q.source})`}, so modelswap cannot say whether ${name} runs it`,
      fix: `pick a checkpoint of this model in a format the engines serve (NVFP4, MXFP4, FP8, INT8, INT4 as AWQ, GPTQ or compressed-tensors, bitsandbytes, BF16, FP16); or, if ${name} does serve it on these GPUs, an admin says so in recipes.compatibility (a row with format unknown and methods [${q?.method ?? "its method"}], with its source)`,
    };
  }
  const row = compatibleRow(facts, cc, engine, table);
  if (row !== undefined) {
    return {
      id: "quantization",
      ok: true,
      detail: `${formatText(facts)} runs on ${on} with ${name}: ${row.how}`,
      row,
    };
  }
  const rows = rowsFor(facts, engine, table);
  const needs =
    rows.length === 0
      ? `${name} does not serve it at all`
      : `${name} runs it on compute capability ${rows
          .flatMap((r) => r.cc)
          .map(describeRange)
          .join(" or ")} (${rows[0]!.source})`;
  const others = ENGINE_KINDS.filter((k) => k !== engine)
    .map((k) => ({ kind: k, row: compatibleRow(facts, cc, k, table) }))
    .filter((o): o is { kind: EngineKind; row: CompatibilityRow } => o.row !== undefined);
  const fixes = others.map(({ kind, row: other }) =>
    input.hostEngines.includes(kind)
      ? `${ENGINE_NAMES[kind]} runs it on these GPUs (${other.how}): add --engine ${kind}`
      : `${ENGINE_NAMES[kind]} would run it on these GPUs (${other.how}), but this host has no ${ENGINE_NAMES[kind]} (hosts[].engines.${kind})`,
  );
  if (rows.length > 0)
    fixes.push(`${name} runs it on ${gpusIn(rows.flatMap((r) => r.cc))}: another host with --host`);
  fixes.push("or a checkpoint of this model in a format these GPUs run");
  return {
    id: "quantization",
    ok: false,
    detail: `${formatText(facts)} does not run on ${on} with ${name}: ${needs}`,
    fix: fixes.join("; "),
  };
}
