import type { ShellCommand } from "../host/shell-quote.ts";

/*
 * The plan's half of an engine: what a swap needs to know to plan, build and write the unit of a server
 * of this engine. Each engine's answers are in its own module (sglang/sglang-setup.ts, vllm/vllm-setup.ts); the
 * planner, the build stage and the unit renderer ask through this, so no code outside src/engine/ says
 * which engine it is.
 */

/** One setting of the plan. `value` is undefined for boolean flags. */
export interface RecipeSetting {
  setting: string;
  value: string | undefined;
  reason: string;
  /** Where the knowledge comes from (a doc, PR or issue URL, a source file). */
  source?: string;
  /** Who asked for it: "recipe qwen3.5", "host gpu-1", "profile openai/gpt-oss-120b", "swap (--set)". */
  from?: string;
}

/** One environment variable of the unit (the engine reads some switches only from its environment). */
export interface EnvSetting {
  name: string;
  value: string;
  reason: string;
  source?: string;
  from?: string;
}

/**
 * How a recipe setting is spelled on the engine's command line, current upstream first, then older
 * spellings. An older boolean flag can stand for one value of a newer choice flag
 * (`--enable-flashinfer-cutlass-moe` = `--moe-runner-backend flashinfer_cutlass`). `positional`: the
 * setting is the command's positional argument (vLLM's `serve <model>`), never a flag; `flag` then names
 * it for people.
 */
export interface Spelling {
  flag: string;
  /** The setting's value this (boolean) flag means; it then takes no value itself. */
  impliesValue?: string;
  positional?: boolean;
}

/**
 * The engine's memory model, per GPU: the share of GPU memory it is told to take (SGLang's
 * `--mem-fraction-static`, vLLM's `--gpu-memory-utilization`), what that leaves for the KV cache, and
 * the share a unit starting beside another one on the same GPU may take.
 */
export interface EngineMemory {
  /** The recipe setting: "mem-fraction-static", "gpu-memory-utilization". */
  readonly setting: string;
  /** The engine, for people: "SGLang". */
  readonly engine: string;
  /** The engine's default share of a GPU of this size. */
  defaultFraction(gpuMemoryBytes: number): number;
  /** Bytes per GPU the engine keeps outside its KV cache and weights (activations, graphs): for people. */
  reserveBytes(fraction: number, gpuMemoryBytes: number): number;
  /** The KV cache per GPU alone on an idle GPU, at this fraction. */
  kvAlone(fraction: number, gpuMemoryBytes: number, weightsPerGpuBytes: number): number;
  /**
   * The fraction for a unit that starts while another holds memory on the same GPU (`freeAtStartBytes`
   * free, less its own CUDA context), and its KV cache per GPU then; the fraction keeps what the unit
   * alone keeps free (`reserveBytes`) free.
   */
  beside(
    freeAtStartBytes: number,
    gpuMemoryBytes: number,
    reserveBytes: number,
    weightsPerGpuBytes: number,
  ): { fraction: number; kvPerGpuBytes: number };
  /** How the engine applies its fraction, for the plan's reasons: "of the memory free at its start". */
  readonly appliesTo: string;
  /**
   * The engine refuses to start when its KV cache cannot hold one sequence of the model's whole context
   * (vLLM: "max seq len … is larger than the maximum number of tokens that can be stored in KV cache"),
   * so the fit checks the model's maximum when no context-length is set; SGLang caps it instead.
   */
  readonly needsFullContext: boolean;
}

/** What the build of one engine commit needs (BuildInput's engine-neutral part). */
export interface EngineBuildInput {
  upstream: string;
  /** What to fetch: the ref as the upstream names it (refs/heads/main, refs/pull/12/head) or the commit. */
  fetchRef: string;
  /** The commit the plan names: the build refuses anything else (a branch that moved since). */
  commit: string;
  /** A tag's version (v0.18.0 → 0.18.0), when the ref is a tag: some builds name themselves by it. */
  tagVersion?: string;
  /** This build's own directory (engineBuildDir). */
  buildDir: string;
  venv: string;
  patches: readonly string[];
  /** Compile the engine's kernels (false: the upstream's precompiled ones for that commit, where it has them). */
  compileKernels: boolean;
  /** The task's directory: its outputs (commit, version, help.txt). */
  dir: string;
}

/**
 * An engine that can park a loaded model (vLLM's sleep mode, SGLang's memory saver with a CPU backup):
 * its weights leave the GPUs for host RAM and come back in seconds, where a reload takes minutes. Only
 * units started for it can be parked.
 */
export interface EngineSleep {
  /** The mechanism, for people: "sleep mode", "memory saver". */
  readonly name: string;
  /** What a unit needs to be parkable later: flags and environment, each with its reason. */
  readonly settings: readonly RecipeSetting[];
  readonly env: readonly EnvSetting[];
  /** Whether this unit (its file) was started so that it can be parked. */
  parkable(unitText: string): boolean;
  /**
   * Parks the server on `port`: prints the HTTP status (200 once asleep; `000` when nothing answered).
   * An engine that must be idle first waits for that within `timeoutSeconds`.
   */
  sleepCommand(port: number, timeoutSeconds: number): ShellCommand;
  /** Wakes it: prints the HTTP status (200 once its weights are back). */
  wakeCommand(port: number, timeoutSeconds: number): ShellCommand;
  /**
   * GPU memory a parked server still holds on each of its GPUs (CUDA context, communication buffers), as
   * the engine's sources and reports put it: what a new unit starting on those GPUs cannot have. The
   * switch reads the real figure from nvidia-smi once the server is parked.
   */
  readonly keptPerGpuBytes: number;
  /** Where `keptPerGpuBytes` comes from, for the plan. */
  readonly keptSource: string;
}

/**
 * An engine that loads a new revision of the model it serves in place (same architecture, shapes and
 * quantization): the process, its CUDA graphs and its caches stay, only the weights are read again.
 */
export interface EngineInPlace {
  /** The mechanism, for people: "update_weights_from_disk". */
  readonly name: string;
  /**
   * Loads `modelDir`'s weights into the server on `port`: prints the engine's answer, then the HTTP status
   * on a line of its own (200 once the new weights serve; `000` when nothing answered).
   */
  updateCommand(port: number, modelDir: string, timeoutSeconds: number): ShellCommand;
}

export interface EngineSetup {
  /**
   * Settings this engine needs beside others it is given (vLLM: --enable-auto-tool-choice with a
   * --tool-call-parser), each with its reason; none where it needs none.
   */
  companions?(settings: readonly RecipeSetting[]): RecipeSetting[];
  /** Whether the engine has a host-RAM KV cache a recipe may turn on (SGLang's --enable-hierarchical-cache). */
  readonly hierarchicalCache: boolean;
  /** The engine's spellings of a setting, current upstream first (unknown: `--<setting>`). */
  spellingsOf(setting: string): readonly Spelling[];
  readonly memory: EngineMemory;
  /** The Python package, as a version is named: "sglang 0.5.6", "vllm 0.18.0". */
  readonly packageName: string;
  /** Unit names: `<prefix><org>-<name>-<sha7>.service`. */
  readonly unitPrefix: string;
  /**
   * The words of ExecStart before the flags: the venv's python and the engine's entry point (the
   * interpreter is resolved by the caller, so only what follows it).
   */
  readonly entryPoint: readonly string[];
  /** Where a build's importable package lives (the unit's PYTHONPATH), in `buildDir`. */
  importPath(buildDir: string): string;
  /**
   * Settings for how the unit stops: SGLang drains on SIGTERM by itself; vLLM aborts in-flight requests
   * unless `--shutdown-timeout` lets them finish.
   */
  stopSettings(drainSeconds: number | undefined): RecipeSetting[];
  /** What the engine does with requests in flight on SIGTERM, for the unit's comment. */
  readonly stopBehaviour: string;
  /** The detached build of one commit into its own directory (see each engine's build script). */
  buildScript(input: EngineBuildInput): ShellCommand;
  /** How the build gets its kernels, for the plan ("precompiled kernels of that commit"). */
  describeBuild(compileKernels: boolean): string;
  /** The model directory a unit of this engine serves, from its ExecStart words (for rollbacks). */
  modelDirOf(execStart: readonly string[]): string | undefined;
  /** Whether these ExecStart words run this engine. */
  runsIn(execStart: readonly string[]): boolean;
  /** Sleep mode, where the engine has it. */
  readonly sleep?: EngineSleep;
  /** The in-place weight update, where the engine has it. */
  readonly inPlace?: EngineInPlace;
  /**
   * The environment variables that place the engine's compile caches (Triton, torch.compile, FlashInfer,
   * DeepGEMM…), each with the subdirectory of a unit's cache directory it gets (src/plan/engine-caches.ts).
   */
  readonly cacheVariables: readonly { name: string; dir: string }[];
}
