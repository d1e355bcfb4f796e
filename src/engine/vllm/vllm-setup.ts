import { sh } from "../../host/shell-quote.ts";
import { curlStatus } from "../engine.ts";
import type {
  EngineBuildInput,
  EngineMemory,
  EngineSetup,
  EngineSleep,
  RecipeSetting,
  Spelling,
} from "../engine-setup.ts";
import { fetchSource, flagValueOf } from "../source-checkout.ts";

/*
 * vLLM's plan half (0.18): its flag spellings, its memory model, its
 * build per commit (precompiled kernels) and the unit's entry point. Sources: testbench/gpu-host/VLLM.md,
 * which cites vllm-project/vllm for each behaviour.
 */

const SPELLINGS: Record<string, readonly Spelling[]> = {
  // `vllm serve <model>`: the model is the positional model_tag (`--model` is deprecated there, with a warning)
  "model-path": [{ flag: "model_tag", positional: true }],
  "tp-size": [{ flag: "--tensor-parallel-size" }, { flag: "-tp" }],
  // the model's context length is vLLM's max-model-len (vllm/config/model.py)
  "context-length": [{ flag: "--max-model-len" }],
};

/**
 * vLLM's API server refuses --tool-call-parser without --enable-auto-tool-choice, and the tool calls a
 * parser returns need it (docs.vllm.ai "Tool Calling"; vllm/entrypoints/openai/api_server.py).
 */
function companions(settings: readonly RecipeSetting[]): RecipeSetting[] {
  const parser = settings.find((s) => s.setting === "tool-call-parser");
  if (parser === undefined || settings.some((s) => s.setting === "enable-auto-tool-choice")) return [];
  return [
    {
      setting: "enable-auto-tool-choice",
      value: undefined,
      reason:
        "lets the model call tools when a request offers them (tool_choice auto); vLLM needs it with a --tool-call-parser",
      source: "https://docs.vllm.ai/en/latest/features/tool_calling.html",
      from: "engine (vLLM)",
    },
  ];
}

const GiB = 2 ** 30;
/** vLLM's default --gpu-memory-utilization (vllm/config/cache.py). */
export const VLLM_GPU_MEMORY_UTILIZATION = 0.9;
/**
 * Inside vLLM's budget but outside weights and KV cache: the profiled activation peak (≈ 0.3 GiB plus
 * hidden × max_num_batched_tokens × 20 B, at most 4 GiB), non-torch memory and CUDA graphs
 * (gpu_worker.py determine_available_memory): 2 GiB, a middle figure.
 */
const VLLM_ACTIVATION_BYTES = 2 * GiB;
/** Outside the budget: CUDA graphs' pool and the allocator's slack beside another process. */
const VLLM_OUTSIDE_BUDGET_BYTES = 1 * GiB;

/**
 * vLLM's memory (per GPU): `--gpu-memory-utilization` is the share of the GPU's *total* memory this
 * instance may use, weights, activations and KV cache together (vllm/config/cache.py: "a per-instance
 * limit"); at start it refuses when less than that is free (gpu_worker.py init_device: "Free memory on
 * device … is less than desired GPU memory utilization"). So beside another unit the new one's share is
 * what is free, not its default.
 */
const kvAlone = (fraction: number, gpu: number, weights: number): number =>
  fraction * gpu - weights - VLLM_ACTIVATION_BYTES;

export const vllmMemory: EngineMemory = {
  setting: "gpu-memory-utilization",
  engine: "vLLM",
  defaultFraction: () => VLLM_GPU_MEMORY_UTILIZATION,
  reserveBytes: (fraction, gpu) => (1 - fraction) * gpu,
  kvAlone,
  // the share of the total that is free at its start, less what it holds outside its budget; rounded down
  beside: (free, gpu, _reserve, weights) => {
    const fraction = Math.max(0, Math.floor(((free - VLLM_OUTSIDE_BUDGET_BYTES) / gpu) * 100) / 100);
    return { fraction, kvPerGpuBytes: kvAlone(fraction, gpu, weights) };
  },
  appliesTo: "vLLM applies it to the GPU's total memory and refuses to start when less than that is free",
  // vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory
  needsFullContext: true,
};

/**
 * The detached vLLM build of one commit, in a directory of its own, on the venv's packages and never
 * into them: the source is fetched and checked as SGLang's is (fetchSource), then
 * `pip install --no-deps --no-build-isolation --target <build>/site <build>` builds vLLM of that commit
 * into `<build>/site` alone (pip's --target: nothing in the venv changes, not even vLLM itself). With
 * `VLLM_USE_PRECOMPILED=1` vLLM's setup.py takes the compiled kernels of that commit from its
 * precompiled wheel instead of compiling them (docs.vllm.ai, "Set up using Python-only build (without
 * compilation)"); without it the kernels are compiled (CUDA toolkit, an hour or more). A tag names the
 * version (SETUPTOOLS_SCM_PRETEND_VERSION: a depth-1 fetch has no tags for setuptools-scm to read).
 * The unit imports vLLM from `<build>/site` (PYTHONPATH, ahead of the venv's site-packages); the checks
 * run it the same way: the import, and `vllm serve --help=all` (the short help lists groups, not flags).
 */
function buildScript(input: EngineBuildInput) {
  const out = (name: string) => `${input.dir}/${name}`;
  const build = input.buildDir.replace(/\/+$/, "");
  const partial = `${build}.partial`;
  const python = `${input.venv}/bin/python`;
  const pip = `${input.venv}/bin/pip`;
  const site = `${build}/site`;
  const kernels = input.compileKernels ? "VLLM_USE_PRECOMPILED=0" : "VLLM_USE_PRECOMPILED=1";
  const version =
    input.tagVersion === undefined ? sh`` : sh`SETUPTOOLS_SCM_PRETEND_VERSION=${input.tagVersion}`;
  return sh`if [ ! -f ${`${build}/.modelswap-built`} ]; then
${fetchSource(input, partial)}
echo ${`modelswap: installing vllm into ${site} (${input.compileKernels ? "compiling its kernels" : "the precompiled kernels of this commit"}); the venv is not changed`}
(cd ${partial} && env ${kernels} ${version} ${pip} install --no-deps --no-build-isolation --target ${`${partial}/site`} ${partial})
echo ${input.commit} > ${`${partial}/.modelswap-built`}
rm -rf ${build}
mv ${partial} ${build}
fi
git -C ${build} rev-parse HEAD > ${out("commit")}
echo ${build} > ${out("build-dir")}
PYTHONPATH=${site} ${python} -c 'import vllm; print(vllm.__version__)' > ${out("version")}
PYTHONPATH=${site} ${python} -m vllm.entrypoints.cli.main serve --help=all > ${out("help.txt")}
echo "modelswap: built $(cat ${out("commit")}) (vllm $(cat ${out("version")})) in "${build}`;
}

/**
 * vLLM's sleep mode (docs.vllm.ai "Sleep Mode"; vllm/entrypoints/serve/sleep/api_router.py): a server
 * started with `--enable-sleep-mode` and `VLLM_SERVER_DEV_MODE=1` answers `POST /sleep?level=1` by
 * moving its weights to host RAM and dropping its KV cache (its GPU memory falls to the CUDA context),
 * and `POST /wake_up` by putting them back, in seconds. The development endpoints come with the dev
 * mode: the front door must not forward them (docs/front-door.md).
 */
const DEV_MODE = "VLLM_SERVER_DEV_MODE";
const vllmSleep: EngineSleep = {
  name: "sleep mode",
  settings: [
    {
      setting: "enable-sleep-mode",
      value: undefined,
      reason:
        "swaps.sleepMode: a later swap parks this model (weights to host RAM) instead of stopping it, and wakes it in seconds if the new one fails",
    },
  ],
  env: [
    {
      name: DEV_MODE,
      value: "1",
      reason:
        "vLLM serves /sleep and /wake_up only in dev mode (swaps.sleepMode); its development endpoints listen on loopback, and the front door must not forward them",
    },
  ],
  parkable: (text) =>
    /(^|\s)--enable-sleep-mode(\s|$)/m.test(text.replace(/\\\n/g, " ")) &&
    new RegExp(`^Environment="?${DEV_MODE}=1"?$`, "m").test(text),
  sleepCommand: (port, timeout) => curlStatus(`http://127.0.0.1:${port}/sleep?level=1`, timeout, ""),
  wakeCommand: (port, timeout) => curlStatus(`http://127.0.0.1:${port}/wake_up`, timeout, ""),
  // ../shared/DESIGN.md §10: "a sleeping engine still holds about 7 GB per GPU (vllm#47654)"
  keptPerGpuBytes: 7e9,
  keptSource: "about 7 GB per GPU, as vllm#47654 reports of a sleeping engine",
};

/**
 * Where vLLM's compile caches go: VLLM_CACHE_ROOT holds its torch.compile cache (torch_compile_cache/,
 * vllm/envs.py), and the kernel libraries beneath it keep their own (the roots ModelExpress moves:
 * TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR, FLASHINFER_WORKSPACE_BASE, TVM_FFI_CACHE_DIR,
 * CUTE_DSL_CACHE_DIR).
 */
const VLLM_CACHES = [
  { name: "VLLM_CACHE_ROOT", dir: "vllm" },
  { name: "TRITON_CACHE_DIR", dir: "triton" },
  { name: "TORCHINDUCTOR_CACHE_DIR", dir: "inductor" },
  { name: "FLASHINFER_WORKSPACE_BASE", dir: "flashinfer" },
  { name: "TVM_FFI_CACHE_DIR", dir: "tvm-ffi" },
  { name: "CUTE_DSL_CACHE_DIR", dir: "cute-dsl" },
] as const;

export const vllmSetup: EngineSetup = {
  sleep: vllmSleep,
  cacheVariables: VLLM_CACHES,
  companions,
  spellingsOf: (setting) => SPELLINGS[setting] ?? [{ flag: `--${setting}` }],
  memory: vllmMemory,
  hierarchicalCache: false,
  packageName: "vllm",
  unitPrefix: "vllm-",
  entryPoint: ["-m", "vllm.entrypoints.cli.main", "serve"],
  importPath: (buildDir) => `${buildDir.replace(/\/+$/, "")}/site`,
  stopSettings: (drainSeconds): RecipeSetting[] => [
    {
      setting: "shutdown-timeout",
      value: String(drainSeconds ?? 120),
      reason:
        "vLLM aborts requests in flight on SIGTERM unless this lets them finish (vllm PR #34730, 0.18 and later); the unit's TimeoutStopSec leaves it 30 s more",
    },
  ],
  stopBehaviour: "vLLM lets requests in flight finish for --shutdown-timeout seconds on SIGTERM",
  buildScript,
  describeBuild: (compile) =>
    compile
      ? "a source checkout with its CUDA kernels compiled on the host (CUDA toolkit needed; an hour or more)"
      : "a source checkout with the precompiled kernels of that commit (VLLM_USE_PRECOMPILED=1), installed beside the venv, never into it",
  modelDirOf: (words) => {
    const serve = words.indexOf("serve");
    const next = serve < 0 ? undefined : words[serve + 1];
    if (next !== undefined && !next.startsWith("-")) return next;
    return flagValueOf(words, ["--model"]);
  },
  runsIn: (words) =>
    words.some(
      (w) =>
        w === "vllm.entrypoints.cli.main" ||
        w === "vllm.entrypoints.openai.api_server" ||
        /(^|\/)vllm$/.test(w),
    ),
};
