import type { GpuInfo } from "../gpu/nvidia-smi.ts";
import type { ModelInfo } from "../hub/types.ts";

export type Quantization = "nvfp4" | "fp8" | "int4" | "bf16" | "fp16" | "unknown";

/** What the planner needs to know about a model, read from its config.json and quantization config. */
export interface ModelFacts {
  /** Recipe family, e.g. "qwen3.5-moe", "kimi-k2", "llama"; "generic" when none matches. */
  family: string;
  /** config.json `architectures[0]`. */
  architecture: string;
  quantization: Quantization;
  attentionHeads: number;
  kvHeads: number;
  layers: number;
  hiddenSize: number;
  headDim: number;
  /** Routed experts for MoE models. */
  experts: number | undefined;
  maxContext: number;
  weightBytes: number;
  /** config.json has auto_map: the engine needs --trust-remote-code. */
  needsRemoteCode: boolean;
}

/** What preflight reads from the host. */
export interface HostFacts {
  host: string;
  gpus: GpuInfo[];
  /** Free bytes in the models directory's filesystem. */
  freeDiskBytes: number;
  /** Bytes of this model (this sha) already on disk in its target directory. */
  bytesOnDisk: number;
  /** Total host RAM. */
  memoryBytes: number;
  /** The engine venv's python exists and runs. */
  venvOk: boolean;
  /** Which Hub CLI exists on the host. */
  hubCli: "hf" | "huggingface-cli" | undefined;
  /** The serving unit now: its name, whether systemd knows it, its unit file text, and its ExecStart words. */
  currentUnit: { name: string; exists: boolean; active: boolean; text: string; execStart: string[] };
}

export interface PlanCheck {
  /** Short id: "quantization", "vram", "tp", "disk", "venv", "hub-cli", "recipe", "flags". */
  id: string;
  ok: boolean;
  /** What was checked and found, in one line a person reads ("223 GB fits: 7.1 TB free"). */
  detail: string;
  /** When not ok: what to do. */
  fix?: string;
}

/** One engine flag of the plan: the setting the recipe names, and the spelling this engine build uses. */
export interface FlagChoice {
  /** The recipe's name for the setting, e.g. "fp4-gemm-backend". */
  setting: string;
  /** The flag as this engine spells it (from its --help), e.g. "--fp4-gemm-backend"; undefined when it has none. */
  flag: string | undefined;
  /** undefined for boolean flags. */
  value: string | undefined;
  reason: string;
}

export interface SwapPlan {
  model: ModelInfo;
  facts: ModelFacts;
  host: HostFacts;
  /** The recipe that chose the flags, e.g. "qwen3.5-moe/nvfp4/sm_120". */
  recipe: string;
  tp: number;
  /** Why this tp. */
  tpReason: string;
  flags: FlagChoice[];
  checks: PlanCheck[];
  /** True when every check passed. */
  ok: boolean;
  /** Where the model goes on the host. */
  modelDir: string;
  unitName: string;
  unitText: string;
  /** Unified diff of the current unit against the new one ("" when they are the same). */
  unitDiff: string;
  /** Seconds from the old unit's stop to the new one's health, estimated from the weights' size. */
  expectedDowntimeSeconds: number;
  /** Health wait limit for this model. */
  healthTimeoutSeconds: number;
  /** The swap this plan belongs to (named in the unit file). */
  swapId: string;
  /** The engine's Python venv on the host (ExecStart runs `<venv>/bin/python`). */
  venv: string;
  /** Where serving units are installed on the host, and the new unit's path there. */
  unitDir: string;
  unitPath: string;
  /** What the plan says besides flags and checks ("Hierarchical KV cache off: …", recipe remarks). */
  notes: string[];
}
