import { sh } from "../../host/shell-quote.ts";
import { curlStatus } from "../engine.ts";
import type {
  EngineBuildInput,
  EngineInPlace,
  EngineMemory,
  EngineSetup,
  EngineSleep,
  RecipeSetting,
  Spelling,
} from "../engine-setup.ts";
import { fetchSource, flagValueOf } from "../source-checkout.ts";

/*
 * SGLang's plan half (0.5.x): its flag spellings, its memory model,
 * its build from a source checkout and the unit's entry point.
 */

const SPELLINGS: Record<string, readonly Spelling[]> = {
  "model-path": [{ flag: "--model-path" }, { flag: "--model" }],
  "tp-size": [{ flag: "--tp-size" }, { flag: "--tensor-parallel-size" }, { flag: "--tp" }],
  "moe-runner-backend": [
    { flag: "--moe-runner-backend" },
    { flag: "--enable-flashinfer-cutlass-moe", impliesValue: "flashinfer_cutlass" },
    { flag: "--enable-flashinfer-trtllm-moe", impliesValue: "flashinfer_trtllm" },
    { flag: "--enable-flashinfer-cutedsl-moe", impliesValue: "flashinfer_cutedsl" },
    { flag: "--enable-triton-kernel-moe", impliesValue: "triton_kernel" },
  ],
  "fp4-gemm-backend": [{ flag: "--fp4-gemm-backend" }, { flag: "--fp4-gemm-runner-backend" }],
  "fp8-gemm-backend": [{ flag: "--fp8-gemm-backend" }, { flag: "--fp8-gemm-runner-backend" }],
  "dp-size": [{ flag: "--dp-size" }, { flag: "--data-parallel-size" }, { flag: "--dp" }],
  "context-length": [{ flag: "--context-length" }],
};

/** SGLang's default `--mem-fraction-static`: 0.88 above 100 GiB, 0.85 above 40 GiB, else 0.80. */
export function staticFraction(gpuMemoryBytes: number): number {
  const gib = gpuMemoryBytes / 2 ** 30;
  if (gib > 100) return 0.88;
  if (gib > 40) return 0.85;
  return 0.8;
}

/**
 * The --mem-fraction-static for a unit that starts on GPUs another unit holds, and the KV cache per GPU
 * it then gets. SGLang applies the fraction to the memory free when it starts, not to the GPU's total
 * (model_runner.py: init_torch_distributed measures min_per_gpu_memory, free before the weights load,
 * and init_memory_pool passes it to profile_max_num_token: KV = free after the weights − that × (1 −
 * mem_fraction_static)). At its default fraction a unit beside another would take that share of what the
 * other leaves and keep only the rest free for both units' activations; this fraction keeps `reserve` (what
 * a unit alone keeps free) free on the GPU. Rounded down, so the reserve is at least that.
 */
export function fractionBeside(
  freeAtStartBytes: number,
  reserveBytes: number,
  weightsPerGpuBytes: number,
): { fraction: number; kvPerGpuBytes: number } {
  const fraction = Math.floor((1 - reserveBytes / freeAtStartBytes) * 100) / 100;
  return { fraction, kvPerGpuBytes: freeAtStartBytes * fraction - weightsPerGpuBytes };
}

/**
 * SGLang's memory (per GPU): static = fraction × memory holds the weights and the KV cache; the rest
 * holds activations, CUDA graphs and NCCL buffers.
 */
export const sglangMemory: EngineMemory = {
  setting: "mem-fraction-static",
  engine: "SGLang",
  defaultFraction: staticFraction,
  reserveBytes: (fraction, gpu) => (1 - fraction) * gpu,
  kvAlone: (fraction, gpu, weights) => fraction * gpu - weights,
  beside: (free, _gpu, reserve, weights) => fractionBeside(free, reserve, weights),
  appliesTo: "SGLang applies it to the memory free at its start",
  needsFullContext: false,
};

/**
 * The detached SGLang build, in a directory of its own: the engine source the serving unit runs, and the
 * venv's installed packages, are never touched (no checkout in place, no `git clean`, no `pip install`).
 * It fetches the ref into `<buildDir>.partial`, checks that it is the planned commit (an annotated tag
 * peeled to the commit it tags), applies the configured patches, moves it to `<buildDir>` in one rename,
 * then runs an import check and the engine's own `--help` (which the plan's flags are checked against)
 * with `PYTHONPATH=<buildDir>/python`, as the new unit will run it. A rerun after a crash finds the
 * finished directory and skips to the checks.
 */
function buildScript(input: EngineBuildInput) {
  const out = (name: string) => `${input.dir}/${name}`;
  const build = input.buildDir.replace(/\/+$/, "");
  const partial = `${build}.partial`;
  const python = `${input.venv}/bin/python`;
  const pythonPath = `${build}/python`;
  return sh`if [ ! -f ${`${build}/.modelswap-built`} ]; then
${fetchSource(input, partial)}
echo ${input.commit} > ${`${partial}/.modelswap-built`}
rm -rf ${build}
mv ${partial} ${build}
fi
git -C ${build} rev-parse HEAD > ${out("commit")}
echo ${build} > ${out("build-dir")}
PYTHONPATH=${pythonPath} ${python} -c 'import sglang; print(sglang.__version__)' > ${out("version")}
PYTHONPATH=${pythonPath} ${python} -m sglang.launch_server --help > ${out("help.txt")}
echo "modelswap: built $(cat ${out("commit")}) (sglang $(cat ${out("version")})) in "${build}`;
}

/**
 * SGLang's memory saver as a way to park a model (../shared/DESIGN.md §10): a server started with
 * `--enable-memory-saver --enable-weights-cpu-backup` answers `POST /release_memory_occupation` by copying
 * its weights to pinned host RAM and freeing the GPU memory of every tagged region (weights, KV cache, CUDA
 * graphs: srt/constants.py GPU_MEMORY_ALL_TYPES), and `POST /resume_memory_occupation` by putting them back
 * (srt/entrypoints/http_server.py: 200 with `{"success": true}`, 400 or 500 with the reason otherwise).
 * Without the CPU backup the resumed weights are not the model's (the RL trainers that release this way
 * push new weights after each resume). The scheduler refuses a release unless it is fully idle
 * (scheduler_update_weights_mixin.py: "release_memory_occupation should be called only when server is
 * idle."): the switch drains the unit first, and the command below waits, for as long as it may, until
 * requests that reached the port directly have finished. SGLang serves these routes without a dev mode,
 * so the front door must not forward them (docs/front-door.md).
 */
const MEMORY_SAVER = "enable-memory-saver";
const CPU_BACKUP = "enable-weights-cpu-backup";
const sglangSleep: EngineSleep = {
  name: "memory saver",
  settings: [
    {
      setting: MEMORY_SAVER,
      value: undefined,
      reason:
        "swaps.sleepMode: a later swap parks this model (POST /release_memory_occupation frees its GPUs) instead of stopping it, and resumes it in seconds if the new one fails",
    },
    {
      setting: CPU_BACKUP,
      value: undefined,
      reason:
        "swaps.sleepMode: the release keeps a copy of the weights in host RAM, which the resume puts back (without it the resumed weights are not the model's)",
    },
  ],
  env: [],
  parkable: (text) => {
    const words = text.replace(/\\\n/g, " ");
    return [MEMORY_SAVER, CPU_BACKUP].every((flag) => new RegExp(`(^|\\s)--${flag}(\\s|$)`, "m").test(words));
  },
  // idle first: a release the scheduler asserts against does not answer an error, it takes the server down
  // (run_scheduler_process: "Scheduler hit an exception", SIGQUIT to the parent). /get_load lists each
  // data-parallel rank's num_reqs (test_srt_endpoint.py): every one 0, or no release.
  sleepCommand: (port, timeout) => {
    const base = `http://127.0.0.1:${port}`;
    // the switch drained it: requests that reached its port directly get half a minute to finish; the
    // release gets what is left of the command's limit (the idle wait and a margin come off it)
    const idleSeconds = Math.min(timeout, 30);
    // milliseconds (GNU date's %3N): whole seconds would end the wait at the next tick of the clock, as
    // little as no wait at all
    return sh`end=$(($(date +%s%3N) + ${idleSeconds * 1000}))
state=busy
while :; do
load=$(curl -sS --max-time 5 ${`${base}/get_load`}) || load=''
case "$load" in *'"num_reqs"'*) ;; *) state='no load from /get_load, so it could not be known idle'; break;; esac
if ! printf '%s' "$load" | grep -Eq '"num_reqs": ?[1-9]'; then state=idle; break; fi
if [ "$(date +%s%3N)" -ge "$end" ]; then state=${`requests still running after ${idleSeconds} s`}; break; fi
sleep 0.5
done
if [ "$state" = idle ]; then ${curlStatus(`${base}/release_memory_occupation`, Math.max(30, timeout - idleSeconds - 10), "{}")}; else echo "$state"; fi`;
  },
  wakeCommand: (port, timeout) =>
    curlStatus(`http://127.0.0.1:${port}/resume_memory_occupation`, timeout, "{}"),
  // torch_memory_saver pauses only the tagged regions: the CUDA context and NCCL's buffers stay. No
  // report gives a figure for SGLang; a CUDA context and tp NCCL buffers come to about 1 GiB. An estimate
  // for the plan: the switch measures what the parked unit holds (nvidia-smi) before the new one starts.
  keptPerGpuBytes: 2 ** 30,
  keptSource:
    "its CUDA context and NCCL buffers, an estimate: torch_memory_saver frees only the regions SGLang tags",
};

/**
 * SGLang's in-place update (POST /update_weights_from_disk: http_server.py, tokenizer_manager.py and
 * model_runner.py): the tokenizer manager's writer lock lets the requests in flight finish and holds new
 * ones until the weights are in; the model runner reads the new directory and answers 200 `{"success":
 * true, "message": "Succeeded to update model weights.", …}`, or rolls back to the weights it had and
 * answers 400 with "Failed to update weights: …". After a success the engine serves the new path, under
 * that path as its model name. Served without a dev mode: the front door must not forward it.
 */
const sglangInPlace: EngineInPlace = {
  name: "update_weights_from_disk",
  updateCommand: (port, modelDir, timeout) =>
    sh`curl -sS --max-time ${timeout} -H ${"Content-Type: application/json"} --data-binary ${JSON.stringify({ model_path: modelDir, abort_all_requests: false })} -w ${"\n%{http_code}\n"} ${`http://127.0.0.1:${port}/update_weights_from_disk`}`,
};

/**
 * Where SGLang's compile caches go: the cache roots ModelExpress moves between SGLang nodes
 * (ai-dynamo/modelexpress: TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR, TVM_FFI_CACHE_DIR,
 * SGLANG_DG_CACHE_DIR, TILELANG_CACHE_DIR, CUTE_DSL_CACHE_DIR, FLASHINFER_WORKSPACE_BASE); SGLang's own
 * default for DeepGEMM is ~/.cache/deep_gemm (srt/environ.py SGLANG_DG_CACHE_DIR).
 */
const SGLANG_CACHES = [
  { name: "TRITON_CACHE_DIR", dir: "triton" },
  { name: "TORCHINDUCTOR_CACHE_DIR", dir: "inductor" },
  { name: "FLASHINFER_WORKSPACE_BASE", dir: "flashinfer" },
  { name: "SGLANG_DG_CACHE_DIR", dir: "deep_gemm" },
  { name: "TVM_FFI_CACHE_DIR", dir: "tvm-ffi" },
  { name: "TILELANG_CACHE_DIR", dir: "tilelang" },
  { name: "CUTE_DSL_CACHE_DIR", dir: "cute-dsl" },
] as const;

export const sglangSetup: EngineSetup = {
  sleep: sglangSleep,
  inPlace: sglangInPlace,
  cacheVariables: SGLANG_CACHES,
  spellingsOf: (setting) => SPELLINGS[setting] ?? [{ flag: `--${setting}` }],
  memory: sglangMemory,
  hierarchicalCache: true,
  packageName: "sglang",
  unitPrefix: "sglang-",
  entryPoint: ["-m", "sglang.launch_server"],
  importPath: (buildDir) => `${buildDir.replace(/\/+$/, "")}/python`,
  // SGLang drains requests in flight on SIGTERM with no cap of its own: TimeoutStopSec bounds it
  stopSettings: (): RecipeSetting[] => [],
  stopBehaviour: "SGLang lets requests in flight finish on SIGTERM",
  buildScript,
  describeBuild: () =>
    "a source checkout on the venv's packages (SGLang is pure Python; its kernels come from the venv's sgl-kernel)",
  modelDirOf: (words) => flagValueOf(words, ["--model-path", "--model"]),
  runsIn: (words) => words.some((w) => w === "sglang.launch_server" || w.endsWith("/sglang.launch_server")),
};
