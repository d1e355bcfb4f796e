import { z } from "zod";
import { ENGINE_KINDS } from "../engine/engine-kind.ts";
import { engineSourceSchema } from "../engine/engine-source.ts";
import { gpuInfoSchema } from "../gpu/nvidia-smi.ts";
import { modelSummarySchema } from "../hub/types.ts";

/*
 * The plan and what it is made of, as zod schemas: a plan is kept in the swap's record in Redis and read
 * back by other processes, so it is parsed there, never trusted as written. The types are the schemas'.
 */

export const QUANTIZATIONS = ["nvfp4", "fp8", "int4", "bf16", "fp16", "unknown"] as const;
export type Quantization = (typeof QUANTIZATIONS)[number];

/** What the planner needs to know about a model, read from its config.json and quantization config. */
export const modelFactsSchema = z.object({
  /** Recipe family, e.g. "qwen3.5-moe", "kimi-k2", "llama"; "generic" when none matches. */
  family: z.string(),
  /** config.json `architectures[0]`. */
  architecture: z.string(),
  quantization: z.enum(QUANTIZATIONS),
  attentionHeads: z.number(),
  kvHeads: z.number(),
  layers: z.number(),
  hiddenSize: z.number(),
  headDim: z.number(),
  /** Routed experts for MoE models. */
  experts: z.number().optional(),
  maxContext: z.number(),
  weightBytes: z.number(),
  /** config.json has auto_map: the engine needs --trust-remote-code. */
  needsRemoteCode: z.boolean(),
});
export type ModelFacts = z.infer<typeof modelFactsSchema>;

/** What preflight reads from the host. */
export const hostFactsSchema = z.object({
  host: z.string(),
  gpus: z.array(gpuInfoSchema),
  /** Free bytes in the models directory's filesystem. */
  freeDiskBytes: z.number(),
  /** Bytes of this model (this sha) already on disk in its target directory. */
  bytesOnDisk: z.number(),
  /** Total host RAM. */
  memoryBytes: z.number(),
  /** RAM available now (free's `available`: free + reclaimable page cache); absent in older plans. */
  memoryAvailableBytes: z.number().optional(),
  /** vmtouch is installed (the page-cache preload reads the new weights with it). */
  vmtouch: z.boolean().optional(),
  /** The engine venv's python exists and runs. */
  venvOk: z.boolean(),
  /** Which Hub CLI exists on the host. */
  hubCli: z.enum(["hf", "huggingface-cli"]).optional(),
  /** The serving unit now: its name, whether systemd knows it, its unit file text, and its ExecStart words. */
  currentUnit: z.object({
    name: z.string(),
    exists: z.boolean(),
    active: z.boolean(),
    text: z.string(),
    execStart: z.array(z.string()),
  }),
});
export type HostFacts = z.infer<typeof hostFactsSchema>;

export const planCheckSchema = z.object({
  /** Short id: "quantization", "vram", "tp", "disk", "venv", "hub-cli", "recipe", "flags". */
  id: z.string(),
  ok: z.boolean(),
  /** What was checked and found, in one line a person reads ("223 GB fits: 7.1 TB free"). */
  detail: z.string(),
  /** When not ok: what to do. */
  fix: z.string().optional(),
});
export type PlanCheck = z.infer<typeof planCheckSchema>;

/** One environment variable of the unit (a recipe's engine switch), and why. */
export const envChoiceSchema = z.object({ name: z.string(), value: z.string(), reason: z.string() });
export type EnvChoice = z.infer<typeof envChoiceSchema>;

/** One engine flag of the plan: the setting the recipe names, and the spelling this engine build uses. */
export const flagChoiceSchema = z.object({
  /** The recipe's name for the setting, e.g. "fp4-gemm-backend". */
  setting: z.string(),
  /** The flag as this engine spells it (from its --help), e.g. "--fp4-gemm-backend"; undefined when it has none. */
  flag: z.string().optional(),
  /** undefined for boolean flags. */
  value: z.string().optional(),
  reason: z.string(),
  /** The command's positional argument (vLLM's `serve <model>`), not a flag: the unit writes the value alone. */
  positional: z.boolean().optional(),
});
export type FlagChoice = z.infer<typeof flagChoiceSchema>;

/**
 * How clients see the swap. `cold`: the old unit stops before the new one starts (both never run at
 * once). Behind a front door, new requests are held meanwhile (up to holdSeconds) and sent to the new
 * unit once it is healthy and sane; without one they fail until it is healthy. Either way requests in
 * flight finish first (drainSeconds at most). `bluegreen`: the new unit starts beside the old one, behind
 * the front door's other unit slot, is checked there, and the front door flips to it; the old unit
 * drains, stays loaded for the flip-back window, then stops.
 */
export const clientPlanSchema = z.object({
  mode: z.enum(["cold", "bluegreen"]),
  /** Why this mode, in numbers from nvidia-smi (src/plan/client-mode.ts); absent where no estimate was made. */
  why: z.string().optional(),
  drainSeconds: z.number(),
  /**
   * Whether the new weights are read into the page cache before the old unit stops (vmtouch -t), so
   * the load reads memory, not disk; and why (RAM available against the weights, vmtouch there).
   */
  preload: z.object({ will: z.boolean(), why: z.string() }).optional(),
  /**
   * swaps.sleepMode: whether the old unit is parked (the engine's sleep mode: weights to host RAM) instead
   * of stopped, so that a new model that fails wakes it in seconds; and why (or why not). When it is,
   * the new unit listens on `port`, the front door's other slot (the parked unit keeps its own).
   */
  park: z.object({ will: z.boolean(), why: z.string(), port: z.number().int().optional() }).optional(),
  /**
   * `server`: the slot the new unit serves behind; `from`: the slot serving now (the same one in a cold
   * swap; absent in plans made before there were two).
   */
  frontDoor: z
    .object({ server: z.string(), from: z.string().optional(), hold: z.string(), holdSeconds: z.number() })
    .optional(),
  /** The blue/green part: where the new unit runs beside the old one, and how it is checked. */
  blueGreen: z
    .object({
      /** `spare`: GPUs nobody uses; `shared`: the memory the old unit leaves free on its GPUs. */
      gpus: z.enum(["spare", "shared"]),
      /** The physical GPUs the new unit sees (CUDA_VISIBLE_DEVICES). */
      devices: z.array(z.number().int().min(0)),
      /** The port the new unit listens on (its slot's). */
      port: z.number().int(),
      /** The KV cache per GPU it gets beside the old unit, and what it would get alone. */
      kvPerGpuBytes: z.number(),
      fullKvPerGpuBytes: z.number(),
      /**
       * `shared`: the --mem-fraction-static the new unit starts with beside the old one (of the memory
       * free at its start: src/plan/client-mode.ts fractionBeside); absent on spare GPUs.
       */
      memFractionStatic: z.number().optional(),
      /**
       * `shared` with swaps.restartAtFullMemory: once the old unit has stopped, the new unit restarts
       * behind the front door's hold with this unit (its flags without the fraction beside: SGLang's
       * default, or `fraction`, the recipe's or the config's that the one beside replaced).
       */
      restart: z.object({ unitText: z.string(), fraction: z.string().optional() }).optional(),
      /** When the loaded benchmark runs: before the flip at full load or 4 streams, or after it. */
      benchmark: z.enum(["before-flip", "reduced", "after-flip"]),
      flipBackSeconds: z.number(),
    })
    .optional(),
});
export type ClientPlan = z.infer<typeof clientPlanSchema>;

export const swapPlanSchema = z.object({
  model: modelSummarySchema,
  /** The model's facts as the Hub gave them (weightBytes: the bytes it serves). */
  facts: modelFactsSchema,
  /**
   * bench.weightScale when it is not 1 (the demo and the bench): the Hub serves weight files at 1/N of
   * their real size, and every figure of this plan is the real model's (their sizes × N).
   */
  weightScale: z.number().optional(),
  host: hostFactsSchema,
  /** The engine that serves the model (absent: SGLang, in plans made before there was a choice). */
  engineKind: z.enum(ENGINE_KINDS).optional(),
  /** The recipe that chose the flags, e.g. "qwen3.5-moe/nvfp4/sm_120". */
  recipe: z.string(),
  tp: z.number(),
  /** Why this tp. */
  tpReason: z.string(),
  flags: z.array(flagChoiceSchema),
  /** The unit's environment variables from the recipe (absent: none). */
  env: z.array(envChoiceSchema).optional(),
  checks: z.array(planCheckSchema),
  /** True when every check passed. */
  ok: z.boolean(),
  /** Where the model goes on the host. */
  modelDir: z.string(),
  unitName: z.string(),
  unitText: z.string(),
  /** Unified diff of the current unit against the new one ("" when they are the same). */
  unitDiff: z.string(),
  /** Seconds from the old unit's stop to the new one's health, estimated from the weights' size. */
  expectedDowntimeSeconds: z.number(),
  /** What the estimate assumes, in one line (load rate, start-up); absent in plans made before it was said. */
  downtimeBasis: z.string().optional(),
  /** How clients see the swap; absent in plans made before it was said. */
  clients: clientPlanSchema.optional(),
  /** Health wait limit for this model. */
  healthTimeoutSeconds: z.number(),
  /** The swap this plan belongs to (named in the unit file). */
  swapId: z.string(),
  /**
   * The engine source this swap builds and the unit runs (from its own build directory). Absent only in
   * plans made before engine sources were resolved.
   */
  engine: engineSourceSchema.optional(),
  /** The engine's Python venv on the host (ExecStart runs `<venv>/bin/python`). */
  venv: z.string(),
  /** Where serving units are installed on the host, and the new unit's path there. */
  unitDir: z.string(),
  unitPath: z.string(),
  /** What the plan says besides flags and checks ("Hierarchical KV cache off: …", recipe remarks). */
  notes: z.array(z.string()),
});
export type SwapPlan = z.infer<typeof swapPlanSchema>;
