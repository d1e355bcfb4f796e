import { z } from "zod";
import { ENGINE_KINDS } from "../engine/engine-kind.ts";
import { engineSourceSchema } from "../engine/engine-source.ts";
import { gpuInfoSchema } from "../gpu/nvidia-smi.ts";
import { modelSummarySchema } from "../hub/types.ts";

/*
 * The plan and what it is made of, as zod schemas: a plan is kept in the swap's record in Redis and read
 * back by other processes, so it is parsed there, never trusted as written. The types are the schemas'.
 */

/** The weights' number format: the compatibility table's rows (src/plan/catalogue.yaml). */
export const QUANTIZATIONS = [
  "nvfp4",
  "mxfp4",
  "fp8",
  "int8",
  "int4",
  "bf16",
  "fp16",
  "fp32",
  "unknown",
] as const;
export type Quantization = (typeof QUANTIZATIONS)[number];

/** The weights' quantization as the checkpoint states it (src/plan/quant-facts.ts). */
export const quantFactsSchema = z.object({
  format: z.enum(QUANTIZATIONS),
  /**
   * The method as the engines know it: modelopt, mxfp4, fp8, fbgemm_fp8, awq, gptq, compressed-tensors,
   * bitsandbytes; "none" for unquantized weights; otherwise what the checkpoint names.
   */
  method: z.string(),
  /** For people: "FP8 e4m3 in 128×128 blocks, dynamic activations". */
  description: z.string(),
  weightBits: z.number().optional(),
  activationBits: z.number().optional(),
  groupSize: z.number().optional(),
  scheme: z.enum(["block", "channel", "tensor", "group"]).optional(),
  blockSize: z.array(z.number()).optional(),
  /** Where it was read: "hf_quant_config.json", "config.json quantization_config", "config.json torch_dtype". */
  source: z.string(),
});
export type QuantFacts = z.infer<typeof quantFactsSchema>;

/** One Python file the engine would import with --trust-remote-code, and which configs name it. */
export const remoteCodeFileSchema = z.object({
  /** The module's file, e.g. "tokenization_kimi.py". */
  file: z.string(),
  /** Another repo it is fetched from ("org/name", at that repo's main branch); absent: the model's own repo. */
  repo: z.string().optional(),
  /** The configs whose auto_map name it, e.g. "tokenizer_config.json", "config.json text_config". */
  namedBy: z.array(z.string()),
  /** The model's repo has no such file: the engine would fail to import it. */
  missing: z.boolean().optional(),
});
export type RemoteCodeFile = z.infer<typeof remoteCodeFileSchema>;

/**
 * The repo's Python that runs when the engine loads the model with --trust-remote-code, read from the
 * repo's files (src/plan/remote-code.ts): every auto_map of the configs transformers reads, and the
 * repo's *.py. Lists are bounded (REMOTE_CODE_MAX_NAMES, then a count), so a repo cannot grow a plan.
 */
export const remoteCodeSchema = z.object({
  files: z.array(remoteCodeFileSchema),
  /** Files named past the list's bound. */
  moreFiles: z.number().int().nonnegative(),
  /** Other repos whose code an auto_map names (`org/name--module.Class`): their orgs run code too. */
  otherRepos: z.array(z.string()),
  moreOtherRepos: z.number().int().nonnegative(),
  /** auto_map entries that name no module modelswap can read (as written, quoted and cut). */
  unreadable: z.array(z.string()),
  moreUnreadable: z.number().int().nonnegative(),
  /** The repo's other *.py files: a module named above may import them (`from .x import`). */
  otherPy: z.array(z.string()),
  moreOtherPy: z.number().int().nonnegative(),
});
export type RemoteCode = z.infer<typeof remoteCodeSchema>;

/** What the planner needs to know about a model, read from its config.json and quantization config. */
export const modelFactsSchema = z.object({
  /** Recipe family, e.g. "qwen3.5-moe", "kimi-k2", "llama"; "generic" when none matches. */
  family: z.string(),
  /** config.json `architectures[0]`. */
  architecture: z.string(),
  /** config.json `model_type`, and text_config's when the language model is nested (absent in older plans). */
  modelType: z.string().optional(),
  textModelType: z.string().optional(),
  /** The weights' format (the compatibility table's row); `quant` says how it was read. */
  quantization: z.enum(QUANTIZATIONS),
  /** The quantization in full (absent in plans made before it was read). */
  quant: quantFactsSchema.optional(),
  attentionHeads: z.number(),
  kvHeads: z.number(),
  layers: z.number(),
  hiddenSize: z.number(),
  headDim: z.number(),
  /** Layers that keep every token's KV (the others a window, a chunk or a linear state); absent: all. */
  fullAttentionLayers: z.number().optional(),
  /** MLA attention (DeepSeek-V3, Kimi K2): the compressed KV's rank and the rope part of a head (absent otherwise). */
  kvLoraRank: z.number().optional(),
  qkRopeHeadDim: z.number().optional(),
  /** Routed experts for MoE models. */
  experts: z.number().optional(),
  maxContext: z.number(),
  weightBytes: z.number(),
  /**
   * The repo's Python runs when the engine loads the model (--trust-remote-code): `remoteCode` is present.
   * Kept beside it for records written before remoteCode (true there: config.json had an auto_map).
   */
  needsRemoteCode: z.boolean(),
  /** Which of the repo's Python runs, and who names it; absent: none of it runs. */
  remoteCode: remoteCodeSchema.optional(),
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
    /** The unit file was larger than modelswap reads (MAX_UNIT_FILE_BYTES): its size, and `text` is empty. */
    oversizeBytes: z.number().int().optional(),
  }),
});
export type HostFacts = z.infer<typeof hostFactsSchema>;

/**
 * The largest serving unit file modelswap reads (unit files are a few KB): it is kept in the plan, with
 * the new unit's diff against it, and a swap record must stay small (src/store/swap-records.ts).
 */
export const MAX_UNIT_FILE_BYTES = 64 * 1024;

export const planCheckSchema = z.object({
  /** Short id: "quantization", "vram", "tp", "disk", "venv", "hub-cli", "recipe", "flags". */
  id: z.string(),
  ok: z.boolean(),
  /** What was checked and found, in one line a person reads ("223 GB fits: 7.1 TB free"). */
  detail: z.string(),
  /** When not ok: what to do. */
  fix: z.string().optional(),
  /** The disk check: it passes only once disk retention has deleted what it may (after approval, before the download). */
  reclaimFirst: z.boolean().optional(),
});
export type PlanCheck = z.infer<typeof planCheckSchema>;

/** One environment variable of the unit (a recipe's engine switch), and why. */
export const envChoiceSchema = z.object({
  name: z.string(),
  value: z.string(),
  reason: z.string(),
  source: z.string().optional(),
  from: z.string().optional(),
});
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
  /** Where the knowledge comes from (a doc, PR or issue URL, a source file), when a recipe says. */
  source: z.string().optional(),
  /**
   * Who asked for it: "recipe qwen3.5", "host gpu-1" (hosts[].flags), "profile <model>" (models[]),
   * "swap (--set)", "engine (vLLM)"; absent: the plan's own (model path, port, tp, …).
   */
  from: z.string().optional(),
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
  park: z
    .object({
      will: z.boolean(),
      why: z.string(),
      port: z.number().int().optional(),
      /** The new unit's memory fraction beside what the parked engine keeps, and its KV cache per GPU then. */
      memFractionStatic: z.number().optional(),
      kvPerGpuBytes: z.number().optional(),
      /** About how long a rollback takes to bring the parked weights back (from the bytes per GPU). */
      wakeSeconds: z.number().optional(),
    })
    .optional(),
  /**
   * A new revision of the model serving now, loaded into the running engine (src/plan/in-place-plan.ts):
   * `will` and why (or why not). When it will, the plan's unit is the running one's (its name kept, the
   * model path changed), rewritten once the new weights have passed their checks.
   */
  inPlace: z
    .object({
      will: z.boolean(),
      why: z.string(),
      /** The engine's mechanism: "update_weights_from_disk". */
      mechanism: z.string().optional(),
      /** The directory and commit the running engine loaded: what a rollback loads back. */
      fromModelDir: z.string().optional(),
      fromSha: z.string().optional(),
      /** About how long the engine pauses for the load, from the page cache. */
      seconds: z.number().optional(),
    })
    .optional(),
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
  /** The engine that serves the model (plans made before there was a choice: SGLang, store migration v3). */
  engineKind: z.enum(ENGINE_KINDS),
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
